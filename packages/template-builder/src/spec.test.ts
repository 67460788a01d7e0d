import { isRamifyError } from '@ramify/contracts';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertSpecInlined, loadTemplateSpecFile, validateTemplateSpec } from './spec.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ramify-spec-test-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Asserts a VALIDATION_FAILED whose message matches every pattern. */
function validationError(...patterns: RegExp[]): (error: unknown) => boolean {
  return (error) => {
    assert.ok(isRamifyError(error), String(error));
    assert.equal(error.code, 'VALIDATION_FAILED');
    for (const pattern of patterns) assert.match(error.message, pattern);
    return true;
  };
}

describe('template spec validation', () => {
  it('accepts a full spec', () => {
    const spec = validateTemplateSpec(
      { name: 'py', from: 'base', packages: ['jq'], files: [{ path: '/etc/motd', content: 'hi\n', mode: 0o600 }], run: ['pip install x'], envs: { A: '1' } },
      'inline',
    );
    assert.equal(spec.name, 'py');
  });

  it('names the origin and the field of each problem', () => {
    assert.throws(
      () => validateTemplateSpec({ name: 'Bad Name', packages: ['ok', 'NOT OK'], extra: 1, files: [{ path: 'relative', content: '' }] }, 'my.yaml'),
      validationError(/^my\.yaml: /, /name: template names are/, /packages\[1\]/, /files\[0\]\.path/, /Unrecognized key.*extra/),
    );
    assert.throws(() => validateTemplateSpec({ name: 'x', envs: { 'BAD-NAME': 'v' } }, 'req'), validationError(/envs/));
  });

  it('checks what the schema cannot: one of content/source, modes, duplicate and unnormalized paths, self parent', () => {
    assert.throws(() => validateTemplateSpec({ name: 'x', files: [{ path: '/a' }] }, 's.json'), validationError(/files\[0\]: give exactly one of "content" or "source"/));
    assert.throws(() => validateTemplateSpec({ name: 'x', files: [{ path: '/a', content: 'x', source: 'b' }] }, 's.json'), validationError(/files\[0\]: give exactly one/));
    assert.throws(() => validateTemplateSpec({ name: 'x', files: [{ path: '/a', content: 'x', mode: 0o17777 }] }, 's.json'), validationError(/files\[0\]\.mode/));
    assert.throws(() => validateTemplateSpec({ name: 'x', files: [{ path: '/a/../b', content: 'x' }] }, 's.json'), validationError(/files\[0\]\.path: must be a normalized/));
    assert.throws(
      () => validateTemplateSpec({ name: 'x', files: [{ path: '/a', content: '1' }, { path: '/a', content: '2' }] }, 's.json'),
      validationError(/files\[1\]\.path: \/a is already placed by files\[0\]/),
    );
    assert.throws(() => validateTemplateSpec({ name: 'x', from: 'x' }, 's.json'), validationError(/from: a template cannot be built from itself/));
    assert.throws(() => validateTemplateSpec({ name: 'x', files: [{ path: '/a', source: 'f', encoding: 'base64' }] }, 's.json'), validationError(/files\[0\]\.encoding/));
  });

  it('assertSpecInlined rejects a remaining source', () => {
    assert.throws(() => assertSpecInlined({ name: 'x', files: [{ path: '/a', source: 'f' }] }, 'request body'), validationError(/request body: files\[0\]\.source: must be inlined/));
  });
});

describe('loadTemplateSpecFile', () => {
  it('loads YAML, reads 0755 as octal, and inlines sources relative to the spec (text, binary, host mode)', async () => {
    await writeFile(join(dir, 'script.sh'), '#!/bin/sh\necho hi\n');
    await chmod(join(dir, 'script.sh'), 0o750);
    const binary = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
    await writeFile(join(dir, 'blob.bin'), binary);
    const specPath = join(dir, 'ramify.template.yaml');
    await writeFile(
      specPath,
      [
        'name: tools',
        'from: base',
        'packages: [jq]',
        'files:',
        '  - { path: /usr/local/bin/hi, source: script.sh }',
        '  - { path: /opt/blob.bin, source: ./blob.bin, mode: 0644 }',
        '  - path: /etc/motd',
        '    content: "welcome\\n"',
        '    mode: 0755',
        'run:',
        '  - echo done',
        '',
      ].join('\n'),
    );
    const spec = await loadTemplateSpecFile(specPath);
    assert.deepEqual(spec.files, [
      { path: '/usr/local/bin/hi', content: '#!/bin/sh\necho hi\n', mode: 0o750 },
      { path: '/opt/blob.bin', content: binary.toString('base64'), encoding: 'base64', mode: 0o644 },
      { path: '/etc/motd', content: 'welcome\n', mode: 0o755 },
    ]);
    assert.deepEqual(spec.run, ['echo done']);
  });

  it('loads JSON and reports syntax errors with the file name', async () => {
    const good = join(dir, 'good.json');
    await writeFile(good, JSON.stringify({ name: 'j', run: ['true'] }));
    assert.deepEqual(await loadTemplateSpecFile(good), { name: 'j', run: ['true'] });
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{"name": "j",');
    await assert.rejects(loadTemplateSpecFile(bad), validationError(/bad\.json: \(syntax\)/));
    const badYaml = join(dir, 'bad.yaml');
    await writeFile(badYaml, 'name: x\nrun: [\n');
    await assert.rejects(loadTemplateSpecFile(badYaml), validationError(/bad\.yaml: \(syntax\)/));
    const dupYaml = join(dir, 'dup.yaml');
    await writeFile(dupYaml, 'name: x\nname: y\n');
    await assert.rejects(loadTemplateSpecFile(dupYaml), validationError(/dup\.yaml: \(syntax\)/));
  });

  it('names the field of a missing source and a missing spec file', async () => {
    const specPath = join(dir, 'missing-source.yaml');
    await writeFile(specPath, 'name: x\nfiles:\n  - { path: /a, source: nope.txt }\n');
    await assert.rejects(loadTemplateSpecFile(specPath), validationError(/missing-source\.yaml: files\[0\]\.source: cannot use .*nope\.txt/));
    await assert.rejects(loadTemplateSpecFile(join(dir, 'absent.yaml')), validationError(/absent\.yaml: cannot read/));
  });
});
