#!/usr/bin/python3
"""A key-value reader that knows nothing of chaoslab but its environment:
it reads one key of etcd (through its JSON gateway) or of Consul (its KV
API) five times a second, staying with the endpoint that answers, as
gRPC's pick-first and a client of its local agent do. What it does when a
read fails is the choice under test:

  --retry-at-once   (or CHAOSLAB_RETRY=at-once) asks again at once, on the same endpoint unless it
                    timed out (a client that trusts its server to recover
                    fast)
  (default)         waits, doubling from 0.2 s to 5 s, before asking again

It prints {"reads_total": N, "errors_total": M} once a second (chaoslab's
line protocol). Only Python's standard library is used.

  CHAOSLAB_ETCD_ENDPOINTS   http://host:port,... (etcd), or
  CHAOSLAB_CONSUL_HTTP_ADDR host:port (Consul)
  CHAOSLAB_KEY              the key to read (a scenario setting; default chaoslab)
"""
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.request

AT_ONCE = "--retry-at-once" in sys.argv[1:] or os.environ.get("CHAOSLAB_RETRY") == "at-once"
KEY = os.environ.get("CHAOSLAB_KEY", "chaoslab")
TIMEOUT = 0.4  # a read on loopback takes milliseconds


def etcd_read(ep):
    body = json.dumps({"key": base64.b64encode(KEY.encode()).decode()}).encode()
    req = urllib.request.Request(ep + "/v3/kv/range", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        reply = json.load(r)
    if "error" in reply or "code" in reply:
        raise OSError(reply)


def consul_read(ep):
    url = "http://%s/v1/kv/%s?consistent" % (ep, KEY)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            r.read()
    except urllib.error.HTTPError as e:
        if e.code != 404:  # a key not written yet is an answer
            raise


if os.environ.get("CHAOSLAB_ETCD_ENDPOINTS"):
    endpoints = [e if e.startswith("http") else "http://" + e for e in os.environ["CHAOSLAB_ETCD_ENDPOINTS"].split(",")]
    read = etcd_read
else:
    endpoints = [os.environ["CHAOSLAB_CONSUL_HTTP_ADDR"]]
    read = consul_read

reads = errors = 0
at, delay, last = 0, 0.2, 0.0
while True:
    try:
        read(endpoints[at])
        reads += 1
        delay = 0.2
        pause = 0.2
    except (OSError, ValueError) as e:
        errors += 1
        timed_out = isinstance(e, TimeoutError) or "timed out" in str(e)
        if timed_out or isinstance(e, ConnectionError) or isinstance(getattr(e, "reason", None), ConnectionError):
            at = (at + 1) % len(endpoints)  # that endpoint is gone: try the next
        pause = 0 if AT_ONCE else delay
        delay = min(delay * 2, 5.0)
    now = time.time()
    if now - last >= 1:
        last = now
        print(json.dumps({"reads_total": reads, "errors_total": errors}), flush=True)
    time.sleep(pause)
