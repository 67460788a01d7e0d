/**
 * The guest's initramfs: a static busybox, the kernel modules the generic Debian kernel needs to reach
 * its virtio disk, network, serial port and RNG and to mount ext4 (in dependency order), and
 * {@link INIT_SCRIPT}. Archives are `newc` cpio made by the host's `cpio` from argv (file list on stdin).
 * Per boot, a second tiny archive with `/ramify/boot.conf` is appended (the kernel unpacks
 * concatenated archives in order).
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { RamifyError } from '@ramify/contracts';
import { INIT_SCRIPT, bootConfText, type GuestBootConfig } from './guest-init.js';
import { runChecked } from './host-tools.js';

/**
 * Modules loaded at boot (their dependencies are added in front automatically). `virtio_balloon` lets
 * the host set each sandbox's memory limit below the image's RAM size (see memory-limit.ts).
 */
export const GUEST_MODULES: readonly string[] = [
  'virtio_pci', 'virtio_blk', 'virtio_net', 'virtio_console', 'virtio_rng', 'virtio_balloon', 'crc32c_generic', 'ext4',
];

const normal = (name: string): string => name.replaceAll('-', '_');

/** Every `*.ko` under `dir`, by module name (`-` read as `_`). */
async function indexModules(dir: string, index = new Map<string, string>()): Promise<Map<string, string>> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await indexModules(path, index);
    else if (entry.name.endsWith('.ko')) index.set(normal(entry.name.slice(0, -3)), path);
  }
  return index;
}

/** The `depends=` list of a module, read from its `.modinfo` strings. */
function dependsOf(ko: Buffer): string[] {
  const marker = Buffer.from('\0depends=');
  const at = ko.indexOf(marker);
  if (at < 0) return [];
  const start = at + marker.length;
  const end = ko.indexOf(0, start);
  return ko.subarray(start, end).toString('latin1').split(',').filter(Boolean).map(normal);
}

/**
 * Resolve `wanted` against the kernel's module tree `modulesDir` (`lib/modules/<version>`): the `.ko`
 * paths of the modules and their dependencies, dependencies first.
 * Rejects `RUNTIME_ERROR` when a module is missing (e.g. compressed `.ko.xz` modules, not supported).
 */
export async function resolveModules(modulesDir: string, wanted: readonly string[]): Promise<string[]> {
  const index = await indexModules(modulesDir);
  const ordered: string[] = [];
  const seen = new Set<string>();
  const visit = async (name: string): Promise<void> => {
    if (seen.has(name)) return;
    seen.add(name);
    const path = index.get(name);
    if (!path) throw new RamifyError('RUNTIME_ERROR', `the guest kernel has no module '${name}' under ${modulesDir}`);
    for (const dep of dependsOf(await readFile(path))) await visit(dep);
    ordered.push(path);
  };
  for (const name of wanted) await visit(normal(name));
  return ordered;
}

/** All files and directories under `dir`, relative, parents before children (cpio's input). */
async function listTree(dir: string, base = dir, out: string[] = []): Promise<string[]> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    out.push(relative(base, path));
    if (entry.isDirectory()) await listTree(path, base, out);
  }
  return out;
}

/** Write a newc cpio archive of `dir`'s contents (owned by root) to `outPath`. */
export async function cpioArchive(dir: string, outPath: string): Promise<void> {
  const files = await listTree(dir);
  const child = spawn('cpio', ['--quiet', '-o', '-H', 'newc', '-R', '0:0'], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number>((resolve, reject) => {
    child.on('error', (e) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot run cpio: ${e.message} (install it with: apt-get install -y cpio)`)));
    child.on('close', (code) => resolve(code ?? -1));
  });
  child.stdin!.end(files.join('\n') + '\n');
  await pipeline(child.stdout!, createWriteStream(outPath));
  const code = await exited;
  if (code !== 0) throw new RamifyError('RUNTIME_ERROR', `cpio failed (exit ${code}): ${stderr.trim()}`);
}

export interface BaseInitramfsInput {
  /** `lib/modules/<version>` of the unpacked kernel package. */
  modulesDir: string;
  /** A statically linked busybox (Debian `busybox-static`: /bin/busybox). */
  busyboxPath: string;
  outPath: string;
}

/** Build the base initramfs (busybox, modules, `/init`) into `outPath`. Returns the module files loaded, in order. */
export async function buildBaseInitramfs(input: BaseInitramfsInput): Promise<string[]> {
  const modules = await resolveModules(input.modulesDir, GUEST_MODULES);
  const stage = await mkdtemp(`${input.outPath}.stage-`);
  try {
    for (const d of ['bin', 'lib/modules', 'ramify', 'proc', 'sys', 'dev', 'newroot']) await mkdir(join(stage, d), { recursive: true });
    await copyFile(input.busyboxPath, join(stage, 'bin/busybox'));
    await chmod(join(stage, 'bin/busybox'), 0o755);
    const applets = (await runChecked([input.busyboxPath, '--list'])).split('\n').map((a) => a.trim()).filter((a) => a && a !== 'busybox');
    for (const applet of applets) await symlink('busybox', join(stage, 'bin', applet));
    const names: string[] = [];
    for (const path of modules) {
      const name = path.split('/').pop()!;
      await copyFile(path, join(stage, 'lib/modules', name));
      names.push(name);
    }
    await writeFile(join(stage, 'ramify/modules'), names.join('\n') + '\n');
    await writeFile(join(stage, 'init'), INIT_SCRIPT, { mode: 0o755 });
    await cpioArchive(stage, input.outPath);
    return names;
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/**
 * Write the initrd of one boot: `baseInitrd` followed by an archive holding `/ramify/boot.conf` for
 * `config` and `/ramify/resolv.conf` (`resolvConf`, may be empty).
 */
export async function composeBootInitrd(baseInitrd: string, config: GuestBootConfig, resolvConf: string, outPath: string): Promise<void> {
  const stage = await mkdtemp(outPath + '.stage-');
  try {
    await mkdir(join(stage, 'ramify'));
    await writeFile(join(stage, 'ramify/boot.conf'), bootConfText(config));
    await writeFile(join(stage, 'ramify/resolv.conf'), resolvConf);
    const extra = outPath + '.extra';
    await cpioArchive(stage, extra);
    await copyFile(baseInitrd, outPath);
    await pipeline(createReadStream(extra), createWriteStream(outPath, { flags: 'a' }));
    await rm(extra, { force: true });
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}
