import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { inspectHttp, inspectTls, normalizeClientName } from './egress-proxy-inspect.js';

/** The first bytes a real Node TLS client sends (its ClientHello), captured on a loopback socket. */
async function realClientHello(servername: string | undefined): Promise<Buffer> {
  let captured = Buffer.alloc(0);
  const server = createServer((socket) => {
    socket.on('data', (d: Buffer) => {
      captured = Buffer.concat([captured, d]);
      if (captured.length >= 5 && captured.length >= 5 + captured.readUInt16BE(3)) socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => {
    const s = tlsConnect({ host: '127.0.0.1', port, ...(servername === undefined ? {} : { servername }) });
    s.on('error', () => resolve()).on('close', () => resolve());
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return captured;
}

/** A minimal TLS 1.2-style ClientHello record with the given raw SNI entries (name bytes as given). */
function buildClientHello(names: Array<{ type: number; name: Buffer }>, options: { recordVersion?: number; extensionsTwice?: boolean } = {}): Buffer {
  const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff]);
  const entries = Buffer.concat(names.map((e) => Buffer.concat([Buffer.from([e.type]), u16(e.name.length), e.name])));
  const sniData = Buffer.concat([u16(entries.length), entries]);
  const one = names.length === 0 ? Buffer.alloc(0) : Buffer.concat([u16(0x0000), u16(sniData.length), sniData]);
  const extensions = options.extensionsTwice ? Buffer.concat([one, one]) : one;
  const body = Buffer.concat([
    Buffer.from([0x03, 0x03]), Buffer.alloc(32, 7), Buffer.from([0]), // version, random, empty session id
    u16(2), u16(0x1301), Buffer.from([1, 0]), // one cipher suite, null compression
    u16(extensions.length), extensions,
  ]);
  const handshake = Buffer.concat([Buffer.from([0x01, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]), body]);
  return Buffer.concat([Buffer.from([0x16, 0x03, options.recordVersion ?? 0x01]), u16(handshake.length), handshake]);
}

test('a real ClientHello gives its SNI; every strict prefix asks for more', async () => {
  const hello = await realClientHello('WWW.Example.com');
  assert.deepEqual(await inspectTls(hello), { state: 'name', name: 'www.example.com' });
  for (let n = 0; n < hello.length; n++) assert.deepEqual(await inspectTls(hello.subarray(0, n)), { state: 'more' }, `prefix ${n}`);
  // Bytes after the ClientHello record (early data, a second record) do not matter.
  assert.deepEqual(await inspectTls(Buffer.concat([hello, Buffer.from('trailing')])), { state: 'name', name: 'www.example.com' });
});

test('a ClientHello without SNI (client connecting to an IP) gives no name', async () => {
  const hello = await realClientHello(undefined);
  assert.deepEqual(await inspectTls(hello), { state: 'name', name: null });
  assert.deepEqual(await inspectTls(buildClientHello([])), { state: 'name', name: null });
});

test('SNI values that are not host names give no name; a trailing dot is dropped', async () => {
  const sni = (name: string) => inspectTls(buildClientHello([{ type: 0, name: Buffer.from(name, 'latin1') }]));
  assert.deepEqual(await sni('api.example.com.'), { state: 'name', name: 'api.example.com' });
  for (const bad of ['203.0.113.10', 'a..b', 'bad name.com', 'evil.com\0.good.com', '-a.com', 'a'.repeat(64) + '.com', `${'a.'.repeat(127)}aa`, 'caf\u00e9.com', '']) {
    assert.deepEqual(await sni(bad), { state: 'name', name: null }, JSON.stringify(bad));
  }
  // Two host names, or the extension twice: refused rather than guessing which one the server uses.
  assert.equal((await inspectTls(buildClientHello([{ type: 0, name: Buffer.from('a.example.com') }, { type: 0, name: Buffer.from('b.example.com') }]))).state, 'invalid');
  const twice = buildClientHello([{ type: 0, name: Buffer.from('a.example.com') }], { extensionsTwice: true });
  assert.equal((await inspectTls(twice)).state, 'invalid');
  // A name type other than host_name (0) is not a server name.
  assert.deepEqual(await inspectTls(buildClientHello([{ type: 1, name: Buffer.from('x.example.com') }])), { state: 'name', name: null });
});

test('non-TLS and malformed records are invalid', async () => {
  assert.equal((await inspectTls(Buffer.from('GET / HTTP/1.1\r\n'))).state, 'invalid');
  assert.equal((await inspectTls(Buffer.from([0x17, 0x03, 0x03, 0x00, 0x10]))).state, 'invalid'); // application data
  assert.equal((await inspectTls(Buffer.from([0x16, 0x02, 0x00, 0x00, 0x10]))).state, 'invalid'); // SSL 2-era version
  assert.equal((await inspectTls(Buffer.from([0x16, 0x03, 0x01, 0x40, 0x01]))).state, 'invalid'); // 16385 > 2^14
  assert.equal((await inspectTls(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00]))).state, 'invalid'); // empty record
  const good = buildClientHello([{ type: 0, name: Buffer.from('a.example.com') }]);
  const notHello = Buffer.from(good);
  notHello[5] = 0x02; // ServerHello
  assert.equal((await inspectTls(notHello)).state, 'invalid');
  const fragmented = Buffer.from(good);
  fragmented.writeUIntBE(good.length, 6, 3); // declared longer than the record
  assert.equal((await inspectTls(fragmented)).state, 'invalid');
  const trailing = Buffer.concat([good, Buffer.from([0])]);
  trailing.writeUInt16BE(good.length - 5 + 1, 3); // record one byte longer...
  trailing.writeUIntBE(good.length - 9 + 1, 6, 3); // ...and the hello too: a stray byte after the extensions
  assert.equal((await inspectTls(trailing)).state, 'invalid');
  const badExtensions = Buffer.from(good);
  badExtensions.writeUInt16BE(0xffff, 5 + 4 + 2 + 32 + 1 + 4 + 2); // extensions length past the end
  assert.equal((await inspectTls(badExtensions)).state, 'invalid');
});

test('random corruption of a real ClientHello never throws', async () => {
  const hello = await realClientHello('www.example.com');
  let seed = 42;
  const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
  for (let i = 0; i < 300; i++) {
    const copy = Buffer.from(hello);
    for (let k = 0; k < 1 + rand(4); k++) copy[5 + rand(copy.length - 5)] = rand(256);
    const result = await inspectTls(copy);
    assert.ok(['name', 'invalid', 'more'].includes(result.state));
  }
});

test('HTTP: the Host of the first request head, normalized, without its port', () => {
  const head = (text: string) => inspectHttp(Buffer.from(text, 'latin1'));
  assert.deepEqual(head('GET / HTTP/1.1\r\nHost: API.Example.com:8080\r\nAccept: */*\r\n\r\nbody'), { state: 'name', name: 'api.example.com' });
  assert.deepEqual(head('POST /x HTTP/1.0\r\nhost:www.example.com\r\n\r\n'), { state: 'name', name: 'www.example.com' });
  assert.deepEqual(head('GET http://www.example.com/a HTTP/1.1\r\nHost: www.example.com\r\n\r\n'), { state: 'name', name: 'www.example.com' });
  assert.deepEqual(head('GET / HTTP/1.1\r\nAccept: */*\r\n\r\n'), { state: 'name', name: null });
  assert.deepEqual(head('GET / HTTP/1.1\r\nHost: 203.0.113.10\r\n\r\n'), { state: 'name', name: null });
  assert.deepEqual(head('GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n'), { state: 'name', name: null });
  assert.deepEqual(head('GET / HTTP/1.1\r\nHost: a b\r\n\r\n'), { state: 'name', name: null });
});

test('HTTP: partial heads ask for more; every strict prefix of a valid head does', () => {
  const text = 'GET /path?q=1 HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: t\r\n\r\n';
  for (let n = 0; n < text.length; n++) assert.deepEqual(inspectHttp(Buffer.from(text.slice(0, n))), { state: 'more' }, `prefix ${n}`);
  assert.deepEqual(inspectHttp(Buffer.from(text)), { state: 'name', name: 'www.example.com' });
});

test('HTTP: malformed heads and smuggling shapes are invalid', () => {
  const bad = [
    '\x16\x03\x01\x02\x00', // TLS on the HTTP port
    'get / HTTP/1.1\r\n', // lowercase method
    'GET / HTTP/2.0\r\nHost: a.com\r\n\r\n',
    'GET /  HTTP/1.1\r\nHost: a.com\r\n\r\n',
    'GET / HTTP/1.1\nHost: a.com\n\n', // bare LF
    'GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n', // two Hosts
    'GET / HTTP/1.1\r\nHost: a.com\r\n folded\r\n\r\n', // obsolete line folding
    'GET / HTTP/1.1\r\nHost : a.com\r\n\r\n', // space before colon
    'GET / HTTP/1.1\r\nNoColon\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a.com\0\r\n\r\n',
    'GET http://evil.com/ HTTP/1.1\r\nHost: good.com\r\n\r\n', // absolute target naming another host
    'GET http://evil.com/ HTTP/1.1\r\n\r\n',
    'SSH-2.0-OpenSSH_9.2\r\n',
    'CONNECT evil.com:443 HTTP/1.1\r\nHost: good.com\r\n\r\n', // a tunnel through an allowed proxy
  ];
  for (const text of bad) assert.equal(inspectHttp(Buffer.from(text, 'latin1')).state, 'invalid', JSON.stringify(text));
});

test('normalizeClientName', () => {
  assert.equal(normalizeClientName('Example.COM.'), 'example.com');
  assert.equal(normalizeClientName('_dmarc.example.com'), '_dmarc.example.com');
  assert.equal(normalizeClientName('localhost'), 'localhost');
  for (const bad of ['', '.', 'a..b', '1.2.3.4', '::1', 'a_b:80', 'x.-y.com', 'a/b.com']) assert.equal(normalizeClientName(bad), null, bad);
});
