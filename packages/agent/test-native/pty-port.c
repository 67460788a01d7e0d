/*
 * Test stand-in for a virtio-serial port (used only by the agent's tests): creates a pseudo-terminal
 * in raw mode, links its slave (a real character device) at LINK, and relays bytes between the master
 * and this program's stdin/stdout, the way QEMU relays a port to its host socket. When stdin ends (the
 * "host" went away) it removes LINK first and then exits, which hangs the pty up: the slave's readers
 * see EOF, its writers EIO, and a new open of LINK fails with ENOENT until the next instance links it.
 *   usage: pty-port LINK
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= w;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pty-port LINK\n");
    return 2;
  }
  const char *link_path = argv[1];
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    perror("pty-port: posix_openpt");
    return 1;
  }
  const char *slave_path = ptsname(master);
  /* Hold one slave descriptor so the pty never reports a hangup while the agent reopens it. */
  int slave = open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
  struct termios t;
  if (slave < 0 || tcgetattr(slave, &t) != 0) {
    perror("pty-port: slave");
    return 1;
  }
  cfmakeraw(&t);
  if (tcsetattr(slave, TCSANOW, &t) != 0) {
    perror("pty-port: tcsetattr");
    return 1;
  }
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", link_path, (int)getpid());
  unlink(tmp);
  if (symlink(slave_path, tmp) != 0 || rename(tmp, link_path) != 0) {
    perror("pty-port: link");
    return 1;
  }
  static char buf[65536];
  struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = master, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break; /* The host went away. */
      if (write_all(master, buf, n) != 0) break;
    }
    if (fds[1].revents) {
      ssize_t n = read(master, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) break;
      if (write_all(1, buf, n) != 0) break;
    }
  }
  unlink(link_path); /* Before the hangup, so a reopen after EOF cannot reach this dead pty. */
  return 0;
}
