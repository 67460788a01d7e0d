/**
 * `NftEgressEnforcer`: the host side of egress enforcement (NETWORK.md). Owns the table `inet <prefix>`
 * (see {@link tableScript}; it also carries the forward/masquerade rules `NamespaceNetwork` needs, so it
 * is the network's {@link HostFirewall}), keeps every slot's set elements and DNS grants in memory, and
 * turns each change into ONE `nft -f -` transaction. Every nft operation runs in one queue (no interleaving).
 * It is the only writer of the slot → policy table ({@link SlotPolicies}, `policy/slot-policies.ts`): each
 * change is written there once it is in the kernel. The resolver, the SNI/Host proxy and the egress log read
 * that table, not the enforcer.
 *
 * Fail-closed notes: a slot that was never `apply`d is dropped (its veth/address pair is not in `spoof`).
 * With the table it installs the route guard (`route-guard.ts`: policy-routing rules that refuse slot traffic
 * the table has not marked), so if the table is removed from outside (`nft flush ruleset`), even while the
 * daemon is down, nothing from a slot leaves the host until the table is back. {@link watch} hears of the
 * deletion from `nft monitor`/`ip monitor rule` (a 2 s poll while those are down: `table-watch.ts`) and re-installs the table with every policy; DNS grants are lost then (sandboxes
 * resolve again). The guard stays when the daemon stops; only {@link uninstall} removes it.
 */
import { writeFile } from 'node:fs/promises';
import { ruleForName, type EgressEnforcer, type EgressPolicy, type PortRange } from '@ramify/core';
import { RamifyError } from '@ramify/contracts';
import { watchTable, type TableWatchOptions } from '../../table-watch.js';
import { run, runChecked } from '../../exec.js';
import { StandbyProcess } from '../../standby-process.js';
import { nftEnv } from '../../nft-process.js';
import { slotRange } from '../../slots.js';
import { installRouteGuard, isRouteGuardInstalled, removeRouteGuard, ROUTE_GUARD_MARK } from './route-guard.js';
import type { DnsAnswerEvent } from '../dns/dns-resolver-types.js';
import type { SlotPolicies, SlotPolicy } from '../policy/slot-policies.js';
import {
  GUARD_MARKER, INSTALLED_MARKER, addElements, deleteElements, dnsElement, isOpenPolicy, policyElements, refreshElements, tableScript, type SetElement,
} from './nft-ruleset.js';

/** Installs the host's nftables table; `NamespaceNetwork` calls it instead of making its own. */
export interface HostFirewall {
  /** Create (or atomically re-create) the host table (and whatever keeps it fail-closed, e.g. the route guard). */
  install(): Promise<void>;
  /** Delete the host table (and the route guard). */
  uninstall(): Promise<void>;
}

export interface NftEgressEnforcerOptions {
  prefix: string;
  /** The slot → policy table, which only the enforcer writes; its layout gives the slot addresses and the slot range. */
  slots: SlotPolicies;
  /** Port the policy resolver listens on (all host addresses); port 53 from slots is redirected to it. */
  resolverPort: number;
  /** The address sandboxes' resolv.conf names. */
  dnsServiceAddress: string;
  /** Host ports of the SNI/Host proxy; TCP 80/443 from allowlist slots is redirected to them. Absent: no proxy. */
  proxyPorts?: { http: number; tls: number };
  /** NFLOG group of the verdict log statements. Absent: the table logs nothing. */
  nflogGroup?: number;
  /** Mark bit of the route guard (a single bit); default {@link ROUTE_GUARD_MARK}. */
  guardMark?: number;
  /**
   * Awaited after every policy change (`apply`, `remove`, `reapplyAll`) is in the kernel, e.g. to cut proxied
   * connections the new policy denies. A rejection is passed to `onChangeError`, the change stands.
   */
  onChange?(): Promise<unknown> | void;
  onChangeError?(error: unknown): void;
  /**
   * Elements other writers keep in the table's sets (private networks' `peers`, through {@link exclusive}),
   * added back whenever the table is (re-)installed.
   */
  extraElements?(): readonly SetElement[];
}

/** Sends one `nft -f -` transaction (see {@link NftEgressEnforcer.exclusive}). */
export type TableCommit = (lines: readonly string[]) => Promise<void>;

