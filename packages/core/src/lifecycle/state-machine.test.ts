import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxState } from '@ramify/contracts';
import {
  allStates,
  assertAgentReachable,
  assertTimeoutSettable,
  assertTransition,
  canTransition,
  checkpointSourceFor,
  defaultListedStates,
  isTerminal,
} from './state-machine.js';

describe('state machine (one transition table)', () => {
  test('the documented happy path is legal', () => {
    const path: SandboxState[] = ['creating', 'running', 'pausing', 'paused', 'resuming', 'running', 'killing', 'killed'];
    for (let i = 1; i < path.length; i++) assert.ok(canTransition(path[i - 1], path[i]), `${path[i - 1]} → ${path[i]}`);
  });

  test('every state but killed can go to killing and to error; killed goes nowhere', () => {
    for (const s of allStates()) {
      if (s === 'killed') {
        assert.ok(isTerminal(s));
        for (const t of allStates()) assert.equal(canTransition(s, t), false);
        continue;
      }
      if (s !== 'killing') assert.ok(canTransition(s, 'killing'), `${s} → killing`);
      if (s !== 'error') assert.ok(canTransition(s, 'error'), `${s} → error`);
    }
  });

  test('roll-backs are explicit edges: pausing → running, resuming → paused', () => {
    assert.ok(canTransition('pausing', 'running'));
    assert.ok(canTransition('resuming', 'paused'));
  });

  test('illegal transitions throw INVALID_STATE (409) naming the current state', () => {
    for (const [from, to] of [
      ['paused', 'pausing'],
      ['running', 'resuming'],
      ['creating', 'paused'],
      ['killed', 'running'],
      ['error', 'running'],
    ] as Array<[SandboxState, SandboxState]>) {
      assert.throws(
        () => assertTransition('sbx_1', from, to),
        (err: Error & { code?: string; status?: number }) => err.code === 'INVALID_STATE' && err.status === 409 && err.message.includes(`is ${from}`),
      );
    }
    assert.throws(() => assertTransition('sbx_1', 'paused', 'pausing'), /resume it first/);
  });

  test('agent calls: running ok, paused INVALID_STATE saying resume, killed SANDBOX_NOT_FOUND', () => {
    assert.doesNotThrow(() => assertAgentReachable('sbx_1', 'running'));
    assert.throws(() => assertAgentReachable('sbx_1', 'paused'), (e: Error & { code?: string }) => e.code === 'INVALID_STATE' && /resume/.test(e.message));
    assert.throws(() => assertAgentReachable('sbx_1', 'killed'), { code: 'SANDBOX_NOT_FOUND' });
    assert.throws(() => assertAgentReachable('sbx_1', 'pausing'), { code: 'INVALID_STATE' });
    assert.throws(() => assertAgentReachable('sbx_1', 'error', 'the sandbox ran out of memory'), (e: Error & { code?: string }) => e.code === 'SANDBOX_FAILED' && /ran out of memory/.test(e.message));
  });

  test('fork/snapshot source: running is checkpointed first, paused uses its image, others are refused', () => {
    assert.equal(checkpointSourceFor('s', 'running'), 'checkpoint-first');
    assert.equal(checkpointSourceFor('s', 'paused'), 'pause-image');
    assert.throws(() => checkpointSourceFor('s', 'creating'), { code: 'INVALID_STATE' });
    assert.throws(() => checkpointSourceFor('s', 'killed'), { code: 'INVALID_STATE' });
  });

  test('timeouts can be set while running or paused only', () => {
    assert.doesNotThrow(() => assertTimeoutSettable('s', 'running'));
    assert.doesNotThrow(() => assertTimeoutSettable('s', 'paused'));
    assert.throws(() => assertTimeoutSettable('s', 'resuming'), { code: 'INVALID_STATE' });
    assert.throws(() => assertTimeoutSettable('s', 'killed'), { code: 'SANDBOX_NOT_FOUND' });
  });

  test('list shows every state but killed by default', () => {
    assert.deepEqual(defaultListedStates().sort(), allStates().filter((s) => s !== 'killed').sort());
  });
});
