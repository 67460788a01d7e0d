/**
 * Unit tests of the CLI's template spec loader with real files in a temp dir: it reads a spec as the
 * template builder validates it (octal `mode`, every problem listed at once) and inlines `source` files.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_JSON_BODY_BYTES } from '@ramify/contracts';
import { loadTemplateSpec } from './template-spec.js';

let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ramify-cli-spec-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function spec(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('unit: loadTemplateSpec', () => {
  test('mode: 0755 in YAML is octal; 0o755 and decimal 493 mean the same; 0999 is refused', async () => {
    const loaded = await loadTemplateSpec(await spec('modes.yaml', [
      'name: modes',
      'files:',
      '  - { path: /a, content: a, mode: 0755 }',
      '  - { path: /b, content: b, mode: 0o755 }',
      '  - { path: /c, content: c, mode: 493 }',
    ].join('\n')));
    assert.deepEqual(loaded.files?.map((f) => f.mode), [0o755, 0o755, 0o755]);
    await assert.rejects(loadTemplateSpec(await spec('0999.yaml', 'name: m\nfiles:\n  - { path: /a, content: a }\n  - { path: /b, content: b }\n  - { path: /c, content: c, mode: 0999 }\n')), {
      code: 'VALIDATION_FAILED',
      message: `${join(dir, '0999.yaml')}: files[2].mode: 0999 is not an octal mode (a leading 0 means octal: digits 0-7 only)`,
    });
  });

  test('source files: text inlined as is, binary as base64; mode from the host file unless given', async () => {
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\necho é\n');
    await chmod(join(dir, 'run.sh'), 0o750);
    const binary = Buffer.from([0, 255, 254, 1, 2, 3]);
    await writeFile(join(dir, 'blob.bin'), binary);
    await chmod(join(dir, 'blob.bin'), 0o600);
    const loaded = await loadTemplateSpec(await spec('sources.yaml', [
      'name: sources',
      'files:',
      '  - { path: /usr/local/bin/run.sh, source: run.sh }',
      '  - { path: /opt/blob.bin, source: blob.bin }',
      '  - { path: /opt/blob2.bin, source: ./blob.bin, mode: 0644 }',
    ].join('\n')));
    assert.deepEqual(loaded.files, [
      { path: '/usr/local/bin/run.sh', mode: 0o750, content: '#!/bin/sh\necho é\n' },
      { path: '/opt/blob.bin', mode: 0o600, content: binary.toString('base64'), encoding: 'base64' },
      { path: '/opt/blob2.bin', mode: 0o644, content: binary.toString('base64'), encoding: 'base64' },
    ]);
  });

  test('JSON specs; the builder\'s checks apply (both content and source, a missing source, a path twice, mode out of range: all in one error)', async () => {
    const json = await loadTemplateSpec(await spec('t.json', JSON.stringify({ name: 'json-spec', packages: ['jq'], envs: { A: '1' } })));
    assert.deepEqual(json, { name: 'json-spec', packages: ['jq'], envs: { A: '1' } });
    const bad = spec('bad.yaml', [
      'name: bad',
      'files:',
      '  - { path: /a, content: a, source: a.txt }',
      '  - { path: /b, content: b, mode: 0o17777 }',
      '  - { path: /b, content: c }',
    ].join('\n'));
    await assert.rejects(loadTemplateSpec(await bad), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'VALIDATION_FAILED');
      assert.match(err.message, /bad\.yaml: files\[0\]: give exactly one of "content" or "source"; files\[0\]\.source: a\.txt \(.*\) does not exist; files\[1\]\.mode: .*; files\[2\]\.path: \/b is already placed by files\[1\]/);
      return true;
    });
  });

  test('one run lists every problem, a missing source by its index; only missing sources: FILE_NOT_FOUND', async () => {
    const path = await spec('bad6.yaml', [
      'name: Bad Name',
      'packages: [jq, "NOT OK"]',
      'envs: { BAD-NAME: v }',
      'files:',
      '  - { path: /etc/../motd, content: x }',
      '  - { path: /m, content: m, mode: 0999 }',
      '  - { path: /missing, source: missing.sh }',
    ].join('\n'));
    await assert.rejects(loadTemplateSpec(path), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'VALIDATION_FAILED');
      assert.match(err.message, /bad6\.yaml: name: .*; packages\[1\]: .*; files\[0\]\.path: must be a normalized .*; files\[1\]\.mode: 0999 is not an octal mode .*; files\[2\]\.source: missing\.sh \(.*\) does not exist; envs\.BAD-NAME: /);
      return true;
    });
    const onlySource = await spec('only-source.yaml', 'name: fine\nfiles:\n  - { path: /a, content: a }\n  - { path: /b, source: missing.sh }\n');
    await assert.rejects(loadTemplateSpec(onlySource), {
      code: 'FILE_NOT_FOUND',
      message: `${onlySource}: files[1].source: missing.sh (${join(dir, 'missing.sh')}) does not exist`,
    });
    await assert.rejects(loadTemplateSpec(join(dir, 'absent.yaml')), { code: 'FILE_NOT_FOUND', message: `template spec ${join(dir, 'absent.yaml')} does not exist` });
  });

  test('a spec over the API request limit once inlined is refused before sending', async () => {
    await writeFile(join(dir, 'big.txt'), 'x'.repeat(MAX_JSON_BODY_BYTES));
    await assert.rejects(loadTemplateSpec(await spec('big.yaml', 'name: big\nfiles:\n  - { path: /big.txt, source: big.txt }\n')),
      (err: Error & { code?: string }) => err.code === 'PAYLOAD_TOO_LARGE' && /at most 1048576 bytes per request/.test(err.message));
  });
});
