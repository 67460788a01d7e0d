/** One-line texts of the SDK's objects, for tool results a model reads. */
import type { SandboxInfo, SnapshotInfo } from '@ramify/sdk';

/** `sbx_x: running, gvisor, 1 CPU, 512 MB, template tpl_y, until 2025-...; metadata {...}`. */
export function sandboxLine(s: SandboxInfo): string {
  const until = s.endAt ? `until ${s.endAt} (then ${s.onTimeout})` : 'clock stopped';
  const from = s.parentId ? `, forked from ${s.parentId}` : '';
  const meta = Object.keys(s.metadata).length > 0 ? `; metadata ${JSON.stringify(s.metadata)}` : '';
  const error = s.error ? `; error: ${s.error}` : '';
  return `${s.id}: ${s.state}, ${s.runtime}, ${s.cpuCount} CPU, ${s.memoryMB} MB, template ${s.templateId}${from}, ${until}${meta}${error}`;
}

/** `snap_x (named 'n', pause of sbx_y, 12.3 MB, 2025-...)`. */
export function snapshotLine(s: SnapshotInfo): string {
  const name = s.name ? `'${s.name}', ` : '';
  const of = s.sandboxId ? ` of ${s.sandboxId}` : '';
  return `${s.id}: ${name}${s.kind}${of}, ${s.runtime}, ${(s.sizeBytes / 1e6).toFixed(1)} MB, ${s.createdAt}`;
}
