/**
 * The SFTP subsystem (`sftp`, and `scp`, which speaks SFTP by default since OpenSSH 9.0): ssh2 parses
 * and frames the packets; each request becomes calls of core's file use-cases on the sandbox's agent.
 * Paths are absolute or relative to /root (the home REALPATH reports). What the agent's whole-file
 * streams cannot do is refused with OP_UNSUPPORTED and a message (see `handles.ts`); owners cannot be
 * changed (the agent's files belong to whoever the agent runs as).
 */
import { posix } from 'node:path';
import { RamifyError, isRamifyError, type FileInfo } from '@ramify/contracts';
import { listDir, makeDir, makeSymlink, readFile, readLink, removePath, renamePath, setFileAttributes, statPath, writeFile, type Core } from '@ramify/core';
import ssh2, { type Attributes, type FileEntry, type SFTPWrapper } from 'ssh2';
import { changesSomething, NO_ATTRIBUTES, requestedAttributes, resolveSftpPath, statusFor, toAttributes, toEntry } from './attrs.js';
import { DirHandle, ReadHandle, WriteHandle, type SftpHandle } from './handles.js';

const { OPEN_MODE, STATUS_CODE } = ssh2.utils.sftp;

/** Symlinks followed at most, as Linux's ELOOP limit. */
const MAX_SYMLINK_HOPS = 40;
/** Permission bits the gateway masks off new files and directories, as sshd's default umask does. */
const UMASK = 0o022;

/** What one SFTP session works on. */
export interface SftpScope {
  core: Core;
  sandboxId: string;
  /** Resolves once the sandbox runs (waking it if paused); rejects with why it cannot. */
  ensureRunning(): Promise<void>;
}

/** Something the agent's files cannot do: answered OP_UNSUPPORTED. */
class Unsupported extends Error {}

