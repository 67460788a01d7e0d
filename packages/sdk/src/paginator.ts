/** Page-by-page listing of sandboxes (`Sandbox.list()`), E2B-style: `hasNext` + `nextItems()`, or `for await`. */
import { ROUTES } from '@ramify/contracts/client';
import type { ListSandboxesResponse, SandboxInfo, SandboxState } from '@ramify/contracts';
import type { ApiClient } from './http.js';

/** Filters of `Sandbox.list()`. */
export interface SandboxListFilter {
  /** Only these states; default everything but `killed`. */
  state?: SandboxState | SandboxState[];
  /** Only sandboxes whose metadata has all these pairs. */
  metadata?: Record<string, string>;
  /** Page size (1-1000; server default applies when absent). */
  limit?: number;
  /** Start from this page token (from a previous paginator's `nextToken`). */
  nextToken?: string;
}

/** Iterates the pages of a sandbox listing. Nothing is fetched until `nextItems()` or iteration. */
export class SandboxPaginator implements AsyncIterable<SandboxInfo> {
  private token: string | null | undefined;
  private started = false;

  /** @internal Use `Sandbox.list()`. */
  constructor(private readonly api: ApiClient, private readonly filter: SandboxListFilter = {}) {
    this.token = filter.nextToken;
  }

  /** True until a page without a next token was fetched. */
  get hasNext(): boolean {
    return !this.started || (this.token !== null && this.token !== undefined);
  }

  /** Token of the next page (`null` after the last page, `undefined` before the first fetch). */
  get nextToken(): string | null | undefined {
    return this.token;
  }

  /** Fetch the next page. Throws if there is none (`hasNext` false) or on API errors. */
  async nextItems(): Promise<SandboxInfo[]> {
    if (!this.hasNext) throw new Error('no more pages (check hasNext before calling nextItems)');
    const { state, metadata, limit } = this.filter;
    const res = await this.api.at(ROUTES.listSandboxes, {}).json<ListSandboxesResponse>({
      query: {
        state: state === undefined ? undefined : Array.isArray(state) ? state.join(',') : state,
        metadata: metadata === undefined ? undefined : new URLSearchParams(metadata).toString(),
        limit,
        nextToken: this.token ?? undefined,
      },
    });
    this.started = true;
    this.token = res.nextToken;
    return res.sandboxes;
  }

  /** Every sandbox on every remaining page. */
  async *[Symbol.asyncIterator](): AsyncIterator<SandboxInfo> {
    while (this.hasNext) yield* await this.nextItems();
  }
}
