#!/usr/bin/env python3
"""vecsum_plain.py — vecsum.py without PCM (mpi4py and NumPy only, not malleable): the same
computation and output, for comparison (docs/user/python.md counts the lines PCM adds).

Usage: vecsum_plain.py N ITERS LAYOUT(block|cyclic) THROTTLE_US CKPT_EVERY (ignored)
"""
import sys
import time

import numpy as np
from mpi4py import MPI

MOD = 1000003
HISTORY = 8


def parse(argv):
    if len(argv) != 5 or argv[2] not in ("block", "cyclic"):
        return None
    try:
        n, iters, throttle, every = (int(argv[i]) for i in (0, 1, 3, 4))
    except ValueError:
        return None
    if n < 1 or min(iters, throttle, every) < 0:
        return None
    return n, iters, argv[2] == "cyclic", throttle


def owned_units(n, cyclic, rank, size):
    """The units of a block (near-equal ranges, the larger first) or cyclic map, as PCM lays them."""
    if cyclic:
        return np.arange(rank, n, size, dtype=np.int64)
    base, extra = divmod(n, size)
    first = rank * base + min(rank, extra)
    return np.arange(first, first + base + (rank < extra), dtype=np.int64)


def run(comm, n, iters, cyclic, throttle_us):
    units = owned_units(n, cyclic, comm.rank, comm.size)
    a = units % 1000
    history = np.zeros(HISTORY, np.int64)
    for t in range(iters):
        a = (a * 3 + units + t) % MOD
        history[t % HISTORY] = comm.allreduce(int(a.sum()), op=MPI.SUM)
        if throttle_us > 0:
            time.sleep(throttle_us * 1e-6)

    x = units % 1000
    expected = np.zeros(HISTORY, np.int64)
    for t in range(iters):
        x = (x * 3 + units + t) % MOD
        if t >= iters - HISTORY:
            expected[t % HISTORY] += x.sum()
    wrong = int(np.count_nonzero(a != x))
    comm.Allreduce(MPI.IN_PLACE, expected, op=MPI.SUM)
    wrong += int(np.count_nonzero(history != expected))
    wrong += comm.allreduce(len(units), op=MPI.SUM) != n
    wrong = comm.allreduce(wrong, op=MPI.SUM)
    if comm.rank == 0:
        print("vecsum: history " + " ".join(str(h) for h in history.tolist()))
        print(f"vecsum: {'ok' if wrong == 0 else 'FAIL'}: 0 reconfigurations, {comm.size} "
              f"processes, {wrong} wrong", flush=True)
    return 0 if wrong == 0 else 1


def main():
    opt = parse(sys.argv[1:])
    if opt is None:
        if MPI.COMM_WORLD.rank == 0:
            print("usage: vecsum_plain.py N ITERS LAYOUT(block|cyclic) THROTTLE_US CKPT_EVERY",
                  file=sys.stderr)
        return 2
    return run(MPI.COMM_WORLD, *opt)


if __name__ == "__main__":
    sys.exit(main())