/** An {@link NftEgressEnforcer.apply} waiting for its transaction. */
interface PendingApply {
  sandboxId: string;
  slot: number;
  policy: EgressPolicy;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** What the enforcer put in the kernel for one slot. */
interface SlotState extends SlotPolicy {
  slotAddress: string;
  elements: SetElement[];
  /** DNS grants by element key: the name they were granted for and the port of the rule. */
  grants: Map<string, { element: SetElement; name: string; port: PortRange | null; expiresAt: number }>;
}

export class NftEgressEnforcer implements EgressEnforcer, HostFirewall {
  private readonly options: NftEgressEnforcerOptions;
  /** Kernel state by slot number; the table ({@link NftEgressEnforcerOptions.slots}) holds the same slots. */
  private readonly slots = new Map<number, SlotState>();
  private queue: Promise<unknown> = Promise.resolve();
  private installedOnce = false;
  /** `nft -f -` started ahead of each transaction (a claim from the warm pool waits for one), its allocator tuned (nft-process.ts). */
  private readonly nft = new StandbyProcess(['nft', '-f', '-'], { env: nftEnv() });
  /** Applies waiting for their shared transaction, in call order, until another change is queued behind them. */
  private openBatch: PendingApply[] | null = null;

  constructor(options: NftEgressEnforcerOptions) {
    this.options = options;
  }

  /** Throws `RUNTIME_UNAVAILABLE` when `nft` cannot run. */
  static async checkAvailable(): Promise<void> {
    const r = await run(['nft', '--version']);
    if (r.code !== 0) throw new RamifyError('RUNTIME_UNAVAILABLE', `nft is required for egress enforcement: ${r.stderr.trim()}`);
  }

  /**
   * Install the table with every policy in memory, and the route guard. The first call in a process always
   * re-creates the table (one left by an earlier daemon names an old resolver port); later calls only re-create
   * a missing table, so the network's own `ensureHost` does not drop DNS grants. Rejects `RUNTIME_ERROR` when
   * the table or the guard cannot be installed.
   */
  install(): Promise<void> {
    return this.serial(async () => {
      if (this.installedOnce) await this.ensureNow();
      else await this.installNow();
      this.installedOnce = true;
      // The first slot's policy (a resume from another host, the first claim) need not wait for nft to start.
      this.nft.prepare();
    });
  }

  /** Delete the table, then the route guard (fail-closed at every step). */
  uninstall(): Promise<void> {
    return this.serial(async () => {
      this.nft.stop();
      await run(['nft', 'delete', 'table', 'inet', this.options.prefix]);
      await removeRouteGuard(slotRange(this.options.slots.layout));
    });
  }

  /** True when the table and its rules are in place (false after `nft flush ruleset` or a flushed chain). */
  async isInstalled(): Promise<boolean> {
    // -t: without set elements (the rules only).
    const r = await run(['nft', '-t', 'list', 'table', 'inet', this.options.prefix]);
    return r.code === 0 && r.stdout.includes(INSTALLED_MARKER) && r.stdout.includes(GUARD_MARKER);
  }

  /** True when the route guard's rules are in place, exactly once. */
  isGuardInstalled(): Promise<boolean> {
    return isRouteGuardInstalled(this.guardSpec());
  }

  /** Re-install the table (with every policy in memory) or the route guard where missing. Resolves true when it had to. */
  ensureInstalled(): Promise<boolean> {
    return this.serial(() => this.ensureNow());
  }

  private async ensureNow(): Promise<boolean> {
    if (!(await this.isInstalled())) {
      await this.installNow();
      return true;
    }
    if (await this.isGuardInstalled()) return false;
    await installRouteGuard(this.guardSpec());
    return true;
  }

  /**
   * Check that the table and the route guard are installed, re-installing them if not: whenever the kernel
   * reports a deletion, and on a slow safety timer (see `table-watch.ts`; `intervalMs` while a monitor is down).
   * Returns a stop function. `onReinstall` hears about each re-install, `onError` about failures.
   */
  watch(options: TableWatchOptions = {}): () => void {
    return watchTable(() => this.ensureInstalled(), options);
  }

  /** Replace every slot's state with `entries` and re-create the table with them, in one transaction. */
  reapplyAll(entries: readonly SlotPolicy[]): Promise<void> {
    return this.serial(async () => {
      const next = entries.map((e) => this.stateFor(e));
      await this.installWith(next);
      this.slots.clear();
      for (const s of next) this.slots.set(s.slot, s);
      this.options.slots.replaceAll(entries);
      await this.changed();
    });
  }

