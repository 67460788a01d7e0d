/**
 * Use-cases of the ingress edge: which sandbox and port a request is for (and may it be reached), and
 * waking a paused sandbox for a request. The ingress server (in `@ramify/network`) calls these on every
 * request it cannot answer from its route cache (see ./ingress-route.ts); it checks the token itself.
 */
import { RamifyError, type PortAccess } from '@ramify/contracts';
import type { Core } from '../context.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { withCause } from '../observe/call-context.js';
import { isTerminal } from '../lifecycle/state-machine.js';
import type { SandboxRecord } from '../ports/store.js';
import { sandboxAccessToken } from './access-token.js';
import { exposedAccess, sandboxNotFound } from './ingress-route.js';
import { effectiveAutoResume } from './ports.js';

/** What the ingress needs to serve one request. */
export interface IngressTarget {
  record: SandboxRecord;
  access: PortAccess;
  /** The sandbox's access token when the port has token access (compare with {@link tokensEqual}). */
  token: string | null;
}

/**
 * The sandbox and exposed port a request names.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (404), `SANDBOX_KILLED` (410), `PORT_NOT_EXPOSED` (404).
 */
export async function ingressTarget(core: Core, sandboxId: string, port: number): Promise<IngressTarget> {
  const record = await core.store.getSandbox(sandboxId);
  if (!record) throw sandboxNotFound(sandboxId);
  const access = exposedAccess(sandboxId, record.state, record.ingress.ports, port);
  return { record, access, token: access === 'token' ? await sandboxAccessToken(core, sandboxId) : null };
}

/** Resumes in flight, per core: concurrent requests to one paused sandbox share one. */
const waking = new WeakMap<Core, Map<string, Promise<SandboxRecord>>>();

/**
 * Resolve once `sandboxId` is running, resuming it when it is paused and its autoResume is on (one resume
 * shared by every concurrent caller; its lifetime starts afresh, as with `resume`), and waiting out a
 * transition in flight (pausing, resuming). Gives up after `boundMs` (the resume goes on).
 * @returns the running record, and whether this call waited for a wake (`woke`).
 * @throws RamifyError `SANDBOX_PAUSED` (autoResume off), `SANDBOX_WAKING` (not running within `boundMs`;
 *   details `retryAfterSeconds`), `SANDBOX_KILLED`, `SANDBOX_FAILED` (state `error`), and the resume's errors.
 */
export function wakeForIngress(core: Core, sandboxId: string, boundMs: number): Promise<{ record: SandboxRecord; woke: boolean }> {
  return wakeFor(core, sandboxId, boundMs, 'ingress');
}

/**
 * As {@link wakeForIngress}, for an SSH connection that authenticated for `sandboxId`: a paused sandbox is
 * resumed whatever its autoResume (the caller holds a key or token for it, as an API caller resuming it
 * does), sharing a resume already in flight; not counted as an ingress wake-up.
 * @throws RamifyError `SANDBOX_WAKING`, `SANDBOX_KILLED`, `SANDBOX_FAILED`, and the resume's errors.
 */
export function wakeForSsh(core: Core, sandboxId: string, boundMs: number): Promise<{ record: SandboxRecord; woke: boolean }> {
  return wakeFor(core, sandboxId, boundMs, 'ssh');
}

/** Which edge wakes a sandbox: the ingress (autoResume decides, wakes are counted) or SSH (always). */
type WakingEdge = 'ingress' | 'ssh';

async function wakeFor(core: Core, sandboxId: string, boundMs: number, edge: WakingEdge): Promise<{ record: SandboxRecord; woke: boolean }> {
  const first = await core.store.getSandbox(sandboxId);
  if (first?.state === 'running') return { record: first, woke: false };
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new RamifyError('SANDBOX_WAKING', `sandbox '${sandboxId}' is waking up and did not answer within ${boundMs} ms; retry shortly`, { id: sandboxId, retryAfterSeconds: 2 }));
    }, boundMs);
  });
  try {
    return { record: await Promise.race([untilRunning(core, sandboxId, edge), bound]), woke: true };
  } finally {
    clearTimeout(timer);
  }
}

async function untilRunning(core: Core, sandboxId: string, edge: WakingEdge): Promise<SandboxRecord> {
  for (;;) {
    const record = await core.store.getSandbox(sandboxId);
    if (!record || isTerminal(record.state) || record.state === 'killing') throw new RamifyError('SANDBOX_KILLED', `sandbox '${sandboxId}' was killed`, { id: sandboxId });
    if (record.state === 'running') return record;
    if (record.state === 'error') throw new RamifyError('SANDBOX_FAILED', `sandbox '${sandboxId}' failed: ${record.error ?? 'no reason recorded'}`, { id: sandboxId, reason: record.error });
    if (record.state === 'paused') {
      if (edge === 'ingress' && !effectiveAutoResume(record.ingress)) {
        throw new RamifyError('SANDBOX_PAUSED', `sandbox '${sandboxId}' is paused and its autoResume is off; resume it (\`ramify sandbox resume ${sandboxId}\`)`, { id: sandboxId });
      }
      return sharedResume(core, sandboxId, edge);
    }
    // creating, pausing, resuming: the operation holds the sandbox's lock; look again once it is done.
    await core.locks.run(sandboxId, async () => undefined);
  }
}

function sharedResume(core: Core, sandboxId: string, edge: WakingEdge): Promise<SandboxRecord> {
  let inFlight = waking.get(core);
  if (!inFlight) waking.set(core, (inFlight = new Map()));
  const existing = inFlight.get(sandboxId);
  if (existing) return existing;
  const resume = withCause('wake', () => resumeSandbox(core, sandboxId)).finally(() => inFlight.delete(sandboxId));
  inFlight.set(sandboxId, resume);
  if (edge === 'ssh') {
    core.logger.info('ssh: waking a paused sandbox for a connection', { sandboxId });
    return resume;
  }
  core.logger.info('ingress: waking a paused sandbox for a request', { sandboxId });
  core.store.recordIngressWake(sandboxId, core.clock.now()).catch((err: unknown) => core.logger.warn('ingress: counting a wake failed', { sandboxId, error: err instanceof Error ? err.message : String(err) }));
  return resume;
}