/** Serve SFTP requests on `sftp` until its channel closes; open handles are given up then (an unfinished upload leaves no file). */
export function serveSftp(scope: SftpScope, sftp: SFTPWrapper): void {
  const { core, sandboxId: id } = scope;
  const handles = new Map<number, SftpHandle>();
  let nextHandle = 1;

  const register = (handle: SftpHandle): Buffer => {
    const key = nextHandle++;
    handles.set(key, handle);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(key);
    return buf;
  };
  const handleOf = (buf: Buffer): { key: number; handle: SftpHandle } => {
    const key = buf.length === 4 ? buf.readUInt32BE(0) : -1;
    const handle = handles.get(key);
    if (!handle) throw new RamifyError('BAD_REQUEST', 'no such handle (closed, or never opened)');
    return { key, handle };
  };
  /** Run `work`, answering a failure with its status (the channel may be gone by then). */
  const answer = (reqid: number, work: () => Promise<void>): void => {
    work().catch((err: unknown) => {
      const { code, message } = err instanceof Unsupported ? { code: STATUS_CODE.OP_UNSUPPORTED, message: err.message } : statusFor(err);
      try {
        sftp.status(reqid, code, message);
      } catch {
        // the channel closed meanwhile
      }
    });
  };
  /** {@link answer} for a request naming a path: the sandbox is woken first. */
  const onPath = (reqid: number, work: () => Promise<void>): void => answer(reqid, async () => {
    await scope.ensureRunning();
    await work();
  });
  const ok = (reqid: number): void => void sftp.status(reqid, STATUS_CODE.OK);

  /** `path` with symlinks followed to what they name: the final path and its info. @throws FILE_NOT_FOUND for a dangling link. */
  const follow = async (path: string): Promise<{ path: string; info: FileInfo }> => {
    let at = path;
    for (let hops = 0; hops <= MAX_SYMLINK_HOPS; hops++) {
      const info = await statPath(core, id, at);
      if (info.type !== 'symlink') return { path: at, info };
      at = posix.resolve(posix.dirname(at), await readLink(core, id, at));
    }
    throw new RamifyError('BAD_REQUEST', `too many levels of symbolic links: ${path}`);
  };
  const missing = (err: unknown): null => {
    if (isRamifyError(err) && err.code === 'FILE_NOT_FOUND') return null;
    throw err;
  };

  const openForWrite = async (path: string, flags: number, attrs: Partial<Attributes>): Promise<WriteHandle> => {
    const existing = await follow(path).catch(missing);
    if (existing) {
      if (flags & OPEN_MODE.EXCL) throw new RamifyError('FILE_EXISTS', `already exists: ${path}`);
      if (existing.info.type === 'dir') throw new RamifyError('IS_A_DIRECTORY', `is a directory: ${path}`);
    } else if (!(flags & OPEN_MODE.CREAT)) {
      throw new RamifyError('FILE_NOT_FOUND', `no such file: ${path}`);
    }
    const target = existing?.path ?? path;
    // An existing file keeps its mode (as open(2) without O_CREAT's effect does); a new one gets the client's, masked.
    const mode = existing ? existing.info.mode : (typeof attrs.mode === 'number' ? attrs.mode : 0o666) & 0o7777 & ~UMASK;
    const kept = existing && !(flags & OPEN_MODE.TRUNC) && existing.info.size > 0 ? { size: existing.info.size, read: () => readFile(core, id, target) } : null;
    const handle = new WriteHandle(target, (data) => writeFile(core, id, target, data, { mode }), kept);
    if (flags & OPEN_MODE.APPEND) await handle.appendToOriginal();
    return handle;
  };

  sftp.on('OPEN', (reqid, filename, flags, attrs) => onPath(reqid, async () => {
    const path = resolveSftpPath(filename);
    if (flags & OPEN_MODE.WRITE) {
      sftp.handle(reqid, register(await openForWrite(path, flags, attrs)));
      return;
    }
    const { path: target, info } = await follow(path);
    if (info.type === 'dir') throw new RamifyError('IS_A_DIRECTORY', `is a directory: ${path}`);
    sftp.handle(reqid, register(new ReadHandle(target, info, await readFile(core, id, target))));
  }));

  sftp.on('READ', (reqid, buf, offset, length) => answer(reqid, async () => {
    const { handle } = handleOf(buf);
    if (handle.kind !== 'read') throw new RamifyError('BAD_REQUEST', 'this handle was not opened for reading');
    const data = await handle.read(offset, length);
    if (data === null) sftp.status(reqid, STATUS_CODE.EOF);
    else sftp.data(reqid, data);
  }));

  sftp.on('WRITE', (reqid, buf, offset, data) => answer(reqid, async () => {
    const { handle } = handleOf(buf);
    if (handle.kind !== 'write') throw new RamifyError('BAD_REQUEST', 'this handle was not opened for writing');
    await handle.write(offset, data);
    ok(reqid);
  }));

  sftp.on('FSTAT', (reqid, buf) => answer(reqid, async () => {
    const { handle } = handleOf(buf);
    if (handle.kind === 'read') sftp.attrs(reqid, toAttributes(handle.info));
    else if (handle.kind === 'write') sftp.attrs(reqid, { mode: 0o100000 | (handle.afterClose.mode ?? 0o644), size: handle.size } as Attributes);
    else sftp.attrs(reqid, toAttributes(await statPath(core, id, handle.path)));
  }));

  sftp.on('FSETSTAT', (reqid, buf, attrs) => answer(reqid, async () => {
    const { handle } = handleOf(buf);
    const { attributes, owner } = requestedAttributes(attrs);
    if (owner) throw new Unsupported('changing the owner or group is not supported');
    if (handle.kind === 'write') Object.assign(handle.afterClose, attributes);
    else if (changesSomething(attributes)) await setFileAttributes(core, id, handle.path, attributes);
    ok(reqid);
  }));

  sftp.on('CLOSE', (reqid, buf) => answer(reqid, async () => {
    const { key, handle } = handleOf(buf);
    handles.delete(key);
    if (handle.kind === 'write') {
      const written = await handle.close();
      const { size, ...rest } = handle.afterClose;
      const after = size === undefined || size === written.size ? rest : handle.afterClose;
      if (changesSomething(after)) await setFileAttributes(core, id, handle.path, after);
    } else if (handle.kind === 'read') await handle.close();
    ok(reqid);
  }));

  sftp.on('OPENDIR', (reqid, dirPath) => onPath(reqid, async () => {
    const { path, info } = await follow(resolveSftpPath(dirPath));
    if (info.type !== 'dir') throw new RamifyError('NOT_A_DIRECTORY', `not a directory: ${path}`);
    const parent = path === '/' ? info : await statPath(core, id, posix.dirname(path));
    const entries: FileEntry[] = [toEntry(info, '.'), toEntry(parent, '..'), ...(await listDir(core, id, path, 1)).map((e) => toEntry(e, e.name))];
    sftp.handle(reqid, register(new DirHandle(path, entries)));
  }));

  sftp.on('READDIR', (reqid, buf) => answer(reqid, async () => {
    const { handle } = handleOf(buf);
    if (handle.kind !== 'dir') throw new RamifyError('BAD_REQUEST', 'this handle is not a directory');
    const batch = handle.next();
    if (batch === null) sftp.status(reqid, STATUS_CODE.EOF);
    else sftp.name(reqid, batch);
  }));

  sftp.on('LSTAT', (reqid, path) => onPath(reqid, async () => sftp.attrs(reqid, toAttributes(await statPath(core, id, resolveSftpPath(path))))));
  sftp.on('STAT', (reqid, path) => onPath(reqid, async () => sftp.attrs(reqid, toAttributes((await follow(resolveSftpPath(path))).info))));

  sftp.on('SETSTAT', (reqid, path, attrs) => onPath(reqid, async () => {
    const { attributes, owner } = requestedAttributes(attrs);
    if (owner) throw new Unsupported('changing the owner or group is not supported');
    if (changesSomething(attributes)) await setFileAttributes(core, id, resolveSftpPath(path), attributes);
    ok(reqid);
  }));

  sftp.on('REMOVE', (reqid, filePath) => onPath(reqid, async () => {
    const path = resolveSftpPath(filePath);
    if ((await statPath(core, id, path)).type === 'dir') throw new RamifyError('IS_A_DIRECTORY', `is a directory (remove it with rmdir): ${path}`);
    await removePath(core, id, path);
    ok(reqid);
  }));

  sftp.on('RMDIR', (reqid, dirPath) => onPath(reqid, async () => {
    const path = resolveSftpPath(dirPath);
    if ((await statPath(core, id, path)).type !== 'dir') throw new RamifyError('NOT_A_DIRECTORY', `not a directory: ${path}`);
    if ((await listDir(core, id, path, 1)).length > 0) throw new RamifyError('CONFLICT', `directory not empty: ${path}`);
    await removePath(core, id, path);
    ok(reqid);
  }));

  sftp.on('MKDIR', (reqid, dirPath, attrs) => onPath(reqid, async () => {
    const path = resolveSftpPath(dirPath);
    await makeDir(core, id, path);
    if (typeof attrs.mode === 'number') await setFileAttributes(core, id, path, { mode: attrs.mode & 0o7777 & ~UMASK });
    ok(reqid);
  }));

  sftp.on('RENAME', (reqid, oldPath, newPath) => onPath(reqid, async () => {
    const to = resolveSftpPath(newPath);
    // SFTP v3's RENAME does not replace (OpenSSH's sftp-server links, then unlinks).
    if (await statPath(core, id, to).catch(missing)) throw new RamifyError('FILE_EXISTS', `already exists: ${to}`);
    await renamePath(core, id, resolveSftpPath(oldPath), to);
    ok(reqid);
  }));

  sftp.on('REALPATH', (reqid, path) => answer(reqid, async () => {
    const resolved = resolveSftpPath(path);
    sftp.name(reqid, [{ filename: resolved, longname: resolved, attrs: NO_ATTRIBUTES }]);
  }));

  sftp.on('READLINK', (reqid, path) => onPath(reqid, async () => {
    const target = await readLink(core, id, resolveSftpPath(path));
    sftp.name(reqid, [{ filename: target, longname: target, attrs: NO_ATTRIBUTES }]);
  }));

  // ssh2 passes the link to make first and its target second (it swaps OpenSSH's reversed wire order;
  // @types/ssh2 names the two the other way round). The target is stored as given, relative or not.
  sftp.on('SYMLINK', (reqid, linkPath, target) => onPath(reqid, async () => {
    await makeSymlink(core, id, target, resolveSftpPath(linkPath));
    ok(reqid);
  }));

  // The client's EOF ends the session (sshd's sftp-server exits at the end of its stdin): close the channel.
  sftp.on('end', () => endSftp(sftp));
  sftp.on('close', () => {
    for (const handle of handles.values()) {
      if (handle.kind === 'write') handle.abort(new Error('the SFTP channel closed before the file was closed'));
      else if (handle.kind === 'read') void handle.close();
    }
    handles.clear();
  });
}

/** The parts of ssh2's SFTP object {@link endSftp} reaches into (not in its public API). */
interface SftpInternals {
  _protocol?: { exitStatus(channel: number, code: number): void; channelEOF(channel: number): void };
  outgoing?: { id: number; state: string };
}

/**
 * Close an SFTP channel as sshd does when sftp-server exits: exit-status 0, EOF, then close. ssh2's
 * server-side SFTP closes without the first two (mscdex/ssh2#1492, open), and OpenSSH's `scp` then
 * exits 1 after a transfer that went well ("Exit status -1").
 */
function endSftp(sftp: SFTPWrapper): void {
  const { _protocol: protocol, outgoing } = sftp as unknown as SftpInternals;
  if (protocol && outgoing?.state === 'open') {
    protocol.exitStatus(outgoing.id, 0);
    protocol.channelEOF(outgoing.id);
    outgoing.state = 'eof';
  }
  sftp.end();
}
