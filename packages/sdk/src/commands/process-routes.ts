/** The `/processes` routes of one sandbox, shared by {@link Commands} and {@link CommandHandle}. */
import { ROUTES } from '@ramify/contracts/client';
import type { BoundRoute } from '../http.js';
import type { ProcessInfo } from '@ramify/contracts';
import type { ApiClient } from '../http.js';
import type { StreamExit } from './stream-socket.js';
import type { RamifyError } from '../errors.js';

/** Signals the API can deliver to a process group. */
export type ProcessSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2' | 'SIGSTOP' | 'SIGCONT';

/** Encode stdin data: strings as UTF-8. */
export function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? new TextEncoder().encode(data) : data;
}

/** What {@link ProcessRoutes.handles} holds: a live process handle (see `CommandHandle.abandon`). */
export interface AbandonableHandle {
  abandon(err: RamifyError): void;
}

export class ProcessRoutes {
  /** Handles following a process of this sandbox through these routes, until their stream settles. */
  readonly handles = new Set<AbandonableHandle>();

  constructor(readonly api: ApiClient, readonly sandboxId: string) {}

  /** @internal Make every live handle stop following (`abandon`): their waits reject with `err`. */
  abandonHandles(err: RamifyError): void {
    for (const handle of [...this.handles]) handle.abandon(err);
  }


  /** A process's output stream (a WebSocket). */
  stream(pid: number): BoundRoute {
    return this.api.at(ROUTES.streamProcess, { id: this.sandboxId, pid });
  }

  async list(): Promise<ProcessInfo[]> {
    const res = await this.api.at(ROUTES.listProcesses, { id: this.sandboxId }).json<{ processes: ProcessInfo[] }>();
    return res.processes;
  }

  sendStdin(pid: number, data: string | Uint8Array): Promise<void> {
    return this.api.at(ROUTES.writeStdin, { id: this.sandboxId, pid }).empty({ body: toBytes(data) });
  }

  closeStdin(pid: number): Promise<void> {
    return this.api.at(ROUTES.closeStdin, { id: this.sandboxId, pid }).empty();
  }

  /** Resize a terminal (`PTY_SIZE_INVALID`, `NOT_A_PTY`, `PROCESS_NOT_FOUND`, `PROCESS_EXITED`). */
  resize(pid: number, size: { cols: number; rows: number }): Promise<void> {
    return this.api.at(ROUTES.resizeProcess, { id: this.sandboxId, pid }).empty({ json: { cols: size.cols, rows: size.rows } });
  }

  signal(pid: number, signal: ProcessSignal): Promise<void> {
    return this.api.at(ROUTES.signalProcess, { id: this.sandboxId, pid }).empty({ json: { signal } });
  }

  /** The sandbox's current state and, in `error`, why (e.g. to tell a paused sandbox from a dead one). */
  async sandboxState(): Promise<{ state: string; error: string | null }> {
    const info = await this.api.at(ROUTES.getSandbox, { id: this.sandboxId }).json<{ state: string; error?: string | null }>();
    return { state: info.state, error: info.error ?? null };
  }

  /** Long poll until the process exits (no request deadline). */
  wait(pid: number): Promise<StreamExit> {
    return this.api.at(ROUTES.waitProcess, { id: this.sandboxId, pid }).json<StreamExit>({ timeoutMs: 0 });
  }
}
