/**
 * `@ramify/agent`, host side: the client of the agent that runs inside every sandbox (over a bridge's
 * stdio for gVisor, over QEMU's virtio-serial chardev socket for microVMs), the wire protocol helpers,
 * and where the agent bundle is. The in-sandbox entry is `main.ts` (bundled to
 * `dist/agent.mjs`), not exported here.
 */
export { AgentClient, connectAgent, type ConnectAgentOptions } from './client/agent-client.js';
export { childStdioChannel } from './client/stdio-channel.js';
export { connectVirtioAgent, openVirtioChannel, type VirtioChannelOptions } from './client/virtio-channel.js';
export * from './protocol/index.js';
export {
  AGENT_BUNDLE_PATH,
  AGENT_GUEST_PATH,
  AGENT_GUEST_SOCKET,
  AGENT_TCP_PORT,
  AGENT_SERVE_ARGV,
  AGENT_BRIDGE_ARGV,
  AGENT_VIRTIO_PORT_NAME,
  AGENT_GUEST_VIRTIO_PORT,
  AGENT_SERVE_VIRTIO_ARGV,
} from './bundle-path.js';
