/** How human output names a template from its id (sandbox and snapshot lists). */
import { listTemplates } from '@ramify/sdk';
import type { CliContext } from '../context.js';

/** Template id → the label a table shows for it. */
export type TemplateLabel = (templateId: string) => string;

/**
 * Template id → label for human output: the template's name; `tpl_… (deleted)` when the template is no
 * longer listed (it was deleted after the sandbox or snapshot was made); the bare id when the templates
 * cannot be listed. One `GET /v1/templates`.
 */
export async function templateLabels(ctx: CliContext): Promise<TemplateLabel> {
  let names: Map<string, string>;
  try {
    names = new Map((await listTemplates(ctx.connection)).map((t) => [t.id, t.name]));
  } catch {
    return (id) => id;
  }
  return (id) => names.get(id) ?? `${id} (deleted)`;
}

/** `--json` needs no labels: it prints the plain `templateId`. */
export const plainIds: TemplateLabel = (id) => id;
