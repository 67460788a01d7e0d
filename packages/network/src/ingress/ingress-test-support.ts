/** Shared by the ingress's own tests (not exported): one request through an ingress listener, and a count of holds. */
import { request } from 'node:http';

/** A GET (or `method`) to the ingress on loopback `ingressPort` for `host` (`<port>-<id>.localhost:<ingressPort>`). */
export function throughIngress(ingressPort: number, host: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: ingressPort, path, headers: { host, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Holds as a backend sees them: `open` now, `total` ever; `hold` is an `IngressBackend.hold`. */
export class HoldCount {
  open = 0;
  total = 0;

  readonly hold = (): (() => void) => {
    this.open += 1;
    this.total += 1;
    let done = false;
    return () => {
      if (!done) this.open -= 1;
      done = true;
    };
  };
}
