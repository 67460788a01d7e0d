#!/usr/bin/env node
// bench/fork-economics: what a fork costs, per runtime, in the same run. For N = 1, 2, 4, 8 forks of the
// same running 512 MiB sandbox (holding a 192 MiB file in /dev/shm, i.e. in its memory): the wall time
// from the fork call to every fork answering a command, and the memory each fork adds on the host:
// private bytes (Private_Clean + Private_Dirty) and PSS, both from /proc/<pid>/smaps of every
// host process that belongs to the fork (QEMU for microvm; runsc sandbox, gofer and helpers for gVisor),
// split into guest memory (the mappings of gVisor's memory file / the VM's RAM file) and the runtime's own,
// and for the microVM the part of QEMU's own that is TCG's translated-code cache (its anonymous executable
// mappings, `-accel tcg,tb-size=32`: software emulation only; a KVM host has no such cache).
// The baseline each figure is set against is the parent sandbox itself, measured the same way.
//   node bench/fork-economics/run.mjs [--runtimes gvisor,microvm] [--template base] [--counts 1,2,4,8]
// Needs a running `ramify serve` with the template built for each runtime
// (`ramify template build base --runtime gvisor,microvm`) and root (to read other processes' smaps).
import { readdir, readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Sandbox, getHealth } from '@ramify/sdk';
import { upperMedian, verdict } from '../support/stats.mjs';

const { values } = parseArgs({
  options: {
    runtimes: { type: 'string' },
    template: { type: 'string', default: 'base' },
    counts: { type: 'string', default: '1,2,4,8' },
    'fill-mb': { type: 'string', default: '192' },
  },
});
const counts = values.counts.split(',').map(Number);
const fillMB = Number(values['fill-mb']);
const available = (await getHealth()).runtimes;
const runtimes = values.runtimes ? values.runtimes.split(',') : available;
const MiB = 1024 * 1024;

/** Host pids whose command line names `sandboxId` (every process the runtime runs for that sandbox). */
async function pidsOf(sandboxId) {
  const pids = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(sandboxId)) pids.push(Number(entry));
  }
  return pids;
}

/** Mappings that hold the guest's memory: gVisor's memory file, the microVM's RAM file. */
const GUEST_MEMORY = /memfd:runsc-memory|\/image\/ram$/;

/** TCG's translated-code cache: anonymous mappings that are writable and executable (QEMU's code_gen_buffer). */
const isTcgCodeCache = (perms, name) => perms === 'rwxp' && name === '';

/**
 * Over `pids` (bytes): `pss`, `priv` (Private_Clean + Private_Dirty), `guest`, the private bytes in
 * guest-memory mappings (what copy-on-write saves; the rest of `priv` is the runtime's own memory), and
 * `codeCache`, the private bytes of TCG's translated-code cache (part of the runtime's own; 0 for gVisor).
 */
async function memoryOf(pids) {
  let pss = 0;
  let priv = 0;
  let guest = 0;
  let codeCache = 0;
  for (const pid of pids) {
    const text = await readFile(`/proc/${pid}/smaps`, 'utf8').catch(() => '');
    let kind = 'own';
    for (const line of text.split('\n')) {
      const header = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (header) {
        const name = header[2] ?? '';
        kind = GUEST_MEMORY.test(name) ? 'guest' : isTcgCodeCache(header[1], name) ? 'code' : 'own';
        continue;
      }
      const field = /^(Pss|Private_Clean|Private_Dirty):\s+(\d+) kB/.exec(line);
      if (!field) continue;
      const bytes = Number(field[2]) * 1024;
      if (field[1] === 'Pss') pss += bytes;
      else {
        priv += bytes;
        if (kind === 'guest') guest += bytes;
        if (kind === 'code') codeCache += bytes;
      }
    }
  }
  return { pss, priv, guest, codeCache };
}

const mb = (bytes) => (bytes / MiB).toFixed(1);

console.log(`bench/fork-economics: template '${values.template}', parent 512 MiB with ${fillMB} MiB in /dev/shm; runtimes ${runtimes.join(', ')} (daemon has ${available.join(', ')})`);
console.log(['runtime', 'N', 'wall ms', 'private MiB/fork', 'of it guest memory', 'of it TCG code cache', 'PSS MiB/fork', 'private / parent', 'parent private MiB'].join('\t'));
const summary = {};
for (const runtime of runtimes) {
  const parent = await Sandbox.create({ template: values.template, runtime, memoryMB: 512, timeoutMs: 1_800_000 });
  try {
    await parent.commands.run(`head -c ${fillMB}M /dev/urandom > /dev/shm/fill && sync`, { timeoutMs: 600_000 });
    const parentMemory = await memoryOf(await pidsOf(parent.sandboxId));
    for (const n of counts) {
      const started = performance.now();
      const forks = await parent.fork({ count: n });
      await Promise.all(forks.map((f) => f.commands.run('true')));
      const wallMs = performance.now() - started;
      // Let lazily restored memory settle before reading it (gVisor restores pages in the background).
      await new Promise((r) => setTimeout(r, 1000));
      const perFork = await Promise.all(forks.map(async (f) => memoryOf(await pidsOf(f.sandboxId))));
      const priv = upperMedian(perFork.map((m) => m.priv));
      const pss = upperMedian(perFork.map((m) => m.pss));
      const guest = upperMedian(perFork.map((m) => m.guest));
      const codeCache = upperMedian(perFork.map((m) => m.codeCache));
      summary[`${runtime} x${n}`] = { wallMs, priv, pss, guest, codeCache };
      console.log([runtime, n, wallMs.toFixed(0), mb(priv), mb(guest), mb(codeCache), mb(pss), `${((priv / parentMemory.priv) * 100).toFixed(0)}%`, mb(parentMemory.priv)].join('\t'));
      await Promise.all(forks.map((f) => f.kill()));
    }
  } finally {
    await parent.kill();
  }
}
const vm8 = summary['microvm x8'];
if (vm8) {
  const own = vm8.priv - vm8.guest;
  console.log(`microvm: each fork adds ${mb(vm8.priv)} MiB private at N = 8 (target <= 32 MiB: ${verdict(vm8.priv <= 32 * MiB)}): ` +
    `${mb(vm8.guest)} MiB guest memory (copy-on-write) and ${mb(own)} MiB QEMU's own, of which ${mb(vm8.codeCache)} MiB TCG's translated-code cache`);
  if (vm8.codeCache > 0) {
    console.log(`microvm: without TCG's code cache (a KVM host has none) a fork adds ${mb(vm8.priv - vm8.codeCache)} MiB; the rest of QEMU's own ` +
      `(${mb(own - vm8.codeCache)} MiB: heap, devices, libraries) includes TCG's other state (software TLB, translation-block index), which KVM does not have either`);
  }
}
for (const n of counts) {
  const vm = summary[`microvm x${n}`];
  const gv = summary[`gvisor x${n}`];
  if (vm && gv) console.log(`N = ${n}: a microvm fork adds ${(vm.priv / gv.priv).toFixed(2)}x the private memory of a gVisor fork; wall until all answer ${(vm.wallMs / gv.wallMs).toFixed(2)}x`);
}
