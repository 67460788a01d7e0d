/**
 * `agent bridge`: connect to the agent's unix socket and splice this process's stdin → socket and
 * socket → stdout, raw bytes, no re-framing. The host runs it with `runsc exec`; its stdio is the
 * control channel. Exits when either side closes. Kept free of heavy imports so it starts fast.
 */
import { connect, type Socket } from 'node:net';

export interface BridgeOptions {
  socketPath: string;
  /** Keep retrying a refused or missing socket for this long (the agent may still be starting), in ms. */
  connectTimeoutMs: number;
}

function connectOnce(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    sock.once('connect', () => {
      sock.off('error', reject);
      resolve(sock);
    });
    sock.once('error', reject);
  });
}

async function connectWithRetry(options: BridgeOptions): Promise<Socket> {
  const deadline = Date.now() + options.connectTimeoutMs;
  for (;;) {
    try {
      return await connectOnce(options.socketPath);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const retriable = code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'EAGAIN';
      if (!retriable || Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Run the bridge until either side closes; then exit the process (code 0, or 1 if it could not connect). */
export async function runBridge(options: BridgeOptions): Promise<void> {
  let sock: Socket;
  try {
    sock = await connectWithRetry(options);
  } catch (err) {
    process.stderr.write(`ramify-agent bridge: cannot connect to ${options.socketPath}: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const exit = (): void => {
    if (process.stdout.writableLength === 0) process.exit(0);
    process.stdout.once('drain', () => process.exit(0));
    process.stdout.once('error', () => process.exit(0));
  };
  sock.on('error', () => sock.destroy());
  sock.on('close', exit);
  process.stdout.on('error', () => sock.destroy());
  process.stdin.on('error', () => sock.destroy());
  // Host closed our stdin: half-close towards the agent; it ends its side and `close` follows.
  process.stdin.on('end', () => sock.end());
  process.stdin.pipe(sock, { end: false });
  sock.pipe(process.stdout, { end: false });
}
