/**
 * `@ramify/agent`, host side: the client of the agent that runs inside every sandbox, the wire
 * protocol helpers, and where the agent bundle is. The in-sandbox entry is `main.ts` (bundled to
 * `dist/agent.mjs`), not exported here.
 */
export { AgentClient, connectAgent, type ConnectAgentOptions } from './client/agent-client.js';
export { childStdioChannel } from './client/stdio-channel.js';
export * from './protocol/index.js';
export { AGENT_BUNDLE_PATH, AGENT_GUEST_PATH, AGENT_GUEST_SOCKET, AGENT_SERVE_ARGV, AGENT_BRIDGE_ARGV } from './bundle-path.js';
