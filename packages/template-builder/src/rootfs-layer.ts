/**
 * Layer A: a Debian root filesystem made by `mmdebstrap --variant=minbase` plus a package set.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DEBIAN_SUITE } from './base-spec.js';
import { runTool } from './run-tool.js';

export interface DebootstrapOptions {
  /** Packages to install on top of minbase (may be empty). */
  packages: readonly string[];
  /** apt source lines, e.g. `deb http://deb.debian.org/debian bookworm main`. */
  mirrors: readonly string[];
  /** Path of mmdebstrap; default `mmdebstrap`. */
  mmdebstrap?: string;
  /** Each line of mmdebstrap's output. */
  onLine?: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * The mmdebstrap argv that builds `targetDir` (which must not exist or be empty). Recommends are not
 * installed and man pages and docs (except copyright files) are left out; both settings stay in the
 * rootfs's apt/dpkg configuration, so setup commands that install packages get the same treatment.
 */
export function mmdebstrapArgv(targetDir: string, options: DebootstrapOptions): string[] {
  const argv = [
    options.mmdebstrap ?? 'mmdebstrap',
    '--variant=minbase',
    '--mode=root',
    '--format=directory',
    '--aptopt=APT::Install-Recommends "false"',
    '--dpkgopt=path-exclude=/usr/share/man/*',
    '--dpkgopt=path-exclude=/usr/share/doc/*',
    '--dpkgopt=path-include=/usr/share/doc/*/copyright',
  ];
  if (options.packages.length > 0) argv.push(`--include=${[...options.packages].sort().join(',')}`);
  argv.push(DEBIAN_SUITE, targetDir, ...options.mirrors);
  return argv;
}

/**
 * Build a Debian root filesystem into `targetDir` with mmdebstrap (as root; tens of seconds, needs
 * the apt mirrors). Rejects `TEMPLATE_BUILD_FAILED` with the last output lines.
 */
export async function debootstrap(targetDir: string, options: DebootstrapOptions): Promise<void> {
  await runTool(mmdebstrapArgv(targetDir, options), { step: 'rootfs', onLine: options.onLine, signal: options.signal, debianPackage: 'mmdebstrap' });
}

/** The host's Debian architecture (`dpkg --print-architecture`), falling back to Node's name for it. */
export async function hostDebianArch(): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('dpkg', ['--print-architecture']);
    return stdout.trim();
  } catch {
    return ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
  }
}
