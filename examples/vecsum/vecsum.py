#!/usr/bin/env python3
"""vecsum.py — vecsum.cpp in Python through the pcm package: a distributed vector updated element
by element, a replicated history of its exact sums, checked exactly at the end; malleable (split,
merge, migrate, resize, checkpoint, restart at any process count). Same output as vecsum.cpp.

Usage: vecsum.py N ITERS LAYOUT(block|cyclic) THROTTLE_US CKPT_EVERY
Every iteration sets v[u] = (3 v[u] + u + it) mod 1000003 for each owned unit u (v[u] starts as
u mod 1000), so every rank can recompute its own units' final values and the sums alone.
"""
import sys
import time

import numpy as np

import pcm  # before mpi4py.MPI: PCM initialises MPI

from mpi4py import MPI  # noqa: E402

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
    return n, iters, argv[2] == "cyclic", throttle, every


def run(comm, n, iters, cyclic, throttle_us, every):
    origin = pcm.process_status()
    # A started or restarted process lays the vector out for this world (a restart then loads the
    # saved state into that map); a spawned one receives map and data in resume().
    dist = None
    if origin in (pcm.STARTED, pcm.RESTARTED):
        dist = (pcm.Dist.cyclic if cyclic else pcm.Dist.block)(n, comm.size)
    v = pcm.register_dist("v", np.int64, dist)
    if dist is not None:
        units, index = dist.owned_units(comm.rank)
        v.array[index] = units % 1000
    it = pcm.register_value("it", np.int32)
    reconfigs = pcm.register_value("reconfigs", np.int32)
    history = pcm.register_value("history", np.int64, HISTORY)
    computed = pcm.register_local("computed", np.int64)  # iterations this process computed
    comm = pcm.resume(comm)
    if origin in (pcm.MIGRATED, pcm.SPLITTED):
        reconfigs.value += 1
    joined = it.value
    if origin == pcm.RESTARTED and comm.rank == 0:
        print(f"vecsum: restarted from iteration {joined} on {comm.size} processes", flush=True)

    units, index = v.dist.owned_units(comm.rank)
    a = v.array
    for t in range(joined, iters):
        it.value = t
        status, comm = pcm.adapt(comm)
        if status == pcm.Adapt.RETIRED:
            print("vecsum: retired", flush=True)
            pcm.exit()
            return 0
        if status == pcm.Adapt.RESHAPED:  # a new buffer, map and rank: derive them again
            reconfigs.value += 1
            units, index = v.dist.owned_units(comm.rank)
            a = v.array
        if every > 0 and t > 0 and t % every == 0:
            pcm.checkpoint(comm, t)
        x = (a[index] * 3 + units + t) % MOD
        a[index] = x
        history.array[t % HISTORY] = comm.allreduce(int(x.sum()), op=MPI.SUM)
        computed.value += 1
        if throttle_us > 0:
            time.sleep(throttle_us * 1e-6)
    it.value = iters
    pcm.checkpoint_wait(comm)  # the last version (written in the background) is committed

    # Each rank recomputes its own units from scratch, and its part of the last sums.
    rank, size = comm.rank, comm.size
    x = units % 1000
    expected = np.zeros(HISTORY, np.int64)
    for t in range(iters):
        x = (x * 3 + units + t) % MOD
        if t >= iters - HISTORY:
            expected[t % HISTORY] += x.sum()
    wrong = int(np.count_nonzero(a[index] != x))
    comm.Allreduce(MPI.IN_PLACE, expected, op=MPI.SUM)
    for k in np.nonzero(history.array != expected)[0]:
        print(f"vecsum: rank {rank}: history[{k}] is {history.array[k]}, not {expected[k]}",
              file=sys.stderr)
        wrong += 1
    owned = comm.allreduce(len(units), op=MPI.SUM)
    if owned != n:
        if rank == 0:
            print(f"vecsum: the ranks own {owned} units, not {n}", file=sys.stderr)
        wrong += 1
    # register_local: a started process has computed every iteration, one spawned by a split every
    # one since it joined; any other at least those.
    since, done = iters - joined, computed.value
    if ((origin == pcm.STARTED and done != iters) or (origin == pcm.SPLITTED and done != since)
            or done < since or done > iters):
        print(f"vecsum: rank {rank} (origin {origin}, joined at {joined}): computed {done} "
              "iterations", file=sys.stderr)
        wrong += 1
    wrong = comm.allreduce(wrong, op=MPI.SUM)
    if rank == 0:
        print("vecsum: history " + " ".join(str(h) for h in history.array.tolist()))
        print(f"vecsum: {'ok' if wrong == 0 else 'FAIL'}: {reconfigs.value} reconfigurations, "
              f"{size} processes, {wrong} wrong", flush=True)
    pcm.finalize(comm)
    return 0 if wrong == 0 else 1


def main():
    try:
        comm = pcm.init()
    except pcm.Error as e:
        print(f"vecsum: FAIL: {e}", file=sys.stderr)
        return 1
    opt = parse(sys.argv[1:])
    if opt is None:
        if comm.rank == 0:
            print("usage: vecsum.py N ITERS LAYOUT(block|cyclic) THROTTLE_US CKPT_EVERY",
                  file=sys.stderr)
        pcm.finalize(comm)
        return 2
    try:
        return run(comm, *opt)
    except pcm.Error as e:
        print(f"vecsum: FAIL: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
