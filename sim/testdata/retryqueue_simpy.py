"""The reference model of chaoslab's sim package (sim/refmodel.go) in SimPy,
Debian's python3-simpy (SimPy 2): Poisson arrivals at a station of WORKERS
workers with exponential service; a request still queued TIMEOUT seconds
after it was sent is withdrawn and sent again after a back-off, up to
RETRIES times. Prints one JSON line with the counts and the wall time.

usage: python3 retryqueue_simpy.py RATE WORKERS SERVICE_MEAN TIMEOUT RETRIES BASE FACTOR MAX JITTER HORIZON SEED
"""
import json
import random
import sys
import time

from SimPy.Simulation import Process, Resource, Simulation, hold, release, request


class Model(Simulation):
    def __init__(self, rate, workers, service, timeout, retries, base, factor, cap, jitter, seed):
        Simulation.__init__(self)
        self.rate, self.service, self.timeout, self.retries = rate, service, timeout, retries
        self.base, self.factor, self.cap, self.jitter = base, factor, cap, jitter
        self.rng = random.Random(seed)
        self.initialize()
        self.server = Resource(capacity=workers, sim=self)
        self.arrivals = self.attempts = self.served = self.timedout = self.gaveup = 0

    def backoff(self, k):
        if self.base <= 0:
            return 0.0
        d = self.base * (self.factor if self.factor > 0 else 1) ** (k - 1)
        if self.cap > 0:
            d = min(d, self.cap)
        if self.jitter > 0:
            d *= self.rng.uniform(1 - self.jitter, 1 + self.jitter)
        return d


class Source(Process):
    def run(self, m):
        while True:
            yield hold, self, m.rng.expovariate(m.rate)
            c = Client(sim=m)
            m.activate(c, c.run(m))


class Client(Process):
    def run(self, m):
        m.arrivals += 1
        for k in range(1, m.retries + 2):
            m.attempts += 1
            yield (request, self, m.server), (hold, self, m.timeout)
            if self.acquired(m.server):
                yield hold, self, m.rng.expovariate(1.0 / m.service)
                yield release, self, m.server
                m.served += 1
                return
            m.timedout += 1
            if k > m.retries:
                m.gaveup += 1
                return
            yield hold, self, m.backoff(k)


def main():
    a = sys.argv[1:]
    rate, workers, service, timeout = float(a[0]), int(a[1]), float(a[2]), float(a[3])
    retries, base, factor, cap, jitter = int(a[4]), float(a[5]), float(a[6]), float(a[7]), float(a[8])
    horizon, seed = float(a[9]), int(a[10])
    m = Model(rate, workers, service, timeout, retries, base, factor, cap, jitter, seed)
    src = Source(sim=m)
    m.activate(src, src.run(m))
    t0 = time.perf_counter()
    m.simulate(until=horizon)
    wall = time.perf_counter() - t0
    print(json.dumps({"arrivals": m.arrivals, "attempts": m.attempts, "served": m.served,
                      "timed_out": m.timedout, "gave_up": m.gaveup, "wall_s": wall}))


if __name__ == "__main__":
    main()
