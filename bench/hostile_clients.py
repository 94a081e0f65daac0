#!/usr/bin/env python3
"""Hostile clients of scout-ledgerd for make bench: N connections at once,
a third sending a garbage line, a third holding a silent connection until
the service closes it, a third sending a 200,000-deep request sealed in a
valid MUNGE credential; each reconnects when closed, until SECONDS pass.
One process (asyncio), so the load it puts on the machine is the service's
work, not thousands of forked shells.
  hostile_clients.py PORT N SECONDS DEEP_CREDENTIAL_FILE"""
import asyncio
import sys
import time


async def client(kind, port, deep, until, counts):
    while time.monotonic() < until:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            if kind == "garbage":
                w.write(b"garbage\n")
            elif kind == "deep":
                w.write(deep)
            await w.drain()
            # Read until the service closes the connection (its deadline or
            # its refusal), never longer than the run.
            await asyncio.wait_for(r.read(), timeout=max(0.1, until - time.monotonic()))
            w.close()
            counts[kind] += 1
        except (OSError, asyncio.TimeoutError):
            await asyncio.sleep(0.05)


async def main():
    port, n, seconds, deep_file = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    deep = open(deep_file, "rb").read().strip() + b"\n"
    until = time.monotonic() + seconds
    counts = {"garbage": 0, "silent": 0, "deep": 0}
    kinds = ["garbage", "silent", "deep"]
    await asyncio.gather(*(client(kinds[i % 3], port, deep, until, counts) for i in range(n)))
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


asyncio.run(main())
