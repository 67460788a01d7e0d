/**
 * How core gets an {@link AgentSession} for a sandbox: the runtime hands out a byte stream
 * (`Runtime.openAgentChannel`), and `@ramify/agent`'s `connectAgent(duplex)` speaks the agent protocol
 * over it. The daemon injects the real one; core never imports `@ramify/agent`.
 */
import type { AgentSession } from '@ramify/contracts';
import type { Duplex } from 'node:stream';

/** Wrap a channel into a session; resolving means the session is usable (a failed handshake rejects `AGENT_UNREACHABLE`). */
export type ConnectAgent = (channel: Duplex) => AgentSession | Promise<AgentSession>;
