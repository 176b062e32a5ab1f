#!/usr/bin/env python3
"""A front-end server of a routing fleet, in the shape of the one in AWS's
Kinesis outage of November 2020: it reads a shard table from etcd, finds
its peers through etcd, keeps a connection to every peer, and routes
requests by key.

It knows nothing of the lab but its environment (see `chaoslab show
il-0384-kinesis-thread-per-peer --contract`), and uses only Python's
standard library; etcd is reached through its JSON gateway (/v3/...).

Two designs, one flag:

  server.py           a thread per peer connection, and a thread per HTTP
                      request; the server routes only once every peer it
                      knows has said hello (the incident's design: threads
                      grow with the fleet)
  server.py --pooled  one thread for every peer connection (a selector)
                      and one for HTTP; it routes once it holds the table
                      (the action items: threads independent of the fleet)
"""

import base64
import http.server
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request
from bisect import bisect_left

ENV = os.environ
ENDPOINTS = [e.strip() for e in ENV["CHAOSLAB_ETCD_ENDPOINTS"].split(",") if e.strip()]
PREFIX = ENV["CHAOSLAB_FLEET_PREFIX"]
ME = ENV["CHAOSLAB_SERVER_ID"]
LISTEN = ENV.get("CHAOSLAB_LISTEN_HOST", "127.0.0.1")
ADVERTISE = ENV.get("CHAOSLAB_ADVERTISE_HOST") or LISTEN
POOLED = "--pooled" in sys.argv[1:]
LEASE_TTL = 10
BEAT = 1.0
GRACE = 3.0  # how long a newly learned peer may take to say hello


def log(*args):
    print(ME, *args, file=sys.stderr, flush=True)


# --- etcd, through its JSON gateway ------------------------------------

def b64(s):
    return base64.b64encode(s.encode()).decode()


def unb64(s):
    return base64.b64decode(s).decode()


def etcd(path, body):
    last = None
    for ep in ENDPOINTS:
        url = (ep if ep.startswith("http") else "http://" + ep) + path
        req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                return json.load(r)
        except OSError as e:
            last = e
    raise OSError("etcd %s: %s" % (path, last))


def range_prefix(prefix):
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    kvs = etcd("/v3/kv/range", {"key": b64(prefix), "range_end": b64(end)}).get("kvs", [])
    return [(unb64(kv["key"]), unb64(kv.get("value", ""))) for kv in kvs]


# --- the shard table ----------------------------------------------------

def fnv1a32(s):
    h = 0x811C9DC5
    for c in s.encode():
        h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
    return h


class Table:
    def __init__(self, shards):
        shards.sort(key=lambda s: s["lo"])
        self.his = [s["hi"] for s in shards]
        self.ids = [s["id"] for s in shards]

    def route(self, key):
        i = bisect_left(self.his, fnv1a32(key))
        return self.ids[i] if i < len(self.ids) else None


def load_table():
    shards = []
    for _, v in sorted(range_prefix(PREFIX + "/shards/")):
        shards.extend(json.loads(v))
    return Table(shards)


# --- state --------------------------------------------------------------

class State:
    def __init__(self):
        self.mu = threading.Lock()
        self.table = None
        self.known = {}      # peer id -> "host:port" (from etcd)
        self.learned = {}    # peer id -> when this server first saw it
        self.hello = set()   # peers heard from on a live connection
        self.dialing = set()  # peers this server holds (or opens) a connection to
        self.routed = self.refused = 0

    def ready(self):
        with self.mu:
            if self.table is None:
                return False
            if POOLED:
                return True
            # Every peer has said hello, but for those learned a moment
            # ago (one is dialed within a second or two of joining).
            now = time.monotonic()
            return all(p in self.hello or now - self.learned.get(p, now) < GRACE for p in self.known)


STATE = State()


def my_index(peer_id):
    return int(peer_id.rsplit("-", 1)[-1])


# --- peers: a thread per connection -----------------------------------------

def peer_conn(sock, peer_id):
    """Holds one peer connection: a beat a second each way. A connection
    this server dialed (peer_id given) ends when the peer leaves the
    fleet; one it accepted, when the peer closes it."""
    dialed = peer_id is not None
    sock.settimeout(BEAT)
    buf = b""
    try:
        sock.sendall(("HELLO %s\n" % ME).encode())
        next_beat = time.monotonic() + BEAT
        while True:
            with STATE.mu:
                if dialed and peer_id not in STATE.known:
                    return
            if time.monotonic() >= next_beat:
                sock.sendall(("BEAT %s\n" % ME).encode())
                next_beat += BEAT
            try:
                data = sock.recv(4096)
            except socket.timeout:
                continue
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                words = line.decode(errors="replace").split()
                if len(words) == 2 and words[0] in ("HELLO", "BEAT"):
                    peer_id = words[1]
                    with STATE.mu:
                        STATE.hello.add(peer_id)
    except OSError:
        return
    finally:
        sock.close()
        with STATE.mu:
            STATE.hello.discard(peer_id)
            STATE.dialing.discard(peer_id)


def spawn(fn, *args):
    try:
        threading.Thread(target=fn, args=args, daemon=True).start()
        return True
    except RuntimeError as e:  # the OS refused a thread
        log("could not start a thread:", e)
        return False


def dial(peer_id, addr):
    host, port = addr.rsplit(":", 1)
    try:
        sock = socket.create_connection((host, int(port)), timeout=2)
    except OSError:
        with STATE.mu:
            STATE.dialing.discard(peer_id)
        return
    peer_conn(sock, peer_id)


