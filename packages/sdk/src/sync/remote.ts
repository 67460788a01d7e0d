/**
 * The sandbox side of a sync, through the files and commands APIs: listing with GNU `find`, hashing
 * with `sha256sum`, and moving many files at once as one tar (packed and unpacked here with
 * `tar-stream`; GNU tar in the sandbox, which every Debian template has). Lists of paths go to the
 * commands as a file written first and read as stdin, NUL-separated; paths are passed as `./rel`, so
 * none is read as an option.
 *
 * Every change the sync makes in the sandbox is guarded: the script first checks each path is still
 * what the pass saw (type, size, mtime), and leaves the ones that are not alone (reported `skip`), so a
 * change made in the sandbox meanwhile is never overwritten: the next pass sees it.
 */
import { randomBytes } from 'node:crypto';
import type { Sandbox } from '../sandbox.js';
import { RamifyError } from '../errors.js';
import { FIND_FORMAT, parseFind, type TreeEntry } from './tree.js';

/** A change to make in the sandbox. `expect`: what the path must still be ({@link expectation}). */
export type RemoteOp =
  | { op: 'put'; path: string; expect: string }
  | { op: 'del'; path: string; expect: string }
  | { op: 'mv'; path: string; expect: string; to: string };

/** What a path is expected to be in the guard: `-` absent, `d` a directory, `f:SIZE:MTIME` / `l:SIZE:MTIME`. */
export function expectation(entry: TreeEntry | undefined): string {
  if (!entry) return '-';
  if (entry.kind === 'dir') return 'd';
  return `${entry.kind === 'file' ? 'f' : 'l'}:${entry.size}:${entry.mtime}`;
}

/**
 * The guard + apply script (bash): reads `op\0path\0expect\0to\0` records from the file `$LIST` (`to`
 * empty but for `mv`). Whole arrays are read with `mapfile` (bash's `read` costs ~0.2 ms a field in a
 * sandbox, and every program started ~30-50 ms: the script starts as few as it can).
 */
const APPLY_SCRIPT = `
set -u
cd -- "$ROOT" || exit 3
tmp=$LIST
mapfile -d '' -t R < "$tmp"
declare -A cur ok
paths=()
for ((i = 0; i + 3 < \${#R[@]}; i += 4)); do paths+=("\${R[i+1]}"); done
if [ \${#paths[@]} -gt 0 ]; then
  printf '%s\\0' "\${paths[@]}" | find -files0-from - -maxdepth 0 -printf '%y\\0%p\\0%s\\0%T@\\0' 2>/dev/null > "$tmp"
  mapfile -d '' -t C < "$tmp"
  for ((i = 0; i + 3 < \${#C[@]}; i += 4)); do
    case "\${C[i]}" in d) cur[\${C[i+1]}]=d ;; f) cur[\${C[i+1]}]="f:\${C[i+2]}:\${C[i+3]}" ;; l) cur[\${C[i+1]}]="l:\${C[i+2]}:\${C[i+3]}" ;; *) cur[\${C[i+1]}]="?" ;; esac
  done
fi
puts=()
for ((i = 0; i + 3 < \${#R[@]}; i += 4)); do
  op=\${R[i]}; p=\${R[i+1]}
  if [ -z "\${ok[$p]+x}" ]; then
    if [ "\${cur[$p]:--}" = "\${R[i+2]}" ]; then ok[$p]=1; else ok[$p]=0; printf 'skip\\0%s\\0' "$p"; fi
  fi
  [ "\${ok[$p]}" = 1 ] || continue
  case "$op" in
    mv) mv -fT -- "$p" "\${R[i+3]}" ;;
    del) if [ -d "$p" ] && [ ! -L "$p" ]; then rmdir -- "$p" 2>/dev/null || printf 'kept\\0%s\\0' "$p"; else rm -f -- "$p"; fi ;;
    put) puts+=("\${p#./}") ;;
  esac
done
rc=0
if [ \${#puts[@]} -gt 0 ]; then
  printf '%s\\0' "\${puts[@]}" > "$tmp"
  tar -x -f "$TAR" --null --verbatim-files-from --no-recursion --no-same-owner --overwrite -T "$tmp" || rc=$?
  printf './%s\\0' "\${puts[@]}" | find -files0-from - -maxdepth 0 -printf 'stat\\0${FIND_FORMAT}' 2>/dev/null
fi
rm -f -- "$tmp" "$TAR"
exit $rc
`;

/** The sandbox side of one sync: `root` is the absolute remote directory. */
export class RemoteTree {
  constructor(private readonly sbx: Sandbox, readonly root: string) {}

  /**
   * Make sure `root` is a directory (created with its parents when missing).
   * @throws RamifyError NOT_A_DIRECTORY when it is a file (nothing is changed).
   */
  async ensureRoot(): Promise<void> {
    const info = await this.sbx.files.getInfo(this.root).catch((err: unknown) => {
      if (err instanceof RamifyError && err.code === 'FILE_NOT_FOUND') return undefined;
      throw err;
    });
    if (!info) await this.sbx.files.makeDir(this.root);
    else if (info.type !== 'dir') throw new RamifyError('NOT_A_DIRECTORY', `cannot sync into ${this.root} in the sandbox: it is a ${info.type}, not a directory (nothing was changed)`, { path: this.root });
  }

  /** Every entry under the root (not entering `.git`, `node_modules`, `.ramify`; other ignores are the caller's). */
  async scan(): Promise<Map<string, TreeEntry>> {
    const r = await this.run(`cd -- "$ROOT" && find . -mindepth 1 \\( -name .git -o -name node_modules -o -name .ramify \\) -prune -o -printf '${FIND_FORMAT}'`);
    return parseFind(r);
  }

