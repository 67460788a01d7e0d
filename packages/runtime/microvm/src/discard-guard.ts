/**
 * Keeps a restored VM from changing the image RAM file it maps copy-on-write.
 *
 * A restore maps the image's `ram` file `MAP_PRIVATE` (forks share its pages). When the guest hands
 * a page to the virtio balloon, QEMU "discards" it with `fallocate(PUNCH_HOLE|KEEP_SIZE)` on the
 * backing file and then `madvise(MADV_DONTNEED)` — QEMU 7.2 does the hole punch even for a private
 * mapping, which zeroes that page *in the image file*, under every other fork of the image and every
 * later restore. Measured here: one fork inflating its balloon made a sibling fork's kernel panic. A
 * guest can post any page frame on the balloon's queue, so this is also a way for one sandbox to
 * corrupt others.
 *
 * The guard: QEMU of a restored VM runs under a seccomp filter (installed by a few lines of Perl —
 * `perl-base` is Essential on Debian — which then exec the usual `nsenter … qemu …` argv, so the pid
 * stays QEMU's) that makes exactly the balloon's discard — `fallocate` with mode
 * `PUNCH_HOLE|KEEP_SIZE` and a length of one 4 KiB page — return success without doing anything.
 * QEMU then drops its private copy of the page with `MADV_DONTNEED` (host memory is still freed) and
 * the image file is never written. The qcow2 overlay's own hole punches are whole clusters (64 KiB)
 * and pass through untouched.
 */

/** x86-64 `AUDIT_ARCH_X86_64`. */
const AUDIT_ARCH_X86_64 = 0xc000003e;
/** x86-64 syscall number of `fallocate`. */
const NR_FALLOCATE = 285;
/** `FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE`. */
const PUNCH_HOLE_KEEP_SIZE = 0x3;
/** The balloon's page size (`VIRTIO_BALLOON_PFN_SHIFT`). */
const BALLOON_PAGE_BYTES = 4096;
const SECCOMP_RET_ALLOW = 0x7fff0000;
/** `SECCOMP_RET_ERRNO` with errno 0: the syscall is skipped and returns 0. */
const SECCOMP_RET_SKIP_SUCCESS = 0x00050000;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_RET_K = 0x06;

/** One classic-BPF instruction (`struct sock_filter`: u16 code, u8 jt, u8 jf, u32 k). */
function insn(code: number, jt: number, jf: number, k: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(code, 0);
  b.writeUInt8(jt, 2);
  b.writeUInt8(jf, 3);
  b.writeUInt32LE(k >>> 0, 4);
  return b;
}

/**
 * The seccomp program (`struct seccomp_data` offsets: nr 0, arch 4, args[i] at 16 + 8i, little endian):
 * skip `fallocate(fd, 3, offset, 4096)`, allow everything else.
 */
export function discardGuardFilter(): Buffer {
  const allow = 11;
  const prog = [
    insn(BPF_LD_W_ABS, 0, 0, 4), // 0: arch
    insn(BPF_JEQ_K, 0, allow - 2, AUDIT_ARCH_X86_64), // 1
    insn(BPF_LD_W_ABS, 0, 0, 0), // 2: syscall number
    insn(BPF_JEQ_K, 0, allow - 4, NR_FALLOCATE), // 3
    insn(BPF_LD_W_ABS, 0, 0, 16 + 8 * 1), // 4: mode
    insn(BPF_JEQ_K, 0, allow - 6, PUNCH_HOLE_KEEP_SIZE), // 5
    insn(BPF_LD_W_ABS, 0, 0, 16 + 8 * 3), // 6: len, low 32 bits
    insn(BPF_JEQ_K, 0, allow - 8, BALLOON_PAGE_BYTES), // 7
    insn(BPF_LD_W_ABS, 0, 0, 16 + 8 * 3 + 4), // 8: len, high 32 bits
    insn(BPF_JEQ_K, 0, allow - 10, 0), // 9
    insn(BPF_RET_K, 0, 0, SECCOMP_RET_SKIP_SUCCESS), // 10
    insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW), // 11
  ];
  return Buffer.concat(prog);
}

/**
 * Perl: `prctl(PR_SET_NO_NEW_PRIVS)`, `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)` with the
 * program given in hex as the first argument, then exec the rest of argv (same pid). Dies with a
 * message on stderr (QEMU's log) when a step fails.
 */
const LAUNCHER = [
  'my $p = pack("H*", shift @ARGV);',
  'my $f = pack("S x6 P", length($p) / 8, $p);',
  'syscall(157, 38, 1, 0, 0, 0) == 0 or die "ramify discard guard: PR_SET_NO_NEW_PRIVS failed: $!\\n";',
  'syscall(157, 22, 2, $f, 0, 0) == 0 or die "ramify discard guard: seccomp filter refused: $!\\n";',
  'exec { $ARGV[0] } @ARGV or die "ramify discard guard: cannot exec $ARGV[0]: $!\\n";',
].join(' ');

/** argv prefix that runs the rest of an argv under the discard guard (`[...discardGuardArgv(perl), 'qemu-system-x86_64', ...]`). */
export function discardGuardArgv(perlPath = 'perl'): string[] {
  return [perlPath, '-e', LAUNCHER, discardGuardFilter().toString('hex')];
}
