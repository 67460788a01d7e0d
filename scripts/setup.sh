#!/usr/bin/env bash
# Ramify setup on Debian 12 as root: system packages, npm packages, build, the `ramify` command,
# the daemon, and the templates. Safe to run again (everything is cached).
#   bash scripts/setup.sh            install + build + start `ramify serve` + build templates
#   bash scripts/setup.sh --deps     install + build only (what CI and `npm test` need)
#   add --browser (either mode) to install Debian's chromium too: the real-browser ingress test
#   (packages/daemon/src/real-ingress-browser.test.ts) runs with it and is skipped, saying why, without it.
#   add --postgres to keep the daemon's state in Postgres instead of SQLite: Debian's postgresql-15 is
#   installed and started, a `ramify` role and database made, and their URL written to
#   $RAMIFY_HOME/database-url (0600), which the daemon started here uses (docs/design/STORE.md).
#   --deps installs postgresql-15 too (its tests start their own throwaway servers), but starts nothing.
#   bash scripts/setup.sh --command  only (re)write /usr/local/bin/ramify to run this clone's build (built already)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=all
browser=
postgres=
for arg in "$@"; do
  case "$arg" in
    --deps) mode=--deps ;;
    --browser) browser=1 ;;
    --postgres) postgres=1 ;;
    --command) mode=--command ;;
    *) echo "setup: unknown option '$arg' (--deps, --browser, --postgres, --command)" >&2; exit 2 ;;
  esac
done

# /usr/local/bin/ramify: a script rather than a link, so that when this clone is moved or deleted
# `ramify` says so and how to get it back, instead of the shell's "No such file or directory".
write_command() {
  chmod +x packages/cli/dist/main.js
  rm -f /usr/local/bin/ramify
  {
    echo '#!/bin/bash'
    echo "# Written by scripts/setup.sh of the Ramify clone at $PWD: runs that clone's build."
    printf 'main=%q\n' "$PWD/packages/cli/dist/main.js"
    echo 'if [ ! -f "$main" ]; then'
    echo '  echo "ramify: this command runs $main, which is gone (the clone moved, deleted or not built); in a built clone of Ramify, '"'"'bash scripts/setup.sh --command'"'"' points it there (or '"'"'bash scripts/setup.sh'"'"' sets everything up)" >&2'
    echo '  exit 127'
    echo 'fi'
    echo 'exec "$main" "$@"'
  } > /usr/local/bin/ramify
  chmod 755 /usr/local/bin/ramify
}

