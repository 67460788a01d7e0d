// The program bench/networks runs on both sides (sandbox and raw namespace): a server (ping-pong echo, or a
// sink that reads until the end), an RTT client, a throughput client (64 KiB writes), a connect poller for
// attach-to-reachable, and a pipe between two processes (the same byte stream with no network at all).
// Every client prints one JSON line.
export const NETBENCH_PY = String.raw`
import json, socket, sys, threading, time
mode = sys.argv[1]
if mode == 'serve':
    def handle(c):
        kind = c.recv(1)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if kind == b'e':
            while True:
                d = c.recv(1)
                if not d: break
                c.sendall(d)
        else:
            total = 0
            while True:
                d = c.recv(1 << 16)
                if not d: break
                total += len(d)
        c.close()
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', int(sys.argv[2]))); s.listen(64)
    while True:
        c, _ = s.accept(); threading.Thread(target=handle, args=(c,), daemon=True).start()
if mode == 'pipe':
    import os
    secs = float(sys.argv[2]); r, w = os.pipe()
    if os.fork() == 0:
        os.close(w)
        while os.read(r, 1 << 16): pass
        os._exit(0)
    os.close(r); buf = b'x' * (1 << 16); sent = 0; t = time.perf_counter(); end = t + secs
    while time.perf_counter() < end:
        sent += os.write(w, buf)
    os.close(w); os.wait(); dt = time.perf_counter() - t
    print(json.dumps({'bytes': sent, 'seconds': dt})); sys.exit(0)
host, port = sys.argv[2], int(sys.argv[3])
if mode == 'rtt':
    n = int(sys.argv[4]); s = socket.create_connection((host, port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); s.sendall(b'e')
    out = []
    for i in range(n + 50):
        t = time.perf_counter(); s.sendall(b'x'); s.recv(1); dt = (time.perf_counter() - t) * 1e6
        if i >= 50: out.append(dt)
    print(json.dumps(out))
elif mode == 'tput':
    secs = float(sys.argv[4]); s = socket.create_connection((host, port)); s.sendall(b's')
    buf = b'x' * (1 << 16); sent = 0; t = time.perf_counter(); end = t + secs
    while time.perf_counter() < end:
        s.sendall(buf); sent += len(buf)
    s.shutdown(socket.SHUT_WR); s.recv(1); dt = time.perf_counter() - t
    print(json.dumps({'bytes': sent, 'seconds': dt}))
elif mode == 'poll':
    out, secs = sys.argv[4], float(sys.argv[5]); end = time.time() + secs; done = threading.Event(); first = []
    def attempt():
        try:
            socket.create_connection((host, port), timeout=0.3).close()
            first.append(time.time()); done.set()
        except OSError: pass
    while not done.is_set() and time.time() < end:
        threading.Thread(target=attempt, daemon=True).start(); time.sleep(0.005)
    # The main thread writes (daemon threads die with it).
    if first:
        with open(out, 'w') as f: f.write(f'{min(first):.4f}\n')
`;
