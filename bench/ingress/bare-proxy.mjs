// bench/ingress helper: the raw mechanism the ingress is compared against. One Node HTTP hop and
// nothing else: node:http server, a keep-alive node:http Agent to the sandbox's slot address, bodies
// piped. No Host parsing, tokens, store lookups, logging or hold. Run as the ingress dialer's uid (the only
// one the ingress firewall lets reach a slot). Prints its port on stdout, then serves until killed.
//   node bare-proxy.mjs <slotAddress> <port>
import { Agent, createServer, request } from 'node:http';

const [host, port] = [process.argv[2], Number(process.argv[3])];
const agent = new Agent({ keepAlive: true });
const server = createServer((req, res) => {
  const upstream = request({ host, port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
