/**
 * What the Runtime conformance suite needs from an implementation under test (containerd's
 * `snapshots/testsuite` habit, as `@ramify/storage/testsuite` for snapshot storage): the runtime, a root
 * filesystem holding the real agent and the argv that starts it as init, network slots to attach, and the
 * agent connector. The suite boots, checkpoints, restores and kills through the port alone; a case whose
 * optional method the runtime lacks is skipped with that reason.
 */
import type { ConnectAgent } from '../agent.js';
import type { SandboxNetwork } from '../network.js';
import type { Runtime, SandboxResources } from '../runtime.js';

export interface RuntimeHarness {
  /** Names the suite (`gVisor (runsc)`). */
  name: string;
  /** The runtime under test, opened. */
  runtime: Runtime;
  /** A root filesystem with the agent in it (`RAMIFY_TEST_ROOTFS`: the base template's). */
  rootfsDir: string;
  /** The init argv the runtime's templates boot with (the agent under tini, as `templateInitArgv` gives it). */
  initArgv: readonly string[];
  /** Attaches each sandbox's network (real namespaces under the harness's own prefix); the harness tears them down. */
  network: Pick<SandboxNetwork, 'attach'>;
  /** The agent protocol over a channel (`@ramify/agent`'s `connectAgent`). */
  connectAgent: ConnectAgent;
  /** Prefix of the suite's sandbox ids (unique on the host: the harness's namespace prefix is a good one). */
  idPrefix: string;
  /** The suite uses slots `firstSlot` to `firstSlot + 6`. */
  firstSlot: number;
  /** Resources of every sandbox the suite makes. */
  resources: SandboxResources;
  /** A fresh directory for the suite's images (each image is a new path inside it). */
  workDir: string;
  /** Bound on the agent's first answer after a boot or restore, ms (a microVM under TCG is slow). */
  agentTimeoutMs: number;
  /** Bound on each case, ms. */
  caseTimeoutMs: number;
}
