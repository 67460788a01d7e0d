/**
 * The guest kernel: Debian's generic `linux-image-<version>-amd64` (it has VMGENID built in; the cloud
 * flavour lacks it), fetched with `apt-get download`, unpacked with `dpkg-deb -x`, plus the initramfs of
 * {@link buildBaseInitramfs}. Prepared once per host and cached:
 * ```
 * <cacheDir>/guest-kernel/<package>-<recipe>/vmlinuz      the bzImage (q35 direct boot)
 *                                            initrd.img   busybox + modules + /init
 *                                            kernel.json  {@link GuestKernel}, written last
 *                                            vmlinuz.restore-stub  what restores start with (restore-kernel.ts)
 * ```
 * `<recipe>` hashes the init script and module list, so changing either rebuilds the initramfs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import { INIT_SCRIPT } from './guest-init.js';
import { run, runChecked } from './host-tools.js';
import { GUEST_MODULES, buildBaseInitramfs } from './initramfs.js';

/** A prepared guest kernel. Paths are absolute. */
export interface GuestKernel {
  /** Debian package it came from, e.g. `linux-image-6.1.0-56-amd64`. */
  packageName: string;
  /** Kernel release (`uname -r` inside the guest), e.g. `6.1.0-56-amd64`. */
  version: string;
  kernelPath: string;
  initrdPath: string;
  /** Module files the initramfs loads, in load order. */
  modules: string[];
}

export interface PrepareGuestKernelOptions {
  /** Cache root, e.g. `/var/cache/ramify/microvm`. */
  cacheDir: string;
  /** Kernel package; default: what `linux-image-amd64` depends on, else the newest `linux-image-6.1.0-*-amd64`. */
  packageName?: string;
  /** Static busybox for the initramfs; default `/bin/busybox` (Debian `busybox-static`). */
  busyboxPath?: string;
  /** Progress lines (download, unpack, initramfs). */
  onLine?: (line: string) => void;
}

const RECIPE = createHash('sha256').update(INIT_SCRIPT).update(GUEST_MODULES.join(',')).update('v1').digest('hex').slice(0, 12);
const KERNEL_JSON = 'kernel.json';

/**
 * Return the cached guest kernel, preparing it first if needed (idempotent; safe to call concurrently
 * from several processes). A cached kernel is reused without asking apt, so this works offline once done.
 * Rejects `RUNTIME_UNAVAILABLE` when apt, dpkg-deb, cpio or busybox is missing, `RUNTIME_ERROR` when the
 * package cannot be found or downloaded.
 */
export async function prepareGuestKernel(options: PrepareGuestKernelOptions): Promise<GuestKernel> {
  const root = join(options.cacheDir, 'guest-kernel');
  const cached = await findCached(root, options.packageName);
  if (cached) return cached;
  const log = options.onLine ?? (() => undefined);
  const busyboxPath = options.busyboxPath ?? '/bin/busybox';
  if (!existsSync(busyboxPath)) {
    throw new RamifyError('RUNTIME_UNAVAILABLE', `no static busybox at ${busyboxPath} for the guest initramfs (install it with: apt-get install -y busybox-static)`);
  }
  const packageName = options.packageName ?? (await pickKernelPackage());
  const final = join(root, `${packageName}-${RECIPE}`);
  const work = `${final}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(work, { recursive: true });
  try {
    log(`downloading ${packageName}`);
    await runChecked(['apt-get', 'download', '-o', 'APT::Sandbox::User=root', packageName], { cwd: work });
    const deb = (await readdir(work)).find((f) => f.endsWith('.deb'));
    if (!deb) throw new RamifyError('RUNTIME_ERROR', `apt-get download ${packageName} produced no .deb`);
    log(`unpacking ${deb}`);
    const unpacked = join(work, 'unpacked');
    await runChecked(['dpkg-deb', '-x', join(work, deb), unpacked]);
    const versions = await readdir(join(unpacked, 'lib/modules'));
    const version = versions[0];
    if (!version || !existsSync(join(unpacked, 'boot', `vmlinuz-${version}`))) {
      throw new RamifyError('RUNTIME_ERROR', `${packageName} holds no vmlinuz/modules pair (found ${versions.join(', ') || 'no modules'})`);
    }
    await copyFile(join(unpacked, 'boot', `vmlinuz-${version}`), join(work, 'vmlinuz'));
    log('building the initramfs');
    const modules = await buildBaseInitramfs({
      modulesDir: join(unpacked, 'lib/modules', version),
      busyboxPath,
      outPath: join(work, 'initrd.img'),
    });
    await rm(unpacked, { recursive: true, force: true });
    await rm(join(work, deb), { force: true });
    const kernel: GuestKernel = { packageName, version, kernelPath: join(final, 'vmlinuz'), initrdPath: join(final, 'initrd.img'), modules };
    await writeFile(join(work, KERNEL_JSON), JSON.stringify(kernel, null, 1));
    try {
      await rename(work, final);
    } catch (err) {
      // Another process finished first: use its result.
      if (!existsSync(join(final, KERNEL_JSON))) throw err;
    }
    log(`guest kernel ${version} ready`);
    return (await readKernel(final))!;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function readKernel(dir: string): Promise<GuestKernel | null> {
  try {
    const kernel = JSON.parse(await readFile(join(dir, KERNEL_JSON), 'utf8')) as GuestKernel;
    return existsSync(kernel.kernelPath) && existsSync(kernel.initrdPath) ? kernel : null;
  } catch {
    return null;
  }
}

/** The newest cached kernel of the current recipe (of `packageName` if given). */
async function findCached(root: string, packageName: string | undefined): Promise<GuestKernel | null> {
  const names = (await readdir(root).catch(() => [] as string[])).filter((n) => n.endsWith(`-${RECIPE}`) && (!packageName || n === `${packageName}-${RECIPE}`));
  const kernels = (await Promise.all(names.map((n) => readKernel(join(root, n))))).filter((k): k is GuestKernel => k !== null);
  kernels.sort((a, b) => compareVersions(b.version, a.version));
  return kernels[0] ?? null;
}

/** Compare dotted/dashed version strings numerically where possible. */
function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/);
  const pb = b.split(/[.-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? '';
    const y = pb[i] ?? '';
    const d = /^\d+$/.test(x) && /^\d+$/.test(y) ? Number(x) - Number(y) : x.localeCompare(y);
    if (d !== 0) return d;
  }
  return 0;
}

/** `linux-image-amd64`'s dependency, else the newest `linux-image-6.1.0-N-amd64` apt knows. */
async function pickKernelPackage(): Promise<string> {
  const depends = await run(['apt-cache', 'depends', 'linux-image-amd64']);
  const fromMeta = /Depends:\s*(linux-image-[0-9][^\s]*-amd64)\s*$/m.exec(depends.stdout)?.[1];
  if (fromMeta) return fromMeta;
  const search = await run(['apt-cache', 'search', '--names-only', '^linux-image-6\\.1\\.0-[0-9]+-amd64$']);
  const names = search.stdout.split('\n').map((l) => l.split(' ')[0]!).filter((n) => /^linux-image-6\.1\.0-\d+-amd64$/.test(n));
  names.sort((a, b) => compareVersions(b, a));
  if (!names[0]) {
    throw new RamifyError('RUNTIME_ERROR', 'no Debian guest kernel package found: run `apt-get update`, then retry (looked for linux-image-amd64 and linux-image-6.1.0-*-amd64)');
  }
  return names[0];
}
