/**
 * TEST SUPPORT for the real-egress suites that gather evidence (bypass, snapshots): one suite's whole
 * setup and teardown. A data directory, the fake internet (its own namespace and prefix, the shared
 * {@link NET} layout), an {@link EvidenceCollector} (packet logs in tables named by `watch`, a host
 * listener) and a daemon in a child process on the same prefix, the rig's DNS server its only upstream.
 * Test support only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NamespaceNetwork } from '@ramify/network';
import { FakeInternet } from '@ramify/network/testing';
import { EvidenceCollector } from './real-egress-evidence.js';
import { assertSlotRangeFree, ChildDaemon, forceCleanup, leftovers, NET, RIG_ECHO, RIG_WEB, RIG_ZONE } from './real-egress-support.js';

export interface EvidenceRigSpec {
  /** Prefix of the daemon's network and of the fake internet (namespaces, veths, tables). */
  prefix: string;
  /** Names of the evidence collector's packet-log tables. */
  watch: { forward: string; input: string; rig: string };
  /** Start of the temporary data directory's name. */
  dataDirPrefix: string;
  /** The prepared base root filesystem (RAMIFY_TEST_ROOTFS). */
  rootfs: string;
  /** The daemon's warm pool (`serve({ warmPool })`); default off. */
  warmPool?: string;
}

export class EvidenceRig {
  dataDir = '';
  rig: FakeInternet | undefined;
  evidence: EvidenceCollector | undefined;
  daemon: ChildDaemon | undefined;

  constructor(readonly spec: EvidenceRigSpec) {}

  /** Make everything, in order; when a step fails, what was made is left for {@link stop}. */
  async start(): Promise<void> {
    const { prefix } = this.spec;
    this.dataDir = await mkdtemp(join(tmpdir(), this.spec.dataDirPrefix));
    await new NamespaceNetwork({ prefix }).destroyAll();
    await assertSlotRangeFree(prefix);
    this.rig = await FakeInternet.start({ prefix, web: RIG_WEB, echo: RIG_ECHO, zone: RIG_ZONE, dns: { address: NET.dns } });
    this.evidence = await EvidenceCollector.start(this.rig, `${prefix}h*`, this.spec.watch);
    this.daemon = new ChildDaemon({ dataDir: this.dataDir, prefix, upstream: NET.dns, rootfs: this.spec.rootfs, ...(this.spec.warmPool ? { warmPool: this.spec.warmPool } : {}) });
    await this.daemon.start();
  }

  /**
   * Stop the daemon (it kills its sandboxes), the evidence collector and the fake internet, remove what
   * is left of the prefix, delete the data directory; then assert that nothing of the suite is left.
   */
  async stop(): Promise<void> {
    const { prefix } = this.spec;
    await this.daemon?.stop();
    await this.evidence?.stop();
    await this.rig?.teardown();
    if (!this.dataDir) return;
    await forceCleanup(prefix, this.dataDir);
    const left = await leftovers(prefix, this.dataDir, Object.values(this.spec.watch));
    await rm(this.dataDir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'every namespace, link, table and container the suite made is gone');
  }
}
