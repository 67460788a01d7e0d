/**
 * Choosing the accelerator. KVM is used only when a test guest actually boots under it within a
 * deadline (some hosts expose a `/dev/kvm` on which stock kernels hang); otherwise TCG, QEMU's software
 * emulation, which works everywhere but runs guest code ~10x slower. The verdict is cached per host
 * (host kernel, QEMU version, guest kernel) in a small JSON file, so only the first start pays the probe.
 */
import { spawn } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { release } from 'node:os';
import { join } from 'node:path';
import type { GuestKernel } from './guest-kernel.js';
import { PROBE_MARKER } from './guest-init.js';
import { writeJsonAtomically } from './image-files.js';
import { run } from './host-tools.js';
import { composeBootInitrd } from './initramfs.js';
import { kernelArgs, type Accelerator } from './qemu-argv.js';

/** The accelerator to use and why (for the daemon's start-up line). */
export interface AccelerationChoice {
  accelerator: Accelerator;
  /** `-cpu` model that goes with it. */
  cpuModel: string;
  /** Host TSC frequency in kHz (passed to TCG guests), null when unknown. */
  tscKhz: number | null;
  reason: string;
}

export interface DetectAccelerationOptions {
  kernel: GuestKernel;
  /** Where the verdict is cached (`acceleration.json`); null = always probe. */
  cacheDir: string | null;
  qemuPath?: string;
  /** QEMU's version line when the caller already read it ({@link qemuVersion}); default: read it here. */
  qemuVersion?: string;
  /** How long the KVM test guest may take to print its marker; default 20000. */
  deadlineMs?: number;
  /** Skip the probe and use TCG (e.g. a configured `accelerator: tcg`). */
  forceTcg?: boolean;
}

const TCG_CPU = 'qemu64,+rdrand';

/** Host TSC frequency (kHz) from /proc/cpuinfo's `cpu MHz` (the TSC rate on constant-TSC hosts), or null. */
export async function hostTscKhz(): Promise<number | null> {
  const text = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const mhz = /^cpu MHz\s*:\s*([0-9.]+)/m.exec(text)?.[1];
  return mhz ? Math.round(Number(mhz) * 1000) : null;
}

/** QEMU's version line (`QEMU emulator version 7.2.22 ...`); rejects `RUNTIME_UNAVAILABLE` without QEMU. */
/**
 * The major.minor release in a `qemu-system-x86_64 --version` line ("QEMU emulator version 10.0.2
 * (Debian ...)" → "10.0"): the unit of migration-stream compatibility for the unversioned machines
 * Ramify uses. An unreadable line gives the whole line, so two unknown versions never compare equal by accident.
 */
export function qemuRelease(versionLine: string): string {
  const m = /version (\d+)\.(\d+)/.exec(versionLine);
  return m ? `${m[1]}.${m[2]}` : versionLine;
}

export async function qemuVersion(qemuPath: string): Promise<string> {
  const r = await run([qemuPath, '--version']);
  return r.stdout.split('\n')[0]?.trim() ?? '';
}

/**
 * Decide between KVM and TCG (see the module doc). Never rejects for a KVM failure: that is a TCG
 * verdict with the failure as its reason. Rejects `RUNTIME_UNAVAILABLE` when QEMU is not installed.
 */
export async function detectAcceleration(options: DetectAccelerationOptions): Promise<AccelerationChoice> {
  const qemuPath = options.qemuPath ?? 'qemu-system-x86_64';
  const tscKhz = await hostTscKhz();
  const tcg = (reason: string): AccelerationChoice => ({ accelerator: 'tcg', cpuModel: TCG_CPU, tscKhz, reason });
  const version = options.qemuVersion ?? (await qemuVersion(qemuPath));
  if (options.forceTcg) return tcg('TCG chosen by configuration');
  const kvmUsable = await access('/dev/kvm', constants.R_OK | constants.W_OK).then(() => true, () => false);
  if (!kvmUsable) return tcg('/dev/kvm is missing or not accessible: using TCG (software emulation, slow)');

  const key = `${release()}|${version}|${options.kernel.version}`;
  const cacheFile = options.cacheDir ? join(options.cacheDir, 'acceleration.json') : null;
  if (cacheFile && existsSync(cacheFile)) {
    const cached = readCachedChoice(await readFile(cacheFile, 'utf8').catch(() => ''));
    if (cached?.key === key && cached.choice) return { ...cached.choice, tscKhz, reason: `${cached.choice.reason} (cached)` };
  }
  const deadlineMs = options.deadlineMs ?? 20_000;
  const probe = await probeKvm(qemuPath, options.kernel, deadlineMs);
  const choice: AccelerationChoice = probe.ok
    ? { accelerator: 'kvm', cpuModel: 'host', tscKhz, reason: `KVM test guest booted in ${probe.elapsedMs} ms: using KVM` }
    : tcg(`KVM test guest ${probe.why}: using TCG (software emulation, slow)`);
  if (cacheFile) {
    await mkdir(options.cacheDir!, { recursive: true });
    // Written whole then renamed: a crash mid-write must not leave a cache that breaks the next start.
    await writeJsonAtomically(cacheFile, { key, choice });
  }
  return choice;
}

/** Boot the probe guest under KVM; ok when it prints {@link PROBE_MARKER} before `deadlineMs`. */
async function probeKvm(qemuPath: string, kernel: GuestKernel, deadlineMs: number): Promise<{ ok: boolean; elapsedMs: number; why: string }> {
  const dir = await mkdtemp('/tmp/ramify-kvm-probe-');
  try {
    const initrd = join(dir, 'initrd.img');
    await composeBootInitrd(kernel.initrdPath, { mode: 'probe', hostname: 'probe', netAddress: null, netGateway: null, argv: [] }, '', initrd);
    const args = [
      '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot', '-machine', 'q35', '-accel', 'kvm', '-cpu', 'host',
      '-m', '256M', '-kernel', kernel.kernelPath, '-initrd', initrd, '-append', kernelArgs({ accelerator: 'kvm', tscKhz: null }),
      '-serial', 'stdio',
    ];
    const started = Date.now();
    const child = spawn(qemuPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    return await new Promise((resolve) => {
      const finish = (ok: boolean, why: string): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        resolve({ ok, elapsedMs: Date.now() - started, why });
      };
      const timer = setTimeout(() => finish(false, `did not finish booting within ${deadlineMs} ms`), deadlineMs);
      const onData = (d: Buffer): void => {
        output += d.toString('utf8');
        if (output.includes(PROBE_MARKER)) finish(true, 'booted');
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.on('error', (e) => finish(false, `could not start: ${e.message}`));
      child.on('exit', (code, signal) => {
        if (!output.includes(PROBE_MARKER)) finish(false, `${signal ? `was killed by ${signal}` : `exited with code ${code}`} before booting: ${output.trim().split('\n').slice(-2).join(' ')}`);
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The cached verdict, or undefined when the file is not valid JSON (truncated): probe again. */
function readCachedChoice(text: string): { key?: string; choice?: AccelerationChoice } | undefined {
  try {
    return JSON.parse(text) as { key?: string; choice?: AccelerationChoice };
  } catch {
    return undefined;
  }
}
