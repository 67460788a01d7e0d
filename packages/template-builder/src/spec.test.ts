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
      validationError(/^my\.yaml: /, /name: must be a template name: .*, got 'Bad Name'/, /packages\[1\]: .*got 'NOT OK'/, /files\[0\]\.path/, /unknown field 'extra'/),
    );
    assert.throws(() => validateTemplateSpec({ name: 'x', envs: { 'BAD-NAME': 'v' } }, 'req'), validationError(/envs\.BAD-NAME: not an allowed key: environment variable names are \[A-Za-z_\]/));
    assert.throws(() => validateTemplateSpec({ name: 'x', packages: ['jq', 'Bad_Pkg'] }, 'req'), validationError(/packages\[1\]: must be a Debian package name: .*, got 'Bad_Pkg'/));
  });

  it('runs the extra checks even when the schema fails, so one error lists both', () => {
    assert.throws(
      () => validateTemplateSpec({ name: 'Bad', from: 'Bad', files: [{ path: '/a/./b', content: 'x', mode: -1 }, { path: 'rel', source: 's', content: 'c' }] }, 'r.json'),
      (error: unknown) => {
        assert.ok(isRamifyError(error), String(error));
        assert.deepEqual(error.details?.issues, [
          { field: 'name', message: "must be a template name: 1-64 of [a-z0-9._-], starting with a letter or digit, got 'Bad'" },
          { field: 'from', message: 'a template cannot be built from itself' },
          { field: 'files[0].mode', message: 'must be a permission mode between 0 and 0o7777, not -1' },
          { field: 'files[0].path', message: 'must be a normalized absolute file path without "." or ".." parts: /a/./b' },
          { field: 'files[1]', message: 'give exactly one of "content" or "source"' },
          { field: 'files[1].path', message: 'must be an absolute path (starting with "/"): rel' },
        ]);
        return true;
      },
    );
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

  it('requireInline reports a remaining source together with every other problem (the API path)', () => {
    assert.throws(
      () => validateTemplateSpec({ name: 'Bad Name', packages: ['NOT OK'], files: [{ path: '/a', source: 'f' }] }, 'request body', { requireInline: true }),
      validationError(/name: must be a template name: .*, got 'Bad Name'/, /packages\[0\]/, /files\[0\]\.source: must be inlined/),
    );
    assert.doesNotThrow(() => validateTemplateSpec({ name: 'ok', files: [{ path: '/a', source: 'f' }] }, 'my.yaml'));
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

  it('a missing source is FILE_NOT_FOUND naming each index when nothing else is wrong; a directory source, IS_A_DIRECTORY; a missing spec file', async () => {
    await writeFile(join(dir, 'there.txt'), 'x');
    const specPath = join(dir, 'missing-source.yaml');
    await writeFile(specPath, 'name: x\nfiles:\n  - { path: /a, source: nope.txt }\n  - { path: /b, source: there.txt }\n  - { path: /c, source: gone/also.txt }\n');
    await assert.rejects(loadTemplateSpecFile(specPath), (error: unknown) => {
      assert.ok(isRamifyError(error), String(error));
      assert.equal(error.code, 'FILE_NOT_FOUND');
      const nope = join(dir, 'nope.txt');
      const also = join(dir, 'gone/also.txt');
      assert.equal(error.message, `${specPath}: files[0].source: nope.txt (${nope}) does not exist; files[2].source: gone/also.txt (${also}) does not exist`);
      return true;
    });
    const dirSource = join(dir, 'dir-source.yaml');
    await writeFile(dirSource, `name: x\nfiles:\n  - { path: /a, source: ${dir} }\n`);
    await assert.rejects(loadTemplateSpecFile(dirSource), { code: 'IS_A_DIRECTORY', message: `${dirSource}: files[0].source: ${dir} is a directory` });
    const absent = join(dir, 'absent.yaml');
    await assert.rejects(loadTemplateSpecFile(absent), { code: 'FILE_NOT_FOUND', message: `template spec ${absent} does not exist` });
    await assert.rejects(loadTemplateSpecFile(dir), { code: 'IS_A_DIRECTORY' });
  });

  it('lists every problem at once, in spec order: schema, extra checks, octal mode and source files together', async () => {
    const specPath = join(dir, 'bad6.yaml');
    await writeFile(join(dir, 'ok.sh'), '#!/bin/sh\n');
    await writeFile(
      specPath,
      [
        'name: Bad Name',
        'packages: [jq, "NOT OK"]',
        'envs: { BAD-NAME: v }',
        'files:',
        '  - { path: /a/../b, content: x }',
        '  - { path: /ok, source: ok.sh }',
        '  - { path: /m, content: m, mode: 0999 }',
        '  - { path: /missing, source: missing.sh }',
        '  - { path: /t, contnet: typo }',
        '',
      ].join('\n'),
    );
    await assert.rejects(loadTemplateSpecFile(specPath), (error: unknown) => {
      assert.ok(isRamifyError(error), String(error));
      assert.equal(error.code, 'VALIDATION_FAILED', 'a missing source among other problems: one VALIDATION_FAILED');
      const fields = (error.details?.issues as { field: string }[]).map((issue) => issue.field);
      assert.deepEqual(fields, ['name', 'packages[1]', 'files[0].path', 'files[2].mode', 'files[3].source', 'files[4]', 'files[4]', 'envs.BAD-NAME']);
      assert.match(error.message, /files\[0\]\.path: must be a normalized/);
      assert.match(error.message, /files\[2\]\.mode: 0999 is not an octal mode/);
      assert.match(error.message, /files\[3\]\.source: missing\.sh \(.*\/missing\.sh\) does not exist/);
      assert.match(error.message, /files\[4\]: unknown field 'contnet' \(allowed: path, content, encoding, source, mode\)/);
      assert.match(error.message, /files\[4\]: give exactly one of "content" or "source"/);
      return true;
    });
  });

  it('reads a files[].mode with a leading zero as octal and refuses one whose digits are not all octal', async () => {
    const load = async (mode: string): Promise<number | undefined> => {
      const specPath = join(dir, 'mode.yaml');
      await writeFile(specPath, `name: m\nfiles:\n  - { path: /a, content: a }\n  - { path: /b, content: b, mode: ${mode} }\n`);
      return (await loadTemplateSpecFile(specPath)).files?.[1]?.mode;
    };
    assert.equal(await load('0755'), 0o755);
    assert.equal(await load('+0755'), 0o755);
    assert.equal(await load('"0640"'), 0o640);
    assert.equal(await load('0o4755'), 0o4755);
    assert.equal(await load('07777'), 0o7777);
    assert.equal(await load('0'), 0);
    assert.equal(await load('420'), 0o644, 'a decimal without a leading zero stays decimal');
    for (const bad of ['0999', '0758', '08', '"0999"']) {
      await assert.rejects(load(bad), validationError(new RegExp(`files\\[1\\]\\.mode: ${bad.replaceAll('"', '')} is not an octal mode`)), bad);
    }
    await assert.rejects(load('010000'), validationError(/files\[1\]\.mode: must be a permission mode between 0 and 0o7777, not 4096 \(0o10000\)/));
    await assert.rejects(load('-0755'), validationError(/files\[1\]\.mode: must be a permission mode between 0 and 0o7777, not -493/));
    await assert.rejects(load('0o17777'), validationError(/files\[1\]\.mode: must be a permission mode/));
    await assert.rejects(load('8191'), validationError(/files\[1\]\.mode: must be a permission mode/));
  });
});