  /** The entries at `paths` (absent ones are left out), and everything under those of `expand` that are directories. */
  async stat(paths: readonly string[], expand: readonly string[] = []): Promise<Map<string, TreeEntry>> {
    if (paths.length === 0 && expand.length === 0) return new Map();
    const n = paths.length;
    const script = [
      'cd -- "$ROOT" || exit 3',
      'list=/tmp/.ramify-sync-stat-$$; cat > "$list"',
      "mapfile -d '' -t all < \"$list\"; rm -f -- \"$list\"",
      `[ ${n} -gt 0 ] && printf '%s\\0' "\${all[@]:0:${n}}" | find -files0-from - -maxdepth 0 -printf '${FIND_FORMAT}' 2>/dev/null`,
      `[ \${#all[@]} -gt ${n} ] && printf '%s\\0' "\${all[@]:${n}}" | find -files0-from - -mindepth 1 -printf '${FIND_FORMAT}' 2>/dev/null`,
      'true',
    ].join('\n');
    return parseFind(await this.run(script, nulList([...paths, ...expand])));
  }

  /** sha256 of each file at `paths` (missing ones are left out). */
  async hashes(paths: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (paths.length === 0) return out;
    const stdout = await this.run('cd -- "$ROOT" && xargs -0 -r sha256sum -z -- 2>/dev/null; true', nulList(paths));
    for (const line of stdout.split('\0')) {
      const m = /^([0-9a-f]{64}) [ *](.*)$/s.exec(line);
      if (m) out.set(m[2]!.replace(/^\.\//, ''), m[1]!);
    }
    return out;
  }

  /**
   * Apply `ops` (`mv` first, then `del` in the order given, then the `put`s from `tar`'s members) with
   * the guard; `tar` (the bytes of the members `put` names, relative to the root) is uploaded first.
   * @returns the paths skipped because they changed meanwhile, the directories kept because not empty,
   *   and what each path put is now.
   */
  async apply(ops: readonly RemoteOp[], tar: AsyncIterable<Uint8Array> | undefined): Promise<{ skipped: Set<string>; kept: Set<string>; after: Map<string, TreeEntry> }> {
    const tarPath = `/tmp/.ramify-sync-${randomBytes(6).toString('hex')}.tar`;
    const records = ops.flatMap((o) => [o.op, `./${o.path}`, o.expect, o.op === 'mv' ? `./${o.to}` : '']);
    await Promise.all([tar ? this.sbx.files.write(tarPath, tar) : undefined, this.sbx.files.write(`${tarPath}.list`, nulList(records, false))]);
    const stdout = await this.run(APPLY_SCRIPT, undefined, { TAR: tarPath, LIST: `${tarPath}.list` });
    const skipped = new Set<string>();
    const kept = new Set<string>();
    const stats: string[] = [];
    const fields = stdout.split('\0');
    for (let i = 0; i + 1 < fields.length; ) {
      const tag = fields[i];
      if (tag === 'stat') {
        stats.push(...fields.slice(i + 1, i + 7));
        i += 7;
        continue;
      }
      const path = fields[i + 1]!.replace(/^\.\//, '');
      if (tag === 'skip') skipped.add(path);
      else if (tag === 'kept') kept.add(path);
      i += 2;
    }
    return { skipped, kept, after: parseFind(`${stats.join('\0')}\0`) };
  }

  /**
   * Pack `paths` (exactly those: directories without their contents) into a tar in the sandbox and
   * stream it back; `onTar` reads it. The tar is removed afterwards.
   */
  async fetch(paths: readonly string[], onTar: (tar: ReadableStream<Uint8Array>) => Promise<void>): Promise<void> {
    const tarPath = `/tmp/.ramify-sync-${randomBytes(6).toString('hex')}.tar`;
    await this.run('cd -- "$ROOT" && tar -c -f "$TAR" --null --verbatim-files-from --no-recursion -T - 2>/dev/null; [ $? -le 1 ] || [ -f "$TAR" ]', nulList(paths, false), { TAR: tarPath });
    try {
      await onTar(await this.sbx.files.read(tarPath, { format: 'stream' }));
    } finally {
      await this.sbx.files.remove(tarPath).catch(() => undefined);
    }
  }

  /**
   * Run a bash script in the sandbox with `ROOT` (and `envs`) set and `stdin` as its standard input; its
   * stdout. The input goes first as a file (`files.write`), not through the process's stdin: a pause
   * between the start and the stdin's close would leave the command waiting for an EOF that never
   * comes, where a failed upload just fails the pass, which is redone.
   * @throws RamifyError on a non-zero exit, and the API's errors.
   */
  private async run(script: string, stdin?: Uint8Array, envs: Record<string, string> = {}): Promise<string> {
    if (stdin === undefined) return (await this.sbx.commands.run(script, { envs: { ROOT: this.root, ...envs }, timeoutMs: 0 })).stdout;
    const input = `/tmp/.ramify-sync-${randomBytes(6).toString('hex')}.in`;
    await this.sbx.files.write(input, stdin);
    const result = await this.sbx.commands.run(`exec < "$IN"; rm -f -- "$IN"\n${script}`, { envs: { ROOT: this.root, IN: input, ...envs }, timeoutMs: 0 });
    return result.stdout;
  }
}

/** NUL-separated bytes of `items`, each as `./item` unless `prefix` is false. */
function nulList(items: readonly string[], prefix = true): Uint8Array {
  return Buffer.from(items.map((p) => `${prefix ? './' : ''}${p}\0`).join(''));
}
