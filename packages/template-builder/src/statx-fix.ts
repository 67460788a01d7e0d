/**
 * The statx shim: a tiny shared library preloaded into every template (via /etc/ld.so.preload) that
 * clears `AT_NO_AUTOMOUNT` before calling the real `statx` syscall. Debian 12's gVisor rejects that
 * flag with EINVAL, which breaks `ls -l` and `stat`. See `native/statx-fix.c`.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { runTool } from './run-tool.js';

/** Host path of the shim's C source, shipped in this package. */
export const STATX_FIX_SOURCE_PATH = fileURLToPath(new URL('../native/statx-fix.c', import.meta.url));

/** Where the shim lives inside a template. */
export const STATX_FIX_GUEST_PATH = '/usr/lib/ramify/statx-fix.so';

/** sha256 (hex) of the shim's C source (an input of the `files` layer key). */
export async function statxFixSourceSha256(): Promise<string> {
  return createHash('sha256').update(await readFile(STATX_FIX_SOURCE_PATH)).digest('hex');
}

export interface CompileStatxFixOptions {
  /** C compiler; default `cc`. */
  cc?: string;
  onLine?: (line: string) => void;
}

/**
 * Compile the shim into `outputPath` with the host's C compiler. The library needs nothing from libc
 * but `syscall`, so it loads in any glibc of the same architecture.
 * Rejects `TEMPLATE_BUILD_FAILED` when the compiler is missing or fails.
 */
export async function compileStatxFix(outputPath: string, options: CompileStatxFixOptions = {}): Promise<void> {
  await runTool([options.cc ?? 'cc', '-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-o', outputPath, STATX_FIX_SOURCE_PATH], {
    step: 'compile statx shim',
    onLine: options.onLine,
    debianPackage: 'gcc',
  });
}
