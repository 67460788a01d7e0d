/**
 * Protocol tests of how `ramify sandbox list` pages (one bounded request, `--limit`, `--next-token`), of
 * the TEMPLATE of a sandbox whose template was deleted, of `ramify snapshot list`'s PARENT column, of
 * the snapshot and template help texts and of `ramify audit`'s ids and `--before` paging: the built CLI
 * runs as a child process against the in-test contract fixture (`@ramify/sdk/testing`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildTemplate, Sandbox } from '@ramify/sdk';
import { useCliFixture } from './test-support/cli-fixture.js';

const cli = useCliFixture('listing');
const ramify = cli.ramify;

/** Create `n` sandboxes labelled `group=<group>` straight through the SDK; their ids, oldest first. */
async function createMany(n: number, group: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) ids.push((await Sandbox.create({ apiUrl: cli.server.url, apiKey: cli.server.apiKey, metadata: { group } })).sandboxId);
  return ids;
}

/** Sandbox ids in the rows of a `sandbox list` table. */
const rowIds = (table: string): string[] => table.split('\n').slice(1).filter(Boolean).map((l) => l.split(/\s+/)[0]);
const TOKEN = /--next-token (\S+)/;

describe('protocol: ramify sandbox list paging and templates, snapshot list parents, help texts', () => {
  test('sandbox list shows at most 100 by default and says how to see the rest', async () => {
    const ids = await createMany(101, 'many');
    const r = await ramify(['sandbox', 'list', '-m', 'group=many']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(rowIds(r.stdout), ids.slice(0, 100));
    assert.match(r.stderr, /more sandboxes match: next page with --next-token \S+/);
    const json = await ramify(['sandbox', 'list', '-m', 'group=many', '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as unknown[]).length, 100);
    const jsonToken = TOKEN.exec(json.stderr)?.[1];
    assert.ok(jsonToken, `--json names the next page's token on stderr: ${json.stderr}`);
    const rest = await ramify(['sandbox', 'list', '-m', 'group=many', '--json', '--next-token', jsonToken]);
    assert.deepEqual((JSON.parse(rest.stdout) as { id: string }[]).map((i) => i.id), ids.slice(100));
    assert.equal(rest.stderr, '');
    const all = await ramify(['sandbox', 'list', '-m', 'group=many', '--limit', '1000']);
    assert.deepEqual(rowIds(all.stdout), ids);
    assert.equal(all.stderr, '');
  });

  test('--limit pages with --next-token; --limit is 1-1000', async () => {
    const ids = await createMany(5, 'paged');
    const first = await ramify(['sandbox', 'list', '-m', 'group=paged', '--limit', '2']);
    assert.deepEqual(rowIds(first.stdout), ids.slice(0, 2));
    const token1 = TOKEN.exec(first.stderr)?.[1] ?? '';
    const second = await ramify(['sandbox', 'list', '-m', 'group=paged', '--limit', '2', '--next-token', token1]);
    assert.deepEqual(rowIds(second.stdout), ids.slice(2, 4));
    const token2 = TOKEN.exec(second.stderr)?.[1] ?? '';
    const last = await ramify(['sandbox', 'list', '-m', 'group=paged', '--limit', '2', '--next-token', token2]);
    assert.deepEqual(rowIds(last.stdout), ids.slice(4));
    assert.equal(last.stderr, '');
    for (const bad of ['0', '1001']) {
      const r = await ramify(['sandbox', 'list', '--limit', bad]);
      assert.equal(r.code, 2, bad);
      assert.match(r.stderr, /expected a whole number from 1 to 1000/);
    }
    assert.match((await ramify(['sandbox', 'list', '--help'])).stdout, /--next-token/);
  });

  test('snapshot list and get name the template and mark a parent that was deleted; --json keeps the plain ids', async () => {
    const source = (await ramify(['sandbox', 'create'])).stdout.trim();
    const parent = (await ramify(['sandbox', 'snapshot', source, '--name', 'parent-snap'])).stdout.trim();
    const child = (await ramify(['sandbox', 'create', '--snapshot', 'parent-snap'])).stdout.trim();
    const snap = (await ramify(['sandbox', 'snapshot', child, '--name', 'child-snap'])).stdout.trim();
    const row = (out: string): string => out.split('\n').find((l) => l.startsWith(snap)) ?? '';
    const listed = (await ramify(['snapshot', 'list'])).stdout;
    assert.match(listed.split('\n')[0] ?? '', /^ID\s+NAME\s+KIND\s+RUNTIME\s+TEMPLATE\s+SANDBOX\s+PARENT\s+EGRESS\s+SIZE\s+CREATED$/);
    assert.match(row(listed), new RegExp(`^${snap}\\s+child-snap\\s+named\\s+gvisor\\s+base\\s+${child}\\s+${parent}\\s+open\\s+4\\.0 KiB`), 'TEMPLATE is the template\'s name');
    assert.match((await ramify(['snapshot', 'get', 'child-snap'])).stdout, new RegExp(`^parent:\\s+${parent}$`, 'm'));
    assert.equal((await ramify(['snapshot', 'rm', parent])).code, 0);
    const after = await ramify(['snapshot', 'list']);
    assert.match(row(after.stdout), new RegExp(`\\s${parent} \\(deleted\\)\\s+open\\s+4\\.0 KiB`));
    assert.match((await ramify(['snapshot', 'get', 'child-snap'])).stdout, new RegExp(`^parent:\\s+${parent} \\(deleted\\)$`, 'm'), 'get marks it as list does');
    assert.equal(JSON.parse((await ramify(['snapshot', 'get', 'child-snap', '--json'])).stdout).parentSnapshotId, parent);
    const json = JSON.parse((await ramify(['snapshot', 'list', '--json'])).stdout) as { id: string; parentSnapshotId: string | null; templateId: string }[];
    assert.equal(json.find((s) => s.id === snap)?.parentSnapshotId, parent);
    assert.equal(json.find((s) => s.id === snap)?.templateId, 'tpl_base');
  });

  test('sandbox list and get mark a template that was deleted; --json keeps the plain templateId', async () => {
    const conn = { apiUrl: cli.server.url, apiKey: cli.server.apiKey };
    const doomed = await buildTemplate({ name: 'doomed' }, conn);
    const id = (await Sandbox.create({ ...conn, template: 'doomed', metadata: { group: 'orphans' } })).sandboxId;
    const kept = (await Sandbox.create({ ...conn, metadata: { group: 'orphans' } })).sandboxId;
    // The fixture has no template delete route: drop the template as the daemon's delete would.
    cli.server.state.templates.delete('doomed');
    const table = await ramify(['sandbox', 'list', '-m', 'group=orphans']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`^${id}\\s+running\\s+gvisor\\s+${doomed.id} \\(deleted\\)\\s`, 'm'));
    assert.match(table.stdout, new RegExp(`^${kept}\\s+running\\s+gvisor\\s+base\\s`, 'm'));
    assert.match((await ramify(['sandbox', 'get', id])).stdout, new RegExp(`^template:\\s+${doomed.id} \\(deleted\\)$`, 'm'));
    const json = JSON.parse((await ramify(['sandbox', 'get', id, '--json'])).stdout) as { templateId: string };
    assert.equal(json.templateId, doomed.id);
  });

  test('audit shows the per-team ids, names the --before of the next page when a page is full, and pages with it', async () => {
    const ids = (table: string): string[] => table.split('\n').slice(1).filter(Boolean).map((l) => l.split(/\s+/)[0] ?? '');
    const first = await ramify(['audit', '--limit', '2']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^ID\s+AT\s+KEY/);
    assert.deepEqual(ids(first.stdout), ['5', '4']);
    assert.match(first.stderr, /next page with --before 4/);
    const rest = await ramify(['audit', '--limit', '3', '--before', '4', '--json']);
    assert.deepEqual((JSON.parse(rest.stdout) as { entries: { id: number }[] }).entries.map((e) => e.id), [3, 2, 1]);
    assert.equal(rest.stderr, '', 'id 1 is the first: no next page');
    const anonymous = await ramify(['audit', '--anonymous']);
    assert.deepEqual(ids(anonymous.stdout), ['2', '1']);
    const seen = cli.server.requests.filter((r) => r.path === '/v1/audit').map((r) => r.query);
    assert.deepEqual(seen.slice(-3), [{ limit: '2' }, { limit: '3', before: '4' }, { limit: '100', anonymous: 'true' }]);
    for (const bad of ['0', 'x']) assert.equal((await ramify(['audit', '--before', bad])).code, 2, bad);
  });

  test('help: snapshot --name is marked required, snapshot rm takes names, template list explains SIZE', async () => {
    const snap = await ramify(['sandbox', 'snapshot', '--help']);
    assert.match(snap.stdout, /^Usage: ramify sandbox snapshot --name <name> /m);
    assert.match(snap.stdout, /--name <name>\s+snapshot name \(required\)/);
    const missing = await ramify(['sandbox', 'snapshot', 'sbx_x']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /required option '--name <name>' not specified/);
    const rm = await ramify(['snapshot', 'rm', '--help']);
    assert.match(rm.stdout, /<snapshots\.\.\.>/);
    assert.match(rm.stdout, /by id or name/);
    assert.match((await ramify(['template', 'list', '--help'])).stdout, /SIZE \(sizeBytes\) is the template's root filesystem plus its largest runtime image/);
  });
});