def threaded_peers(listener):
    """Dials every peer with a higher number and takes the connections of
    those with a lower one, each connection in a thread of its own."""
    listener.settimeout(0.5)
    while True:
        try:
            sock, _ = listener.accept()
            sock.settimeout(None)
            if not spawn(peer_conn, sock, None):
                sock.close()
        except socket.timeout:
            pass
        with STATE.mu:
            todo = [(p, a) for p, a in STATE.known.items()
                    if my_index(p) > my_index(ME) and p not in STATE.dialing]
            STATE.dialing.update(p for p, _ in todo)
        for p, a in todo:
            if not spawn(dial, p, a):
                with STATE.mu:
                    STATE.dialing.discard(p)


# --- peers: one thread for all of them --------------------------------------

def pooled_peers(listener):
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ, None)
    conns = {}  # peer id or fileno -> socket
    next_beat = 0.0
    while True:
        with STATE.mu:
            todo = [(p, a) for p, a in STATE.known.items()
                    if my_index(p) > my_index(ME) and p not in conns]
        for p, a in todo:
            host, port = a.rsplit(":", 1)
            try:
                s = socket.create_connection((host, int(port)), timeout=0.2)
            except OSError:
                continue
            s.setblocking(False)
            conns[p] = s
            sel.register(s, selectors.EVENT_READ, p)
        for key, _ in sel.select(timeout=0.2):
            if key.data is None:
                try:
                    s, _ = listener.accept()
                except OSError:
                    continue
                s.setblocking(False)
                conns[s.fileno()] = s
                sel.register(s, selectors.EVENT_READ, s.fileno())
                continue
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                conns.pop(key.data, None)
        if time.monotonic() >= next_beat:
            next_beat = time.monotonic() + BEAT
            for k, s in list(conns.items()):
                try:
                    s.send(("BEAT %s\n" % ME).encode())
                except OSError:
                    sel.unregister(s)
                    s.close()
                    conns.pop(k, None)


# --- membership ------------------------------------------------------------------

def members(peer_addr, route_addr):
    lease = None
    last_keepalive = 0.0
    while True:
        try:
            if lease is None:
                lease = etcd("/v3/lease/grant", {"TTL": LEASE_TTL})["ID"]
                me = json.dumps({"id": ME, "peer": peer_addr, "route": route_addr})
                etcd("/v3/kv/put", {"key": b64(PREFIX + "/members/" + ME), "value": b64(me), "lease": lease})
                last_keepalive = time.monotonic()
            elif time.monotonic() - last_keepalive >= LEASE_TTL / 3:
                r = etcd("/v3/lease/keepalive", {"ID": lease})
                if int(r.get("result", {}).get("TTL", 0)) <= 0:
                    lease = None  # expired: register again
                    continue
                last_keepalive = time.monotonic()
            known = {}
            for _, v in range_prefix(PREFIX + "/members/"):
                m = json.loads(v)
                if m.get("id") and m["id"] != ME and m.get("peer"):
                    known[m["id"]] = m["peer"]
            now = time.monotonic()
            with STATE.mu:
                STATE.known = known
                STATE.learned = {p: STATE.learned.get(p, now) for p in known}
            if STATE.table is None:
                t = load_table()
                with STATE.mu:
                    STATE.table = t
        except (OSError, ValueError, KeyError) as e:
            log("etcd:", e)
        time.sleep(1)


# --- HTTP ---------------------------------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/status":
            with STATE.mu:
                body = {"id": ME, "table": STATE.table is not None, "peers_known": len(STATE.known),
                        "peers_synced": len(STATE.hello & set(STATE.known)), "routed": STATE.routed,
                        "refused": STATE.refused, "threads": threading.active_count()}
            body["ready"] = STATE.ready()
            return self.answer(200, body)
        if path == "/route":
            key = ""
            for part in query.split("&"):
                k, _, v = part.partition("=")
                if k == "key":
                    key = urllib.parse.unquote_plus(v)
            ready = STATE.ready()
            with STATE.mu:
                if ready:
                    STATE.routed += 1
                else:
                    STATE.refused += 1
                table = STATE.table
            if not ready:
                return self.answer(503, {"error": "not every peer has said hello yet"})
            return self.answer(200, {"shard": table.route(key)})
        self.answer(404, {"error": "no such path"})

    def answer(self, code, body):
        b = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *args):
        pass


def main():
    # In a container the server is PID 1, which the kernel gives no default
    # action for SIGTERM: without a handler the engine waits out its grace
    # period before it kills (on a fleet-wide restart, 32 such stops took
    # 24 s and the health check removed every server).
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    listener = socket.create_server((LISTEN, 0))
    server_cls = http.server.HTTPServer if POOLED else http.server.ThreadingHTTPServer
    httpd = server_cls((LISTEN, 0), Handler)
    route = "%s:%d" % (ADVERTISE, httpd.server_address[1])
    peer = "%s:%d" % (ADVERTISE, listener.getsockname()[1])
    threading.Thread(target=members, args=(peer, route), daemon=True).start()
    peers = pooled_peers if POOLED else threaded_peers
    threading.Thread(target=peers, args=(listener,), daemon=True).start()
    print(json.dumps({"route": route}), flush=True)
    log("listening: route", route, "peer", peer, "pooled" if POOLED else "a thread per peer")
    httpd.serve_forever()


if __name__ == "__main__":
    main()
