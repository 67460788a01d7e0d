/**
 * The agent's TCP port inside a gVisor sandbox (`serve --tcp-port`): the host reaches the agent through
 * the sandbox's slot address on it (docs/design/RUNTIME-GVISOR.md, "The agent channel"). Reserved: a
 * sandbox's own server cannot bind it, it cannot be exposed as a port URL or forwarded over SSH, and
 * nothing but the daemon's agent dialer reaches it.
 */
export const AGENT_TCP_PORT = 49982;
