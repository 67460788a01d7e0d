/**
 * Every command started over the API is one `exec` telemetry operation, whichever door it came through:
 * `runCommand` (REST, foreground and background) and `startCommand` (the command stream: the SDK's
 * `commands.run`, SSH), with the FAKE runtime and agent and a recording telemetry (core logic only; the
 * daemon's /metrics and traces are covered by real-events.test.ts).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AgentExit } from '@ramify/contracts';
import type { TestWorld } from '../testing/world.js';
import { createRecordedWorld, type RecordingTelemetry } from '../testing/recording-telemetry.js';
import { createSandbox } from '../lifecycle/create.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { runCommand, signalProcess, startCommand } from './commands.js';

let w: TestWorld;
let telemetry: RecordingTelemetry;
beforeEach(async () => ({ world: w, telemetry } = await createRecordedWorld()));
afterEach(() => w.dispose());

/** `startCommand` with handlers that resolve `exited` at the exit. */
async function stream(sandboxId: string, cmd: string, background: boolean): Promise<{ pid: number; exited: Promise<AgentExit> }> {
  let onExit!: (exit: AgentExit) => void;
  const exited = new Promise<AgentExit>((resolve) => (onExit = resolve));
  const { pid } = await startCommand(w.core, sandboxId, { cmd, background }, { onExit, onDisconnect: () => undefined });
  return { pid, exited };
}

const execs = (): Array<{ mode: unknown; errorCode: string | null | undefined }> =>
  telemetry.named('exec').map((o) => ({ mode: o.attributes['ramify.command_mode'], errorCode: o.errorCode }));

describe('exec telemetry: one operation per command, whichever way it was run', () => {
  test('REST foreground and background, stream foreground and background: each ends ok at its exit', async () => {
    const { id } = await createSandbox(w.core, {});
    await runCommand(w.core, id, { cmd: 'fail 3' });
    await runCommand(w.core, id, { cmd: 'echo bg', background: true });
    await (await stream(id, 'echo streamed', false)).exited;
    const sleeper = await stream(id, 'sleep', true);
    assert.deepEqual(execs().at(-1), { mode: 'background', errorCode: undefined }, 'running: not ended yet');
    await signalProcess(w.core, id, sleeper.pid, 'SIGKILL');
    await sleeper.exited;
    assert.deepEqual(execs(), [
      { mode: 'foreground', errorCode: null },
      { mode: 'background', errorCode: null },
      { mode: 'foreground', errorCode: null },
      { mode: 'background', errorCode: null },
    ]);
    assert.ok(telemetry.named('exec').every((o) => o.attributes['ramify.sandbox_id'] === id));
  });

  test('a command that cannot start ends with its error code (a paused sandbox: INVALID_STATE), on both doors', async () => {
    const { id } = await createSandbox(w.core, {});
    await pauseSandbox(w.core, id);
    await assert.rejects(runCommand(w.core, id, { cmd: 'echo no' }), { code: 'INVALID_STATE' });
    await assert.rejects(stream(id, 'echo no', false), { code: 'INVALID_STATE' });
    assert.deepEqual(execs(), [{ mode: 'foreground', errorCode: 'INVALID_STATE' }, { mode: 'foreground', errorCode: 'INVALID_STATE' }]);
  });

  test('the channel closes before the exit (a pause): a foreground stream ends AGENT_UNREACHABLE, a background one is not counted', async () => {
    const { id } = await createSandbox(w.core, {});
    await stream(id, 'sleep', false);
    await stream(id, 'sleep', true);
    await pauseSandbox(w.core, id);
    assert.deepEqual(execs(), [{ mode: 'foreground', errorCode: 'AGENT_UNREACHABLE' }, { mode: 'background', errorCode: undefined }]);
  });
});
