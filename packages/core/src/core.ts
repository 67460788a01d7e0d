/**
 * The assembly of the core context: {@link createCore} builds a {@link Core} (context.ts) from its ports,
 * creates the in-process state every use-case shares and wires the subscriptions between its parts (a
 * lost instance on the bus goes to the lifecycle, a sandbox that runs starts its idle clock).
 * {@link closeCoreSinks} closes what it started writing in the background. Only the composition root
 * and tests import this module; use-cases import the context.
 */
import { randomBytes } from 'node:crypto';
import { notFound } from '@ramify/contracts';
import { DEFAULT_CORE_OPTIONS, runtimeFor, type Core, type CoreDeps } from './context.js';
import { BufferedEgressLog } from './egress/buffered-egress-log.js';
import { SandboxActivity } from './idle/activity.js';
import { BufferedIngressLog } from './ingress/ingress-log.js';
import { AgentSessions } from './lifecycle/agent-sessions.js';
import { watchLostAgents } from './lifecycle/instance-lost.js';
import { SandboxEvents } from './lifecycle/events.js';
import { KeyedLock } from './lifecycle/locks.js';
import { recordAgentEvent } from './lifecycle/oom.js';
import { agentReachable } from './lifecycle/state-machine.js';
import { WarmPool } from './pool/warm-pool.js';
import { LocalEventFeed, SharedEventFeed } from './events/feed.js';
import { EventHub } from './events/hub.js';
import { EventRecorder } from './events/recorder.js';
import { NO_TELEMETRY } from './ports/telemetry.js';
import { NO_WEBHOOK_SENDER } from './ports/webhook-sender.js';
import { BufferedCommandLog } from './sandbox/command-log.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { ForegroundWork } from './lifecycle/foreground.js';
import { UsageMeter } from './usage/meter.js';


/** Build the core context from its ports. */
export function createCore(deps: CoreDeps): Core {
  const options = { ...DEFAULT_CORE_OPTIONS, ...deps.options };
  const { telemetry, webhookSender, ...ports } = deps;
  const events = new SandboxEvents();
  const eventHub = new EventHub();
  const eventLog = new EventRecorder({ events, store: deps.store, logger: deps.logger, mode: options.events });
  const notifications = deps.store.eventNotifications;
  const locks = new KeyedLock(deps.hostId);
  const foreground = new ForegroundWork(locks);
  const core: Core = {
    ...ports,
    options,
    telemetry: telemetry ?? NO_TELEMETRY,
    eventHub,
    eventLog,
    eventFeed: notifications === null
      ? new LocalEventFeed(eventLog.stored, eventHub)
      : new SharedEventFeed({ store: deps.store, notifications, hub: eventHub, logger: deps.logger, pollMs: options.eventPollMs }),
    commandLog: new BufferedCommandLog({ store: deps.store, logger: deps.logger }),
    webhooks: new WebhookDispatcher({ store: deps.store, hub: eventLog.stored, holder: deps.hostId, sender: webhookSender ?? NO_WEBHOOK_SENDER, logger: deps.logger, clock: deps.clock, tunables: options.webhooks, foregroundQuietForMs: () => foreground.quietForMs() }),
    entropy: deps.entropy ?? ((n) => new Uint8Array(randomBytes(n))),
    egressLog: deps.egressLog ?? new BufferedEgressLog({ store: deps.store, logger: deps.logger, clock: deps.clock }),
    ingressLog: new BufferedIngressLog({ store: deps.store, logger: deps.logger }),
    activity: new SandboxActivity(deps.clock),
    locks,
    foreground,
    events,
    sessions: undefined as unknown as AgentSessions,
    pool: undefined as unknown as WarmPool,
    meter: undefined as unknown as UsageMeter,
  };
  core.meter = new UsageMeter(core);
  core.pool = new WarmPool(core);
  // A sandbox that starts or resumes begins its idle time then; a killed one is forgotten.
  core.events.onState((e) => {
    if (e.to === 'running') core.activity.touch(e.sandboxId);
    else if (e.to === 'killed') core.activity.forget(e.sandboxId);
  });
  core.sessions = new AgentSessions({
    logger: deps.logger,
    connectTimeoutMs: options.agentConnectTimeoutMs,
    connect: async (sandboxId, opts) => {
      // A pooled sandbox has no row yet: the pool knows its runtime.
      const runtime = (await deps.store.getSandbox(sandboxId))?.runtime ?? core.pool.runtimeOf(sandboxId);
      if (!runtime) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId });
      const channel = await runtimeFor(core, runtime).openAgentChannel(sandboxId);
      return deps.connectAgent(channel, opts);
    },
    isRunning: async (sandboxId) => {
      const record = await deps.store.getSandbox(sandboxId);
      return record !== null ? agentReachable(record.state) : core.pool.runtimeOf(sandboxId) !== undefined;
    },
    events,
    clock: deps.clock,
    onEvent: (sandboxId, event) => void recordAgentEvent(core, sandboxId, event),
  });
  // An agent channel lost for good is reported on the bus; the lifecycle checks the instance.
  watchLostAgents(core);
  return core;
}

/**
 * Close what core writes in the background, in order, before the store closes: the webhook dispatcher
 * (attempts in flight finish), the event recorder, the event feed, then the command, egress and ingress logs (what they
 * buffer is written; later entries are dropped). Never rejects.
 */
export async function closeCoreSinks(core: Pick<Core, 'webhooks' | 'eventLog' | 'eventFeed' | 'commandLog' | 'egressLog' | 'ingressLog'>): Promise<void> {
  await core.webhooks.close();
  await core.eventLog.close();
  await core.eventFeed.close();
  await core.commandLog.close();
  await core.egressLog.close();
  await core.ingressLog.close();
}
