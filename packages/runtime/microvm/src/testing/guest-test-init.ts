/**
 * A stand-in for the agent in this package's tests (run as `node -e` inside the guest): a line server
 * on the agent's virtio-serial port, reopening the port whenever the host side goes away (as after a
 * restore), answering the agent's hello/ack handshake (`protocol/virtio-handshake.ts` of @ramify/agent:
 * HELLO = ff ff ff ff 'RMFH' + 8-byte nonce, ACK = ff ff ff ff 'RMFA' + the nonce). Commands: `get` (a
 * counter kept in memory), `touch PATH`, `read PATH`, `uname`
 * (`release|/proc/version`), `rand` (16 bytes of /dev/urandom, hex), `hostname`, `ip` (eth0's IPv4),
 * `tcp HOST PORT` (connect, send `ping`, answer with the reply).
 */
import { AGENT_PORT_PATH } from '../guest-init.js';

/** Printed on the guest console once the test init runs. */
export const TEST_INIT_MARKER = 'rvm-test-init: up';

export const GUEST_TEST_INIT = `
const fs = require('fs'), os = require('os'), net = require('net');
const PORT = ${JSON.stringify(AGENT_PORT_PATH)};
const HELLO = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x52, 0x4d, 0x46, 0x48]);
const ACK = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x52, 0x4d, 0x46, 0x41]);
let n = 0;
console.log(${JSON.stringify(TEST_INIT_MARKER)});
function tcp(host, port) {
  return new Promise((resolve) => {
    const s = net.connect(Number(port), host);
    const t = setTimeout(() => { s.destroy(); resolve('timeout'); }, 5000);
    s.on('connect', () => s.write('ping\\n'));
    s.on('data', (d) => { clearTimeout(t); s.destroy(); resolve(d.toString().trim()); });
    s.on('error', (e) => { clearTimeout(t); resolve('error ' + e.code); });
  });
}
async function answer(line) {
  const [c, a, b] = line.split(' ');
  if (c === 'get') return String(++n);
  if (c === 'touch') { fs.writeFileSync(a, 'x'); return 'ok'; }
  if (c === 'read') { try { return fs.readFileSync(a, 'utf8'); } catch { return 'none'; } }
  if (c === 'uname') return os.release() + '|' + fs.readFileSync('/proc/version', 'utf8').trim();
  if (c === 'rand') { const f = fs.openSync('/dev/urandom', 'r'); const buf = Buffer.alloc(16); fs.readSync(f, buf); fs.closeSync(f); return buf.toString('hex'); }
  if (c === 'hostname') return os.hostname();
  if (c === 'ip') return ((os.networkInterfaces().eth0 || []).find((i) => i.family === 'IPv4') || {}).cidr || 'none';
  if (c === 'tcp') return tcp(a, b);
  return 'unknown';
}
function serve() {
  let fd;
  try { fd = fs.openSync(PORT, 'r+'); } catch { return setTimeout(serve, 100); }
  const rs = fs.createReadStream(null, { fd, autoClose: false, highWaterMark: 4096 });
  let raw = Buffer.alloc(0), buf = '', chain = Promise.resolve();
  rs.on('data', (d) => {
    raw = Buffer.concat([raw, d]);
    for (;;) {
      const h = raw.indexOf(HELLO);
      if (h < 0 || raw.length < h + 16) break;
      const ack = Buffer.concat([ACK, raw.subarray(h + 8, h + 16)]);
      raw = raw.subarray(h + 16);
      buf = '';
      chain = chain.then(() => { try { fs.writeSync(fd, ack); } catch {} });
    }
    if (raw.indexOf(0xff) >= 0) return;
    buf += raw.toString();
    raw = Buffer.alloc(0);
    let i;
    while ((i = buf.indexOf('\\n')) >= 0) {
      const line = buf.slice(0, i); buf = buf.slice(i + 1);
      chain = chain.then(() => answer(line)).catch((e) => 'error ' + e.message).then((out) => { try { fs.writeSync(fd, out + '\\n'); } catch {} });
    }
  });
  rs.on('end', () => { chain.then(() => { fs.closeSync(fd); setTimeout(serve, 20); }); });
  rs.on('error', () => { try { fs.closeSync(fd); } catch {} setTimeout(serve, 100); });
}
serve();
`;
