/**
 * The built-in `base` template and the Debian packages every root template needs.
 */
import type { TemplateSpec } from '@ramify/contracts';

/** Debian release every root template is built from. */
export const DEBIAN_SUITE = 'bookworm';

/** Default apt sources (one-line format) for `mmdebstrap`: the release, its updates, and security fixes. */
export const DEFAULT_DEBIAN_MIRRORS: readonly string[] = [
  'deb http://deb.debian.org/debian bookworm main',
  'deb http://deb.debian.org/debian bookworm-updates main',
  'deb http://deb.debian.org/debian-security bookworm-security main',
];

/**
 * Packages in every root template, whatever its spec says: the agent runs on `nodejs` under `tini`;
 * `procps`, `iproute2` and `hostname` are what the agent uses to apply a sandbox's identity;
 * `ca-certificates` and `netbase` (/etc/services, /etc/protocols) make ordinary networking work;
 * `inotify-tools` gives the agent `inotifywait`, which reads the kernel's inotify events for `files.watchDir`.
 */
export const REQUIRED_PACKAGES: readonly string[] = ['ca-certificates', 'hostname', 'inotify-tools', 'iproute2', 'netbase', 'nodejs', 'procps', 'socat', 'tini'];

/**
 * The built-in `base` template: used for `from: base` (and `create` without a template) until someone
 * builds their own `base`. `rsync` serves `rsync -e 'ssh -p 2222'` through the SSH gateway (it runs on
 * both ends); `openssh-client` gives `scp -O` (legacy scp runs `scp -t` at the far end) and git over SSH.
 */
export const BASE_TEMPLATE_SPEC: TemplateSpec = {
  name: 'base',
  packages: ['curl', 'git', 'less', 'openssh-client', 'python3', 'python3-pip', 'python3-venv', 'rsync', ...REQUIRED_PACKAGES],
};
