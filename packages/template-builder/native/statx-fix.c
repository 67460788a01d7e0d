/*
 * Ramify statx shim, preloaded into every template via /etc/ld.so.preload.
 *
 * Why: the gVisor shipped by Debian 12 (runsc 0.0~20221219) rejects statx() calls that carry
 * AT_NO_AUTOMOUNT with EINVAL, which breaks coreutils `ls -l` and `stat`. Automount points do not
 * exist inside a sandbox, so dropping the flag changes nothing else. Newer gVisor accepts the flag;
 * the shim is then a harmless pass-through.
 *
 * It calls the raw syscall (no dlsym), so the only libc symbol it needs is syscall@GLIBC_2.2.5 and
 * a shim compiled on any glibc host loads in the template's older or newer glibc.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_NO_AUTOMOUNT
#define AT_NO_AUTOMOUNT 0x800
#endif

__attribute__((visibility("default")))
int statx(int dirfd, const char *restrict pathname, int flags, unsigned int mask, struct statx *restrict buf) {
  return (int)syscall(SYS_statx, dirfd, pathname, flags & ~AT_NO_AUTOMOUNT, mask, buf);
}
