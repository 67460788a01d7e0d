/**
 * SFTP's view of the agent's files: `FileInfo` as SFTP attributes and `ls -l` long names, attributes a
 * client sends as the agent's `FileAttributes`, paths as the agent resolves them, and typed errors as
 * SFTP status codes.
 */
import { posix } from 'node:path';
import { isRamifyError, type FileAttributes, type FileInfo } from '@ramify/contracts';
import ssh2, { type Attributes, type FileEntry } from 'ssh2';

const { STATUS_CODE } = ssh2.utils.sftp;

/** File type bits of `st_mode` per {@link FileInfo} type (`other`: none known). */
const TYPE_BITS: Record<FileInfo['type'], number> = { file: 0o100000, dir: 0o040000, symlink: 0o120000, other: 0 };

/** Home directory: where relative paths start (the agent resolves them against it too). */
export const SFTP_HOME = '/root';

/** An absolute, normalised path (relative ones from {@link SFTP_HOME}); `..` never leaves `/`. */
export function resolveSftpPath(path: string): string {
  return posix.resolve(SFTP_HOME, path === '' ? '.' : path);
}

/** SFTP attributes of a file (owner not known to the agent: left out). */
export function toAttributes(info: FileInfo): Attributes {
  const seconds = Math.floor(info.mtimeMs / 1000);
  return { mode: TYPE_BITS[info.type] | info.mode, size: info.size, atime: seconds, mtime: seconds } as Attributes;
}

/** No attributes at all (REALPATH and READLINK answers). */
export const NO_ATTRIBUTES = {} as Attributes;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `ls -l`'s `rwxr-xr-x` for permission bits, with setuid, setgid and sticky. */
function permissionString(mode: number): string {
  const triple = (bits: number, special: boolean, specialChar: string): string =>
    `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${special ? (bits & 1 ? specialChar : specialChar.toUpperCase()) : bits & 1 ? 'x' : '-'}`;
  return triple(mode >> 6, (mode & 0o4000) !== 0, 's') + triple(mode >> 3, (mode & 0o2000) !== 0, 's') + triple(mode, (mode & 0o1000) !== 0, 't');
}

/** The `ls -l` line OpenSSH's `sftp` prints for `ls -l` (owner and group `?`: the agent does not say). */
export function longName(info: FileInfo, name: string, now = Date.now()): string {
  const kind = info.type === 'dir' ? 'd' : info.type === 'symlink' ? 'l' : info.type === 'file' ? '-' : '?';
  const when = new Date(info.mtimeMs);
  const recent = Math.abs(now - info.mtimeMs) < 182 * 86_400_000;
  const time = recent ? `${String(when.getUTCHours()).padStart(2, '0')}:${String(when.getUTCMinutes()).padStart(2, '0')}` : String(when.getUTCFullYear());
  const date = `${MONTHS[when.getUTCMonth()]} ${String(when.getUTCDate()).padStart(2)} ${time.padStart(5)}`;
  return `${kind}${permissionString(info.mode)}    1 ?        ?        ${String(info.size).padStart(8)} ${date} ${name}`;
}

/** A directory entry of a READDIR answer. */
export function toEntry(info: FileInfo, name: string): FileEntry {
  return { filename: name, longname: longName(info, name), attrs: toAttributes(info) };
}

/**
 * The attributes a SETSTAT or FSETSTAT asks for, as the agent takes them (times in ms); `owner` set when
 * it also asks for a uid/gid, which the gateway cannot change.
 */
export function requestedAttributes(attrs: Partial<Attributes>): { attributes: FileAttributes; owner: boolean } {
  const attributes: FileAttributes = {};
  if (typeof attrs.mode === 'number') attributes.mode = attrs.mode & 0o7777;
  if (typeof attrs.size === 'number') attributes.size = attrs.size;
  if (typeof attrs.atime === 'number' && typeof attrs.mtime === 'number') {
    attributes.atimeMs = attrs.atime * 1000;
    attributes.mtimeMs = attrs.mtime * 1000;
  }
  return { attributes, owner: typeof attrs.uid === 'number' || typeof attrs.gid === 'number' };
}

/** Whether `attributes` changes anything. */
export function changesSomething(attributes: FileAttributes): boolean {
  return Object.keys(attributes).length > 0;
}

/** An SFTP status for a failure: not found, permission denied, else a failure with the error's message. */
export function statusFor(err: unknown): { code: number; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (!isRamifyError(err)) return { code: STATUS_CODE.FAILURE, message };
  if (err.code === 'FILE_NOT_FOUND') return { code: STATUS_CODE.NO_SUCH_FILE, message };
  if (err.code === 'FORBIDDEN') return { code: STATUS_CODE.PERMISSION_DENIED, message };
  return { code: STATUS_CODE.FAILURE, message };
}