  /**
   * Enforce `policy` on `slot` for `sandboxId`. Applies that wait in the queue together (a fork's children)
   * go into the kernel as ONE transaction (each slot's change is its own elements: none depends on
   * another's); when that transaction fails, each is tried alone, so each caller gets its own outcome.
   */
  apply(sandboxId: string, slot: number, policy: EgressPolicy): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!this.openBatch) {
        const batch: PendingApply[] = [];
        void this.serial(() => this.applyBatch(batch));
        this.openBatch = batch; // After serial(), which closes the batch before it.
      }
      this.openBatch.push({ sandboxId, slot, policy, resolve, reject });
    });
  }

  /**
   * Apply `batch` (applies called one after another with no other change of the table between them), in
   * rounds of one change per slot (a second change of a slot follows the first).
   */
  private async applyBatch(batch: PendingApply[]): Promise<void> {
    if (this.openBatch === batch) this.openBatch = null;
    for (let left = batch; left.length > 0;) {
      const round: PendingApply[] = [];
      const rest: PendingApply[] = [];
      for (const p of left) (round.some((r) => r.slot === p.slot) || rest.some((r) => r.slot === p.slot) ? rest : round).push(p);
      await this.applyRound(round);
      left = rest;
    }
  }

  /** One transaction for `round` (distinct slots); when it fails, each alone, so each caller gets its own outcome. */
  private async applyRound(round: PendingApply[]): Promise<void> {
    const applied: PendingApply[] = [];
    const tryAlone = async (p: PendingApply): Promise<void> => {
      try {
        const { script, next } = this.changeFor(p);
        await this.transaction(script);
        this.record(p, next);
        applied.push(p);
      } catch (err) {
        p.reject(err);
      }
    };
    if (round.length === 1) await tryAlone(round[0]!);
    else {
      try {
        const changes = round.map((p) => ({ p, ...this.changeFor(p) }));
        await this.transaction(changes.flatMap((c) => c.script));
        for (const c of changes) this.record(c.p, c.next);
        applied.push(...round);
      } catch {
        // Nothing of a failed transaction is in force.
        for (const p of round) await tryAlone(p);
      }
    }
    if (applied.length === 0) return;
    await this.changed();
    for (const p of applied) p.resolve();
  }

  /** `slot` now holds `next` in the kernel: remember it, and tell the slot → policy table. */
  private record(p: PendingApply, next: SlotState): void {
    this.slots.set(p.slot, next);
    this.options.slots.set({ sandboxId: p.sandboxId, slot: p.slot, policy: p.policy });
  }

  /** The statements taking `slot` from what is in the kernel to `policy`, and its state afterwards. */
  private changeFor({ sandboxId, slot, policy }: PendingApply): { script: string[]; next: SlotState } {
    const previous = this.slots.get(slot);
    const next = this.stateFor({ sandboxId, slot, policy });
    // Keep DNS grants the new policy still allows with the same port (no need to resolve again).
    const dropped: SetElement[] = [];
    if (previous) {
      for (const [key, grant] of previous.grants) {
        const rule = isOpenPolicy(policy) || previous.sandboxId !== sandboxId ? null : ruleForName(policy, grant.name);
        const port = rule && 'port' in rule ? rule.port : null;
        if (rule && samePort(port, grant.port) && grant.expiresAt > Date.now()) next.grants.set(key, grant);
        else dropped.push(grant.element);
      }
    }
    // Only what differs: an element in both stays in the kernel (a resume's unchanged policy costs no nft process).
    const had = new Set((previous?.elements ?? []).map(elementKey));
    const has = new Set(next.elements.map(elementKey));
    const gone = (previous?.elements ?? []).filter((e) => !has.has(elementKey(e)));
    const added = next.elements.filter((e) => !had.has(elementKey(e)));
    return { script: [...deleteElements(this.options.prefix, [...gone, ...dropped]), ...addElements(this.options.prefix, added)], next };
  }

  remove(slot: number): Promise<void> {
    return this.serial(async () => {
      const previous = this.slots.get(slot);
      if (!previous) return;
      await this.transaction(deleteElements(this.options.prefix, [...previous.elements, ...[...previous.grants.values()].map((g) => g.element)]));
      this.slots.delete(slot);
      this.options.slots.delete(slot);
      await this.changed();
    });
  }

  /**
   * The resolver's `onAnswer`: open the answered addresses to the sandbox for the TTL (timed set elements)
   * before the reply goes out. Throws (→ SERVFAIL) when the sandbox is gone or no longer allowed the name.
   */
  grant(event: DnsAnswerEvent): Promise<void> {
    return this.serial(async () => {
      const held = this.options.slots.slotOfSandbox(event.sandboxId);
      const state = held && this.slots.get(held.slot);
      if (!state) throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox ${event.sandboxId} has no egress state`);
      if (isOpenPolicy(state.policy)) return;
      const rule = ruleForName(state.policy, event.name);
      if (!rule) throw new RamifyError('FORBIDDEN', `${event.name} is no longer allowed for ${event.sandboxId}`);
      const port = 'port' in rule ? rule.port : null;
      const elements = event.addresses.map((a) => dnsElement(state.slotAddress, a, port, event.ttlSeconds));
      await this.transaction(refreshElements(this.options.prefix, elements));
      const expiresAt = Date.now() + event.ttlSeconds * 1000;
      for (const element of elements) state.grants.set(`${element.set} ${element.key}`, { element, name: event.name, port, expiresAt });
      for (const [key, g] of state.grants) if (g.expiresAt < Date.now()) state.grants.delete(key);
      this.options.slots.learn(state.slot, event.name, event.addresses, expiresAt);
    });
  }

  /**
   * Run `change` in the enforcer's queue (between its own changes, never during one): the way another writer
   * of the table's sets (private networks) changes them. `commit` sends one transaction, re-installing the
   * table first when it has vanished. Rejects with `change`'s error.
   */
  exclusive<T>(change: (commit: TableCommit) => Promise<T>): Promise<T> {
    return this.serial(() => change((lines) => this.transaction([...lines])));
  }

  private stateFor(entry: SlotPolicy): SlotState {
    const slotAddress = this.options.slots.addressOf(entry.slot);
    const veth = `${this.options.prefix}h${entry.slot}`;
    return { ...entry, slotAddress, elements: policyElements(veth, slotAddress, entry.policy), grants: new Map() };
  }

  private installNow(): Promise<void> {
    return this.installWith([...this.slots.values()]).then(() => {
      for (const s of this.slots.values()) s.grants.clear();
      this.options.slots.forgetLearned();
    });
  }

  private async installWith(states: readonly SlotState[]): Promise<void> {
    await writeIpForward();
    const table = tableScript({
      prefix: this.options.prefix,
      slotRange: slotRange(this.options.slots.layout),
      resolverPort: this.options.resolverPort,
      dnsServiceAddress: this.options.dnsServiceAddress,
      ...(this.options.proxyPorts ? { proxyPorts: this.options.proxyPorts } : {}),
      ...(this.options.nflogGroup !== undefined ? { nflogGroup: this.options.nflogGroup } : {}),
      guardMark: this.options.guardMark ?? ROUTE_GUARD_MARK,
    });
    const elements = [...states.flatMap((s) => s.elements), ...(this.options.extraElements?.() ?? [])];
    await runChecked(['nft', '-f', '-'], table + addElements(this.options.prefix, elements).join('\n') + '\n', { env: nftEnv() });
    // After the table (which marks slot traffic): the guard never refuses traffic the table would allow.
    await installRouteGuard(this.guardSpec());
  }

  private guardSpec(): { slotRange: string; mark: number } {
    return { slotRange: slotRange(this.options.slots.layout), mark: this.options.guardMark ?? ROUTE_GUARD_MARK };
  }

  /** One `nft -f -` transaction; when the table has vanished, re-install it first and retry once. */
  private async transaction(lines: string[]): Promise<void> {
    if (lines.length === 0) return;
    const script = lines.join('\n') + '\n';
    const first = await this.nft.run(script);
    if (first.code === 0) return;
    if (await this.isInstalled()) throw new RamifyError('RUNTIME_ERROR', `nft transaction failed: ${first.stderr.trim()}`);
    await this.installNow();
    await runChecked(['nft', '-f', '-'], script, { env: nftEnv() });
  }

  /** Run `onChange` (inside the queue: the next change waits for it); failures go to `onChangeError`. */
  private async changed(): Promise<void> {
    try {
      await this.options.onChange?.();
    } catch (err) {
      this.options.onChangeError?.(err);
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    // Whatever is queued now runs after the open batch of applies: later applies make a new one.
    this.openBatch = null;
    const next = this.queue.catch(() => undefined).then(fn);
    this.queue = next.catch(() => undefined);
    return next;
  }
}

const elementKey = (e: SetElement): string => `${e.set} ${e.key}`;

function samePort(a: PortRange | null, b: PortRange | null): boolean {
  return a === null || b === null ? a === b : a.from === b.from && a.to === b.to;
}

async function writeIpForward(): Promise<void> {
  await writeFile('/proc/sys/net/ipv4/ip_forward', '1');
}

