/**
 * Protocol tests: template calls against the in-test contract fixture. They check that a template's
 * `envs` (its sandboxes' default environment) come back from `buildTemplate` and `listTemplates`; they
 * do not cover a build or a runtime.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { buildTemplate, listTemplates } from './index.js';

let server: ContractServer;
const conn = () => ({ apiUrl: server.url, apiKey: server.apiKey });

before(async () => { server = await startContractServer(); });
after(async () => { await server.close(); });

describe('protocol: template envs', () => {
  test('buildTemplate resolves with the flattened envs, and listTemplates shows them', async () => {
    const parent = await buildTemplate({ name: 'data', envs: { DATA_DIR: '/srv/data', MODE: 'parent' } }, conn());
    assert.deepEqual(parent.envs, { DATA_DIR: '/srv/data', MODE: 'parent' });
    const child = await buildTemplate({ name: 'data-child', from: 'data', envs: { MODE: 'child' } }, conn());
    assert.deepEqual(child.envs, { DATA_DIR: '/srv/data', MODE: 'child' });
    const listed = new Map((await listTemplates(conn())).map((t) => [t.name, t.envs]));
    assert.deepEqual(listed.get('base'), {});
    assert.deepEqual(listed.get('data-child'), { DATA_DIR: '/srv/data', MODE: 'child' });
  });
});
