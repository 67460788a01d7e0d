/**
 * The `-kernel` file of a QEMU process that does not boot: a restore, a fork, the loader of a checkpoint.
 *
 * QEMU reads the whole `-kernel` file into its heap at start and keeps it for the life of the process (the
 * firmware fetches it over fw_cfg on a fresh boot). For Debian's bzImage that is ~7.9 MiB of private memory
 * in every microVM, although only a fresh boot's firmware ever reads it: a restored guest is already
 * running its kernel, and it never boots again (QEMU runs with `-no-reboot`). Those processes get a stub
 * instead: the bzImage's real-mode setup part (the header QEMU parses, so the machine it builds is the same
 * one, fw_cfg entries and option ROMs included) and one page of the protected-mode payload.
 * Figure: `bench/fork-economics` (the microVM's private memory per fork).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { RamifyError } from '@ramify/contracts';

/** Payload bytes kept after the setup part (any non-empty size passes QEMU's checks). */
const STUB_PAYLOAD_BYTES = 4096;

/** Where the Linux x86 boot protocol keeps the setup size and its magic (Documentation/x86/boot.rst). */
const SETUP_SECTS_OFFSET = 0x1f1;
const HEADER_MAGIC_OFFSET = 0x202;
const HEADER_MAGIC = 0x53726448; // "HdrS"

/**
 * The stub of the bzImage at `kernelPath`: `<kernelPath>.restore-stub`, written next to it once (atomically,
 * safe from several processes) and reused.
 * @returns the stub's absolute path.
 * @throws RamifyError `RUNTIME_ERROR` when `kernelPath` is not a bzImage (no boot protocol header).
 */
export async function restoreKernelStub(kernelPath: string): Promise<string> {
  const stubPath = `${kernelPath}.restore-stub`;
  if (existsSync(stubPath)) return stubPath;
  const file = await open(kernelPath, 'r');
  let stub: Buffer;
  try {
    const header = Buffer.alloc(HEADER_MAGIC_OFFSET + 4);
    const { bytesRead } = await file.read(header, 0, header.length, 0);
    if (bytesRead < header.length || header.readUInt32LE(HEADER_MAGIC_OFFSET) !== HEADER_MAGIC) {
      throw new RamifyError('RUNTIME_ERROR', `${kernelPath} is not a bzImage (no Linux boot protocol header): cannot derive the restore kernel stub`);
    }
    // setup_sects 0 means 4 (boot protocol); the boot sector comes on top.
    const setupBytes = ((header[SETUP_SECTS_OFFSET] || 4) + 1) * 512;
    stub = Buffer.alloc(setupBytes + STUB_PAYLOAD_BYTES);
    const read = await file.read(stub, 0, stub.length, 0);
    if (read.bytesRead < stub.length) throw new RamifyError('RUNTIME_ERROR', `${kernelPath} is shorter than its own setup header says`);
  } finally {
    await file.close();
  }
  const tmp = `${stubPath}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, stub);
    await rename(tmp, stubPath);
  } finally {
    await rm(tmp, { force: true });
  }
  return stubPath;
}
