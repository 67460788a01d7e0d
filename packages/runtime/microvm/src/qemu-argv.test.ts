/**
 * The QEMU command line and the guest's boot configuration, without starting anything: a VM and its
 * checkpoint loader must describe the same machine, option values are escaped, and the argv handed to
 * the guest survives shell quoting. The acceleration probe runs for real (it is cheap when KVM fails
 * fast, bounded by its deadline otherwise).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectAcceleration } from './acceleration.js';
import { bootConfText, shellQuote } from './guest-init.js';
import { prepareGuestKernel } from './guest-kernel.js';
import { kernelArgs, qemuArgs, type QemuLaunch } from './qemu-argv.js';

const launch = (over: Partial<QemuLaunch>): QemuLaunch => ({
  name: 'ramify-x',
  machine: { accelerator: 'tcg', cpuModel: 'qemu64,+rdrand', cpuCount: 2, memoryMB: 512 },
  paths: { ramFile: '/r/ram', disk: '/r/overlay.qcow2', consoleLog: '/r/console.log', qmpSocket: '/r/qmp.sock', agentSocket: '/r/agent.sock', kernel: '/k/vmlinuz', initrd: '/k/initrd.img' },
  ram: 'shared',
  tap: 'rvtap0',
  append: 'console=ttyS0',
  start: 'fresh',
  tcgTbSizeMB: 32,
  ...over,
});

/** The guest-visible devices of an argv: `-device` values without backend references, in order. */
const devices = (args: string[]): string[] =>
  args.flatMap((a, i) => (args[i - 1] === '-device' ? [a.replace(/(netdev|chardev|drive)=[^,]+,?/g, '')] : []));

test('a VM and its checkpoint loader have the same machine and devices', () => {
  const vm = qemuArgs(launch({ ram: 'private', start: 'incoming' }));
  const loader = qemuArgs(launch({ ram: 'shared', start: 'incoming-paused', tap: 'rvload0', paths: { ...launch({}).paths, agentSocket: null } }));
  assert.deepEqual(devices(vm), devices(loader));
  assert.ok(vm.includes('-incoming') && !vm.includes('-S'));
  assert.ok(loader.includes('-S'));
  assert.ok(vm.some((a) => a.includes('share=off')) && loader.some((a) => a.includes('share=on')));
  assert.ok(vm.includes('tcg,tb-size=32') && vm.includes('2'));
});

test('commas in paths are doubled inside QEMU option values', () => {
  const args = qemuArgs(launch({ paths: { ...launch({}).paths, disk: '/a,b/overlay.qcow2' } }));
  assert.ok(args.includes('if=none,id=disk0,file=/a,,b/overlay.qcow2,format=qcow2,discard=unmap'));
});

test('TCG guests get the timer flags and the host TSC rate, KVM guests do not', () => {
  assert.match(kernelArgs({ accelerator: 'tcg', tscKhz: 2596138 }), /tsc_early_khz=2596138(\s|$)/);
  assert.doesNotMatch(kernelArgs({ accelerator: 'kvm', tscKhz: 2596138 }), /tsc_early_khz|mitigations=off/);
});

test('the guest argv survives shell quoting', () => {
  const argv = ['/usr/bin/node', '-e', `console.log("it's $HOME \\\\ \`x\`")`, ''];
  const conf = bootConfText({ mode: 'boot', hostname: "h'1", netAddress: '10.254.0.2/30', netGateway: '10.254.0.1', argv });
  const r = spawnSync('sh', ['-c', `${conf}\nprintf '%s\\0' "$RAMIFY_HOSTNAME" "$@"`], { encoding: 'utf8' });
  assert.deepEqual(r.stdout.split('\0').slice(0, -1), ["h'1", ...argv]);
  assert.throws(() => shellQuote('a\0b'), RangeError);
});

test('detectAcceleration decides, says why, and caches the verdict; a truncated cache is probed again', { timeout: 120_000 }, async (t) => {
  const cacheDir = join(process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify', 'microvm');
  if (spawnSync('qemu-system-x86_64', ['--version']).error) return t.skip('qemu-system-x86 is not installed');
  const kernel = await prepareGuestKernel({ cacheDir });
  const dir = await mkdtemp(join(tmpdir(), 'rvm-accel-'));
  try {
    const first = await detectAcceleration({ kernel, cacheDir: dir, deadlineMs: 20_000 });
    assert.ok(first.accelerator === 'kvm' || first.accelerator === 'tcg');
    assert.ok(first.reason.length > 0);
    t.diagnostic(`${first.accelerator}: ${first.reason}`);
    const second = await detectAcceleration({ kernel, cacheDir: dir });
    assert.equal(second.accelerator, first.accelerator);
    if (first.reason.startsWith('KVM test guest')) assert.match(second.reason, /\(cached\)$/);
    // A cache cut short (a crash while writing it) is probed again, never a failed start.
    await writeFile(join(dir, 'acceleration.json'), '{"key": "x", "cho');
    const third = await detectAcceleration({ kernel, cacheDir: dir, deadlineMs: 20_000 });
    assert.equal(third.accelerator, first.accelerator);
    assert.doesNotMatch(third.reason, /\(cached\)$/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('every VM has a balloon that cannot deflate on OOM or report free pages; a paused fresh boot is not incoming', () => {
  const args = qemuArgs(launch({ start: 'fresh-paused' }));
  const balloon = devices(args).find((d) => d.startsWith('virtio-balloon-pci'));
  assert.ok(balloon, 'a balloon device');
  assert.match(balloon, /deflate-on-oom=off/);
  assert.match(balloon, /free-page-reporting=off/);
  assert.ok(args.includes('-S') && !args.includes('-incoming'));
  const conf = bootConfText({ mode: 'boot', hostname: 'h', netAddress: null, netGateway: null, argv: ['/init'], memoryLimitMB: 512 });
  const r = spawnSync('sh', ['-c', `${conf}\nprintf '%s' "$RAMIFY_MEM_LIMIT_KB"`], { encoding: 'utf8' });
  assert.equal(r.stdout, String(512 * 1024));
});
