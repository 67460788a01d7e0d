/**
 * The API role's SSH relay, its channels (docs/design/SSH.md, "Through the API"): each session channel of
 * the client becomes a session channel on the connection to the sandbox's host (its `pty-req` with the
 * terminal modes and size, `env`, then `shell`, `exec` or the `sftp` subsystem; `window-change` and `signal`
 * while it runs; data, stderr, EOF both ways; `exit-status` or `exit-signal` back, then the close), and each
 * `direct-tcpip` channel (`ssh -L`) a `forwardOut` there. What the host gateway refuses is refused here
 * too (X11 and agent forwarding: no listener; subsystems other than sftp); the host decides the rest.
 */
import type { Client, ClientChannel, PseudoTtyOptions, ServerChannel, Session, AcceptConnection, RejectConnection, TcpipRequestInfo } from 'ssh2';

/** The host connection of one client connection: resolves once ready, rejects with why it cannot be. */
export type Upstream = Promise<Client>;

/** Once the stream has nothing queued (ssh2 holds writes while the peer's window is closed). */
function drained(stream: NodeJS.WritableStream & { writableLength: number }): Promise<void> {
  return stream.writableLength === 0 ? Promise.resolve() : new Promise((resolve) => stream.once('drain', () => resolve()));
}

/** End `channel` with `message` on its stderr and exit status 255 (as the host gateway ends a refused one). */
export function refuseChannel(channel: ServerChannel, message: string): void {
  channel.stderr.write(`ramify: ${message}\n`);
  channel.exit(255);
  channel.end();
}

/**
 * Relay `channel` and `remote` until the host closes `remote`: data and stderr out, client data in (its EOF
 * passed on), then the exit status or signal once everything before it is written, then the close. A
 * client closing first closes `remote` (the host hangs the process up).
 */
function bridge(channel: ServerChannel, remote: ClientChannel, lost: () => string): void {
  let exit: [code: number] | [code: null, signal: string, coreDumped: boolean, description: string] | null = null;
  remote.on('exit', (...args: unknown[]) => {
    exit = args as typeof exit;
  });
  channel.pipe(remote);
  remote.pipe(channel, { end: false });
  remote.stderr.pipe(channel.stderr, { end: false });
  channel.on('close', () => remote.close());
  const ended = new Promise<void>((resolve) => (remote.readableEnded ? resolve() : remote.once('end', () => resolve())));
  remote.once('close', () => {
    void (async () => {
      await Promise.race([ended, new Promise((r) => setTimeout(r, 1000))]);
      await Promise.all([drained(channel), drained(channel.stderr)]);
      const status = exit as typeof exit;
      if (status === null) return refuseChannel(channel, lost());
      if (status[0] === null) channel.exit(status[1].replace(/^SIG/, ''), status[2], status[3]);
      else channel.exit(status[0]);
      channel.end();
    })();
  });
}

/** Serve one client session channel over `upstream`; `lost()` says why a channel ended without an exit status. */
export function relaySession(session: Session, upstream: Upstream, lost: () => string): void {
  const env: Record<string, string> = {};
  let pty: PseudoTtyOptions | null = null;
  let remote: ClientChannel | null = null;

  session.on('env', (accept, _reject, info) => {
    env[info.key] = info.val;
    accept?.();
  });
  session.on('pty', (accept, _reject, info) => {
    pty = { rows: info.rows, cols: info.cols, width: info.width, height: info.height, term: info.term, modes: info.modes };
    accept?.();
  });
  session.on('window-change', (accept, _reject, info) => {
    if (pty) Object.assign(pty, { rows: info.rows, cols: info.cols, width: info.width, height: info.height });
    remote?.setWindow(info.rows, info.cols, info.height, info.width);
    accept?.();
  });
  session.on('signal', (accept, _reject, info) => {
    try {
      remote?.signal(info.name);
    } catch {
      // ssh2 refuses to send a signal name SSH does not define; the host would refuse it too.
    }
    accept?.();
  });

  const start = (channel: ServerChannel | undefined, open: (client: Client, done: (err: Error | undefined, ch: ClientChannel) => void) => void): void => {
    if (!channel) return;
    upstream
      .then((client) => new Promise<ClientChannel>((resolve, reject) => open(client, (err, ch) => (err ? reject(err) : resolve(ch)))))
      .then((ch) => {
        remote = ch;
        bridge(channel, ch, lost);
      })
      .catch((err: unknown) => refuseChannel(channel, err instanceof Error ? err.message : String(err)));
  };
  session.on('shell', (accept) => start(accept(), (client, done) => client.shell(pty ?? false, { env }, done)));
  session.on('exec', (accept, _reject, info) => start(accept(), (client, done) => client.exec(info.command, { env, ...(pty ? { pty } : {}) }, done)));
  session.on('subsystem', (accept, reject, info) => {
    if (info.name !== 'sftp') return void reject?.();
    start(accept(), (client, done) => client.subsys('sftp', done));
  });
}

/** Serve one client `direct-tcpip` request (`ssh -L`) over `upstream`: the host decides where it may go. */
export function relayForward(upstream: Upstream, info: TcpipRequestInfo, accept: AcceptConnection<ServerChannel>, reject: RejectConnection): void {
  upstream
    .then((client) => new Promise<ClientChannel>((resolve, fail) => client.forwardOut(info.srcIP, info.srcPort, info.destIP, info.destPort, (err, ch) => (err ? fail(err) : resolve(ch)))))
    .then((remote) => {
      const channel = accept();
      if (!channel) return void remote.close();
      channel.on('close', () => remote.close());
      remote.on('close', () => channel.close());
      channel.pipe(remote).pipe(channel);
    })
    .catch(() => reject());
}
