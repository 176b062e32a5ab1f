#!/usr/bin/env python3
"""A create-volume caller of a block-storage control plane, in the shape of
the callers in AWS's EBS outage of April 2011: one process per zone asks
the regional control plane for new volumes at a steady rate and deletes
each one it gets.

It knows nothing of the lab but its environment (see `chaoslab show
aws-ebs-2011-remirror-storm --contract`) and uses only Python's standard
library.

Two designs, one flag:

  caller.py             waits for an answer as long as the API lets a call
                        wait, and asks again at once when a call fails (in
                        2011 the API's long timeout let slow calls pile up
                        until the shared pool had no worker left)
  caller.py --deadline  gives up a call after 1 s (hanging up frees the
                        control plane's worker), and after a failure skips
                        its calls for a back-off drawn with jitter, doubling
                        from 0.5 s to 8 s
"""

import http.client
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.parse

ENV = os.environ
URL = urllib.parse.urlsplit(ENV["CHAOSLAB_CONTROL_URL"])
ZONE = ENV["CHAOSLAB_ZONE"]
RATE = float(ENV.get("CHAOSLAB_CREATE_RATE", "2"))
API_TIMEOUT = float(ENV.get("CHAOSLAB_API_TIMEOUT_MS", "15000")) / 1000
DEADLINE = "--deadline" in sys.argv[1:]
TIMEOUT = 1.0 if DEADLINE else API_TIMEOUT + 5
RETRIES = 0 if DEADLINE else 3

rng = random.Random(int(ENV.get("CHAOSLAB_SEED", "1")))
stop = threading.Event()
lock = threading.Lock()
counts = {"ok": 0, "failed": 0, "skipped": 0}
backoff = {"until": 0.0, "wait": 0.5}


def call(method, path, body=None, timeout=TIMEOUT):
    """One HTTP call on a connection of its own; returns (status, body)."""
    conn = http.client.HTTPConnection(URL.hostname, URL.port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def create():
    """Creates a volume and deletes it; True when it was created."""
    try:
        status, data = call("POST", "/v1/volumes", {"zone": ZONE})
    except OSError:
        return False
    if status != 200:
        return False
    try:
        vid = json.loads(data)["id"]
        call("DELETE", "/v1/volumes/" + urllib.parse.quote(vid), timeout=5)
    except (OSError, ValueError, KeyError):
        pass
    return True


def one():
    """One call asked for by the zone's users, with the design's retries."""
    for _ in range(1 + RETRIES):
        if stop.is_set():
            return
        if create():
            with lock:
                counts["ok"] += 1
                backoff["wait"] = 0.5
            return
    with lock:
        counts["failed"] += 1
        if DEADLINE:
            wait = backoff["wait"]
            backoff["until"] = time.monotonic() + rng.uniform(wait / 2, wait)
            backoff["wait"] = min(wait * 2, 8.0)


def main():
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    every = 1 / RATE
    due = time.monotonic()
    last = due
    while not stop.is_set():
        due += every
        stop.wait(max(0.0, due - time.monotonic()))
        if stop.is_set():
            break
        with lock:
            skip = time.monotonic() < backoff["until"]
            if skip:
                counts["skipped"] += 1
        if not skip:
            threading.Thread(target=one, daemon=True).start()
        if time.monotonic() - last >= 10:
            last = time.monotonic()
            with lock:
                print(json.dumps({"zone": ZONE, **counts}), flush=True)


if __name__ == "__main__":
    main()
