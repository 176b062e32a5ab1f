#!/usr/bin/python3
"""A ZooKeeper mirror on kazoo's own TreeCache recipe, as a proxy might use it.

kazoo's TreeCache, like Curator's, refreshes every node of the tree on every
reconnect, resumed session or not, with every read issued at once: the
refresh storm of IL-0587. This client knows nothing of chaoslab but the
environment it is started with:

  CHAOSLAB_ZK_CONNECT          the ensemble (host:port,...)
  CHAOSLAB_TREE_ROOT           the subtree to mirror
  CHAOSLAB_SESSION_TIMEOUT_MS  the session timeout to ask for
  CHAOSLAB_CLIENT_ID           its name in the samples
  CHAOSLAB_REPORT_INTERVAL_MS  how often to print a sample

It prints one JSON line per interval (chaoslab's line protocol): the
requests it has outstanding, the znodes below the root it holds, and the
highest write sequence it has seen in the data of a znode (seq=N), from
which chaoslab reads its freshness.
--quiet (or CHAOSLAB_EXAMPLE_QUIET=1) prints nothing: chaoslab then judges
it from the outside alone.
"""
import json
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

quiet = "--quiet" in sys.argv or os.environ.get("CHAOSLAB_EXAMPLE_QUIET") == "1"
root = os.environ.get("CHAOSLAB_TREE_ROOT", "/")
cid = os.environ.get("CHAOSLAB_CLIENT_ID", "treecache")
timeout = int(os.environ.get("CHAOSLAB_SESSION_TIMEOUT_MS", "10000")) / 1000
interval = int(os.environ.get("CHAOSLAB_REPORT_INTERVAL_MS", "1000")) / 1000

max_seq = 0
nodes = set()
lock = threading.Lock()


def seq_of(data):
    head = (data or b"")[:64].split(b"\n", 1)[0]
    for field in head.split():
        if field.startswith(b"seq="):
            return int(field[4:])
    return 0


def on_event(event):
    global max_seq
    if event.event_type in (TreeEvent.NODE_ADDED, TreeEvent.NODE_UPDATED) and event.event_data:
        s = seq_of(event.event_data.data)
        with lock:
            max_seq = max(max_seq, s)
            nodes.add(event.event_data.path)


zk = KazooClient(hosts=os.environ["CHAOSLAB_ZK_CONNECT"], timeout=timeout,
                 connection_retry={"max_tries": -1, "delay": 0.5, "max_delay": 2})
zk.start(timeout=120)
cache = TreeCache(zk, root)
cache.listen(on_event)
cache.start()
while True:
    time.sleep(interval)
    if quiet:
        continue
    with lock:
        line = {"t": int(time.time() * 1000), "id": cid, "pending": cache._outstanding_ops,
                "nodes": len(nodes) - 1, "max_seq": max_seq, "state": zk.state}
    print(json.dumps(line), flush=True)