step() { printf '\n==> %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then echo "setup: run as root (gVisor, namespaces and nftables need it)" >&2; exit 1; fi

if [ "$mode" = "--command" ]; then
  if [ ! -f packages/cli/dist/main.js ]; then
    echo "setup: this clone is not built (no packages/cli/dist/main.js): run 'npm ci && npm run build' first, or 'bash scripts/setup.sh' for everything" >&2
    exit 1
  fi
  write_command
  echo "setup: /usr/local/bin/ramify runs $PWD/packages/cli/dist/main.js"
  exit 0
fi

# runsc and QEMU come from Debian's bookworm-backports, each pinned to one release: bookworm's own
# runsc 20221219 loses a sandbox checkpointed with a TCP listener or connection
# (docs/design/RUNTIME-GVISOR.md); QEMU 10.0 replaces bookworm's 7.2 (docs/design/RUNTIME-MICROVM.md).
# Images belong to the release that made them: changing either rebuilds the templates.
RUNSC_RELEASE='0.0~20240729.0'
QEMU_RELEASE='10.0'
apt_updated=
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  step "add Debian's bookworm-backports (for runsc $RUNSC_RELEASE and QEMU $QEMU_RELEASE)"
  cat > /etc/apt/sources.list.d/ramify-bookworm-backports.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi
if [ "$(dpkg-query -W -f='${Version}' runsc 2>/dev/null | cut -d- -f1)" != "$RUNSC_RELEASE" ]; then
  step "apt-get install runsc $RUNSC_RELEASE (bookworm-backports)"
  apt-get update -q && apt_updated=1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t bookworm-backports "runsc=$RUNSC_RELEASE-*"
fi
qemu_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null | sed -E 's/^[0-9]+://; s/^([0-9]+\.[0-9]+).*/\1/'; }
if [ "$(qemu_version qemu-system-x86)" != "$QEMU_RELEASE" ] || [ "$(qemu_version qemu-utils)" != "$QEMU_RELEASE" ]; then
  step "apt-get install QEMU $QEMU_RELEASE (bookworm-backports)"
  [ -n "$apt_updated" ] || { apt-get update -q && apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t bookworm-backports \
    "qemu-system-x86=1:$QEMU_RELEASE.*" "qemu-system-common=1:$QEMU_RELEASE.*" "qemu-system-data=1:$QEMU_RELEASE.*" "qemu-utils=1:$QEMU_RELEASE.*"
fi

need=()
# gcc and libc6-dev: the agent's tests compile a pty stand-in for a virtio port (packages/agent/test-native).
# libnss-myhostname: resolves `*.localhost` (the ingress's default URLs) to loopback for every program
# on the host, Node's fetch and getaddrinfo included, not just curl and browsers (its postinst adds
# `myhostname` to the hosts line of /etc/nsswitch.conf).
# tmux: the real test of `ramify sandbox shell` drives the CLI in a tmux session (real-shell-tmux.test.ts).
# openssh-client and rsync: the SSH gateway's tests drive it with the real ssh, scp, sftp and rsync.
# postgresql-15: the store's conformance suite and the daemon's Postgres tests start throwaway servers
# of it (--deps); --postgres runs Debian's own cluster of it for the daemon.
pg=
if [ "$mode" = "--deps" ] || [ -n "$postgres" ]; then pg=postgresql-15; fi
for pkg in mmdebstrap nftables iproute2 util-linux gcc libc6-dev ca-certificates \
           ulogd2 ulogd2-json busybox-static cpio e2fsprogs procps python3 openssl libnss-myhostname tmux \
           openssh-client rsync \
           ${browser:+chromium} ${pg}; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  [ -n "$apt_updated" ] || apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi

# npm ci only when the lockfile or Node changed since the last install (it takes ~1 min and rebuilds
# native modules); the stamp is written after a successful install.
stamp="$(sha256sum package-lock.json | cut -d' ' -f1) $(node --version)"
if [ -d node_modules ] && [ "$(cat node_modules/.ramify-install-stamp 2>/dev/null)" = "$stamp" ]; then
  step "npm packages: up to date with package-lock.json (skipping npm ci)"
else
  step "npm ci"
  npm ci --no-audit --no-fund
  echo "$stamp" > node_modules/.ramify-install-stamp
fi
step "build"
npm run build

step "prepare the microVM runtime (Debian guest kernel, KVM or TCG)"
# Without --deps, `ramify serve --detach` below prints the accelerator and its reason (e.g. QEMU's
# message when the KVM test guest failed): say it once, there.
if [ "$mode" = "--deps" ]; then node scripts/prepare-microvm.mjs; else node scripts/prepare-microvm.mjs --brief; fi

if [ -f packages/cli/dist/main.js ]; then write_command; fi

if [ -n "$postgres" ]; then
  step "Postgres for the daemon's state (Debian's cluster 15/main, role and database 'ramify')"
  pg_lsclusters -h 2>/dev/null | grep -q '^15 main ' || pg_createcluster 15 main
  pg_ctlcluster 15 main start 2>/dev/null || pg_ctlcluster 15 main status >/dev/null
  url_file="${RAMIFY_HOME:-/var/lib/ramify}/database-url"
  if [ ! -s "$url_file" ]; then
    mkdir -p "$(dirname "$url_file")" && chmod 700 "$(dirname "$url_file")"
    password="$(openssl rand -hex 16)"
    port="$(pg_lsclusters -h | awk '$1 == "15" && $2 == "main" { print $3 }')"
    # The password reaches psql through its environment, never an argv (ps shows argv).
    RAMIFY_PG_PASSWORD="$password" runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 -p "$port" <<'SQL'
\getenv pw RAMIFY_PG_PASSWORD
SELECT format('CREATE ROLE ramify LOGIN PASSWORD %L', :'pw') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ramify') \gexec
SELECT format('ALTER ROLE ramify PASSWORD %L', :'pw') \gexec
SELECT 'CREATE DATABASE ramify OWNER ramify' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'ramify') \gexec
SQL
    (umask 077 && echo "postgres://ramify:$password@127.0.0.1:$port/ramify" > "$url_file")
  fi
  echo "state in Postgres: the URL is in $url_file (ramify serve --database-url \"\$(cat $url_file)\")"
fi

[ "$mode" = "--deps" ] && exit 0

step "start ramify serve (log: ${RAMIFY_HOME:-/var/lib/ramify}/serve.log)"
# A daemon from an earlier setup (maybe another clone) is stopped first, so the daemon matches this build;
# sandboxes keep running and the new daemon re-attaches them.
if pkill -f '(bin/ramify|cli/dist/main\.js) serve'; then
  echo "stopped the running ramify serve (an earlier build); starting this one"
  for _ in $(seq 1 40); do pgrep -f '(bin/ramify|cli/dist/main\.js) serve' >/dev/null || break; sleep 0.25; done
fi
if [ -n "$postgres" ]; then RAMIFY_DATABASE_URL="$(cat "${RAMIFY_HOME:-/var/lib/ramify}/database-url")" ramify serve --detach; else ramify serve --detach; fi
step "build templates for gVisor and the microVM runtime (first time ~3 min: Debian packages are fetched once, then cached)"
ramify template build base
ramify template build examples/templates/python-tests.yaml
