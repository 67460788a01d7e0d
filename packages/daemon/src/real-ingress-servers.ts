/**
 * TEST SUPPORT for real-ingress.test.ts: the servers the tests run inside sandboxes (Python 3 standard
 * library only): an HTTP server that serves files and takes PUT uploads (streamed to disk, answering the
 * sha256), and a WebSocket echo server (RFC 6455 handshake and text frames). Test support only.
 */

/**
 * `python3 /root/srv.py PORT [BIND]`: GET files under /root/www, PUT /name stores the body, answers its
 * sha256. Keep-alive (HTTP/1.1) with TCP_NODELAY: it writes the headers and the body of an answer
 * separately, and with Nagle on the body waited for the client's delayed ACK (~40 ms per request on a
 * kept-alive connection; bench/ingress measured it).
 */
export const HTTP_SERVER_PY = `
import hashlib, http.server, os, sys
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True
    def __init__(self, *a, **k):
        super().__init__(*a, directory='/root/www', **k)
    def log_message(self, *a):
        with open('/root/access.log', 'a') as f:
            f.write(self.client_address[0] + ' ' + self.requestline + ' ' + repr(dict(self.headers)) + '\\n')
    def do_PUT(self):
        left = int(self.headers.get('content-length', '0'))
        h = hashlib.sha256()
        with open('/root/www/' + os.path.basename(self.path), 'wb') as f:
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                h.update(chunk); f.write(chunk); left -= len(chunk)
        body = h.hexdigest().encode()
        self.send_response(200); self.send_header('content-length', str(len(body))); self.end_headers(); self.wfile.write(body)
os.makedirs('/root/www', exist_ok=True)
http.server.ThreadingHTTPServer((sys.argv[2] if len(sys.argv) > 2 else '0.0.0.0', int(sys.argv[1])), H).serve_forever()
`;

/** Python shared by the servers below: answer each WebSocket text frame with `echo <text>` until a close frame. */
const ECHO_FRAMES_PY = `
import struct
def echo_frames(rfile, wfile):
    while True:
        head = rfile.read(2)
        if len(head) < 2: return
        op, n = head[0] & 15, head[1] & 127
        if n == 126: n = struct.unpack('>H', rfile.read(2))[0]
        elif n == 127: n = struct.unpack('>Q', rfile.read(8))[0]
        mask = rfile.read(4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(rfile.read(n)))
        if op == 8: return
        out = b'echo ' + data
        wfile.write(bytes([0x81, len(out)]) + out)
        wfile.flush()
`;

/** `python3 /root/ws.py PORT`: a WebSocket echo server answering each text frame with `echo <text>`. */
export const WS_SERVER_PY = `${ECHO_FRAMES_PY}
import base64, hashlib, socketserver, sys
GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
class H(socketserver.StreamRequestHandler):
    def handle(self):
        headers = {}
        self.rfile.readline()
        while True:
            line = self.rfile.readline().decode().strip()
            if not line: break
            k, v = line.split(':', 1); headers[k.strip().lower()] = v.strip()
        accept = base64.b64encode(hashlib.sha1((headers['sec-websocket-key'] + GUID).encode()).digest()).decode()
        self.wfile.write(('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n').encode())
        echo_frames(self.rfile, self.wfile)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
S(('0.0.0.0', int(sys.argv[1])), H).serve_forever()
`;

/**
 * `python3 /root/page.py PORT`: GET / answers an HTML page whose script opens a WebSocket back to the same
 * host (`/ws`), sends a line and shows the echo in `#echo`; GET /ws upgrades and echoes text frames.
 */
export const PAGE_SERVER_PY = `${ECHO_FRAMES_PY}
import base64, hashlib, http.server, sys
GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
PAGE = b'''<!doctype html><html><head><meta charset="utf-8"><title>ramify ingress</title></head>
<body><h1>served from inside a sandbox</h1><p id="echo">waiting</p><script>
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
ws.onopen = () => ws.send('hello from the browser');
ws.onmessage = (m) => { document.getElementById('echo').textContent = m.data; };
ws.onerror = () => { document.getElementById('echo').textContent = 'websocket error'; };
</script></body></html>'''
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path == '/ws' and self.headers.get('upgrade', '').lower() == 'websocket':
            accept = base64.b64encode(hashlib.sha1((self.headers['sec-websocket-key'] + GUID).encode()).digest()).decode()
            self.wfile.write(('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n').encode())
            self.wfile.flush()
            echo_frames(self.rfile, self.wfile)
            return
        body = PAGE
        self.send_response(200); self.send_header('content-type', 'text/html; charset=utf-8'); self.send_header('content-length', str(len(body))); self.end_headers(); self.wfile.write(body)
http.server.ThreadingHTTPServer(('0.0.0.0', int(sys.argv[1])), H).serve_forever()
`;
