#!/usr/bin/env python3
"""paper_cost.py — benchmark: the cost per call of the paper's calls from Python, nothing pending:
pcm.status (which keeps the GIL on a local call: PCM_Status_if_local) against pcm.process_status (a call that does
nothing: the cost of calling the extension), and pcm.store / pcm.load of 1000 float64 (pcmd round
trips; load into an array, and into a new one, which asks load_count first). Prints one line per
variant: the minimum over REPS of rank 0's time per call, and every repetition's.

  mpiexec -n 2 /usr/bin/python3 bench/paper_cost.py [CALLS [REPS]]   (PYTHONPATH: the pcm package,
  under a pcmd: tests/integration/with_pcmd.sh PCMD mpiexec ...)
"""
import sys
import time

import numpy as np

import pcm

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
comm = pcm.init()
rank = comm.rank
x, out = np.arange(1000.0), np.zeros(1000)


def per_call(n, fn):
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def status_loop():  # as bench/adapt_cost.py times pcm.adapt: the C function called in the loop
    status, c = pcm.status, comm
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(calls):
        status(c)
    return (time.perf_counter() - t) / calls


def nothing_loop():
    nothing = pcm._pcm.process_status  # a C function of the extension that does nothing
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(calls):
        nothing()
    return (time.perf_counter() - t) / calls


variants = [
    ("pcm.status", 1e9, "ns", status_loop),
    ("the extension's process_status (does nothing)", 1e9, "ns", nothing_loop),
    ("pcm.store of 8 KB", 1e6, "us", lambda: per_call(200, lambda: pcm.store(rank, "x", x))),
    ("pcm.load of 8 KB into an array", 1e6, "us",
     lambda: per_call(200, lambda: pcm.load(rank, "x", out))),
    ("pcm.load of 8 KB, a new array", 1e6, "us", lambda: per_call(200, lambda: pcm.load(rank, "x"))),
]
for name, scale, unit, run in variants:
    times = [run() * scale for _ in range(reps)]
    if rank == 0:
        print(f"paper_cost: {name}: {min(times):.1f} {unit}/call (min of {reps}: "
              f"{', '.join(f'{t:.1f}' for t in times)})", flush=True)
pcm.finalize(comm)
