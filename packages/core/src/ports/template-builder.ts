/**
 * The TemplateBuilder port: turns a {@link TemplateSpec} into a root filesystem plus a booted-and-idle
 * image, and registers the result as a {@link TemplateRecord} in the store. `@ramify/template-builder`
 * implements it; the daemon serves its progress as NDJSON (`POST /v1/templates`).
 */
import type { RuntimeName, TemplateBuildEvent, TemplateSpec } from '@ramify/contracts';
import type { TemplateRecord } from './store.js';

export interface TemplateBuildOptions {
  /** Progress (`step`, `log`); the caller emits `done`/`error` itself from the outcome. */
  onEvent: (event: TemplateBuildEvent) => void;
  /** Aborts the build (the client went away). */
  signal?: AbortSignal;
  /**
   * Runtimes to build an image for (one root filesystem, one image each); default every runtime the
   * builder has. Images for other runtimes made on the same root filesystem are kept.
   */
  runtimes?: RuntimeName[];
  /**
   * The team the template is built for (default the default team, whose templates are shared): the
   * name, an earlier build of it and a `from` parent are looked up as that team sees them.
   */
  teamId?: string;
}

export interface TemplateBuilder {
  /**
   * Build (or reuse from cache when the spec hash matches) and persist the template.
   * Rejects `RamifyError` (`TEMPLATE_NOT_FOUND` for an unknown `from`, `RUNTIME_ERROR`, ...).
   */
  build(spec: TemplateSpec, options: TemplateBuildOptions): Promise<TemplateRecord>;
}
