/**
 * How core gets an {@link AgentSession} for a sandbox: the runtime hands out a byte stream
 * (`Runtime.openAgentChannel`), and `@ramify/agent`'s `connectAgent(duplex)` speaks the agent protocol
 * over it. The daemon injects the real one; core never imports `@ramify/agent`.
 */
import type { AgentSession } from '@ramify/contracts';
import type { Duplex } from 'node:stream';

/** Options core passes to {@link ConnectAgent}. */
export interface ConnectAgentOpts {
  /** Reject `AGENT_UNREACHABLE` when the agent has not answered the first ping after this long, ms. */
  pingTimeoutMs?: number;
}

/**
 * Wrap a channel into a session; resolving means the session is usable. A failed handshake, a channel
 * that closes, or no answer to the first ping within `opts.pingTimeoutMs` rejects `AGENT_UNREACHABLE`
 * (and destroys the channel).
 */
export type ConnectAgent = (channel: Duplex, opts?: ConnectAgentOpts) => AgentSession | Promise<AgentSession>;
