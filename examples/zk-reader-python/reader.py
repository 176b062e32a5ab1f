#!/usr/bin/python3
"""A ZooKeeper reader on kazoo that knows nothing of chaoslab but its
environment: it reads one znode ten times a second, backs off when the
ensemble does not answer, and serves its counters on a Prometheus
endpoint on loopback, whose address it prints once (chaoslab's line
protocol). Each second it also prints whether it has a session.

  CHAOSLAB_ZK_CONNECT          the ensemble (host:port,...)
  CHAOSLAB_CLIENT_ID           its name
  CHAOSLAB_KEY                 the znode to read (a scenario setting; default /)
"""
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException

reads = 0
errors = 0
lock = threading.Lock()


class Metrics(BaseHTTPRequestHandler):
    def do_GET(self):
        with lock:
            body = "# TYPE reads_total counter\nreads_total %d\n# TYPE errors_total counter\nerrors_total %d\n" % (reads, errors)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(json.dumps({"prometheus": "http://127.0.0.1:%d/metrics" % server.server_address[1]}), flush=True)

zk = KazooClient(hosts=os.environ["CHAOSLAB_ZK_CONNECT"], timeout=10,
                 connection_retry={"max_tries": -1, "delay": 0.5, "max_delay": 4})
zk.start(timeout=60)
key = os.environ.get("CHAOSLAB_KEY", "/")
delay, last = 0.1, 0.0
while True:
    try:
        zk.get(key)
        with lock:
            reads += 1
        delay = 0.1
    except KazooException:
        with lock:
            errors += 1
        delay = min(delay * 2, 4)
    now = time.time()
    if now - last >= 1:
        last = now
        print(json.dumps({"t": int(now * 1000), "connected": 1 if zk.state == KazooState.CONNECTED else 0}), flush=True)
    time.sleep(delay)
