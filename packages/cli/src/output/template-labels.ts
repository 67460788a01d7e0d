/** How human output names a template from its id (sandbox and snapshot lists). */
import { listTemplates, type TemplateInfo } from '@ramify/sdk';
import type { CliContext } from '../context.js';

/**
 * Template id → the label a table shows for it; `image`: the snapshot's id when the row is a template
 * image (KIND template), which is named by the template listing it.
 */
export type TemplateLabel = (templateId: string, image?: string) => string;

/**
 * Labels from `templates` (see {@link templateLabels}): the template's name; for a template image, the name
 * of the template that lists it (also when the image's row names an older id of it), else
 * `older build of <name>` (an image a rebuild replaced, kept while a sandbox made from it lives);
 * `tpl_… (deleted)` when the template is no longer listed (it was deleted after the sandbox or snapshot was made).
 */
export function labelsOf(templates: readonly Pick<TemplateInfo, 'id' | 'name' | 'images'>[]): TemplateLabel {
  const byId = new Map(templates.map((t) => [t.id, t]));
  const byImage = new Map(templates.flatMap((t) => t.images.map((i) => [i.snapshotId, t] as const)));
  return (id, image) => {
    const template = byId.get(id);
    if (image !== undefined) {
      if (template?.images.some((i) => i.snapshotId === image)) return template.name;
      const lister = byImage.get(image);
      if (lister) return lister.name;
      if (template) return `older build of ${template.name}`;
    }
    return template?.name ?? `${id} (deleted)`;
  };
}

/** {@link labelsOf} the templates the key sees; the bare id when they cannot be listed. One `GET /v1/templates`. */
export async function templateLabels(ctx: CliContext): Promise<TemplateLabel> {
  try {
    return labelsOf(await listTemplates(ctx.connection));
  } catch {
    return (id) => id;
  }
}

/** `--json` needs no labels: it prints the plain `templateId`. */
export const plainIds: TemplateLabel = (id) => id;
