/** Where the one-file agent bundle lives (built by `npm run bundle:agent`). */
import { fileURLToPath } from 'node:url';

/**
 * Absolute path of `packages/agent/dist/agent.mjs`, the file a template copies into its rootfs at
 * `/opt/ramify/agent.mjs` and runs as `node /opt/ramify/agent.mjs serve --socket /run/ramify/agent.sock`.
 */
export const AGENT_BUNDLE_PATH: string = fileURLToPath(new URL('./agent.mjs', import.meta.url));

/** Where templates install the bundle inside the sandbox. */
export const AGENT_GUEST_PATH = '/opt/ramify/agent.mjs';

/** The agent's unix socket inside the sandbox. */
export const AGENT_GUEST_SOCKET = '/run/ramify/agent.sock';

/** The agent's TCP port inside a gVisor sandbox: defined with the API's contracts, which refuse to expose it. */
export { AGENT_TCP_PORT } from '@ramify/contracts';

/** Guest argv that starts the agent (run under `tini` as PID 1). */
export const AGENT_SERVE_ARGV: readonly string[] = ['node', AGENT_GUEST_PATH, 'serve', '--socket', AGENT_GUEST_SOCKET];

/** Name of the agent's virtio-serial port (`-device virtserialport,name=...` on the QEMU command line). */
export const AGENT_VIRTIO_PORT_NAME = 'org.ramify.agent0';

/** Where a microVM guest sees that port (udev's link; without udev the agent finds it through sysfs). */
export const AGENT_GUEST_VIRTIO_PORT = `/dev/virtio-ports/${AGENT_VIRTIO_PORT_NAME}`;

/**
 * Guest argv that starts the agent in a microVM: serves the virtio port (the host connects with
 * `connectVirtioAgent`) and the usual unix socket (for `bridge` from inside the guest).
 */
export const AGENT_SERVE_VIRTIO_ARGV: readonly string[] = ['node', AGENT_GUEST_PATH, 'serve', '--virtio-port', AGENT_GUEST_VIRTIO_PORT, '--socket', AGENT_GUEST_SOCKET];

/** Guest argv of the bridge that a host runs with `runsc exec` to reach the agent over stdio. */
export const AGENT_BRIDGE_ARGV: readonly string[] = ['node', AGENT_GUEST_PATH, 'bridge', '--socket', AGENT_GUEST_SOCKET];
