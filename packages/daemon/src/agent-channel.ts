/**
 * The host side of the gVisor agent channel's fast path (docs/design/RUNTIME-GVISOR.md, "The agent
 * channel"): the firewall table that keeps the agent's TCP port to the agent dialer alone, its watchdog,
 * and the dialer (a helper process of that uid). The runtime dials through it; without it (no nft, a
 * network that is not the namespace one) every agent channel is a `runsc exec` bridge.
 */
import { AGENT_TCP_PORT } from '@ramify/agent';
import type { Logger } from '@ramify/core';
import { DEFAULT_AGENT_DIALER_UID, IngressDialer, installAgentFirewall, slotRange, watchAgentFirewall, type SlotLayout } from '@ramify/network';
import type { AgentDialer } from '@ramify/runtime-gvisor';

/** A connect to the agent's port that takes longer fails over to the bridge, ms (eight restores at once: ~0.1 s measured). */
const AGENT_CONNECT_TIMEOUT_MS = 3000;

export interface AgentDialing {
  dial: AgentDialer;
  /** Stop the dialer and the watchdog; the table stays (sandboxes outlive the daemon). */
  close(): void;
}

/**
 * Install the agent firewall for the slots of `prefix`/`layout` and start the dialer. Resolves null (and
 * logs why) when the table cannot be installed: the runtime then uses the bridge only.
 */
export async function openAgentDialing(prefix: string, layout: SlotLayout, logger: Logger): Promise<AgentDialing | null> {
  const spec = { prefix, slotRange: slotRange(layout), agentPort: AGENT_TCP_PORT, dialerUid: DEFAULT_AGENT_DIALER_UID };
  try {
    await installAgentFirewall(spec);
  } catch (err) {
    logger.warn('agent channel: the firewall table could not be installed; agents are reached through runsc exec', { error: err instanceof Error ? err.message : String(err) });
    return null;
  }
  const stopWatch = watchAgentFirewall(spec, {
    onReinstall: () => logger.warn('agent channel: the firewall table was gone; re-installed it', { table: `inet ${prefix}_agent` }),
    onError: (err) => logger.error('agent channel: checking the firewall table failed', { error: err instanceof Error ? err.message : String(err) }),
  });
  const dialer = new IngressDialer({ uid: DEFAULT_AGENT_DIALER_UID, connectTimeoutMs: AGENT_CONNECT_TIMEOUT_MS });
  // Started now, not at the first dial: a helper's start (a Node process, 100-300 ms on a loaded 2-core
  // host) landed inside the first bring-up of every daemon, e.g. a sandbox resumed here from another host.
  dialer.start();
  return {
    dial: (host, port) => dialer.dial(host, port),
    close: () => {
      stopWatch();
      dialer.close();
    },
  };
}
