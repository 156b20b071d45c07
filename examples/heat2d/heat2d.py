#!/usr/bin/env python3
"""heat2d.py — heat2d_pcm.c in NumPy through the pcm package: the Jacobi sweep of heat2d_plain.c on
an ny x nx grid (top row 100, the other edges 0), its columns dealt in blocks to the processes with
one ghost column on each side, malleable (split, merge, migrate, resize live; checkpoint; restart
at any process count). Bit for bit with the C heat2d: same checksum, same --dump bytes.

Usage: heat2d.py [--nx N] [--ny N] [--iters N] [--throttle-us N] [--throttle-while FILE]
                 [--commit-every N] [--dump FILE]
Prints, from rank 0, "heat2d: done iters ..." then "checksum %016x" and "reconfigurations N", as
heat2d_pcm does; after a restart "heat2d: restarted from iteration K on N processes".
"""
import argparse
import os
import sys
import time

import numpy as np

import pcm  # before mpi4py.MPI: PCM initialises MPI

from mpi4py import MPI  # noqa: E402

TOP = 100.0
FNV_BASIS, FNV_PRIME, MASK = 14695981039346656037, 1099511628211, (1 << 64) - 1


def options(argv):
    p = argparse.ArgumentParser(prog="heat2d.py")
    for name, default in (("nx", 512), ("ny", 512), ("iters", 2000), ("throttle-us", 0),
                          ("commit-every", 0)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--throttle-while")
    p.add_argument("--dump")
    o = p.parse_args(argv)
    if o.nx < 3 or o.ny < 3 or o.iters < 0 or o.throttle_us < 0 or o.commit_every < 0:
        p.error("--nx and --ny must be at least 3, the others at least 0")
    return o


class Grid:
    """This process's columns: cur (the registered buffer, ghosts included) and next, as (columns,
    ny) arrays; first, the global column of cur[1]; left and right, the neighbours' ranks."""

    def __init__(self, reg, comm, nx, ny):
        self.nx, self.ny = nx, ny
        first, count, offset = reg.dist.segment(comm.rank, 0)
        assert offset == ny, "one ghost column before the segment"
        self.first, self.count = first, count
        self.cur = reg.array.reshape(count + 2, ny)
        self.next = self.cur.copy()  # the fixed edges and ghosts alike
        self.left = reg.dist.owner(first - 1) if first > 0 else MPI.PROC_NULL
        self.right = reg.dist.owner(first + count) if first + count < nx else MPI.PROC_NULL
        # Owned columns the sweep writes: global columns 1 .. nx-2 (0 and nx-1 are fixed).
        lo, hi = max(first, 1), min(first + count - 1, nx - 2)
        self.cols = slice(lo - first + 1, hi - first + 2)  # local indices (ghost first)

    def exchange(self, comm):
        c = self.cur
        reqs = [comm.Irecv(c[-1], self.right, 0), comm.Irecv(c[0], self.left, 1),
                comm.Isend(c[1], self.left, 0), comm.Isend(c[-2], self.right, 1)]
        MPI.Request.Waitall(reqs)

    def step(self):
        c, n, s = self.cur, self.next, self.cols
        if s.start < s.stop:
            # heat2d_step_columns's order, cell by cell: ((up + down) + left) + right.
            lft, rgt = slice(s.start - 1, s.stop - 1), slice(s.start + 1, s.stop + 1)
            n[s, 1:-1] = 0.25 * (c[s, :-2] + c[s, 2:] + c[lft, 1:-1] + c[rgt, 1:-1])
        # The registered buffer keeps the newest grid (what a reconfiguration or checkpoint takes).
        c[s] = n[s]


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def result(grid, comm, dump):
    """The checksum of the column-major grid in global order (rank 0; None elsewhere), and the
    row-major dump. Collective."""
    parts = comm.gather((grid.first, grid.cur[1:-1].copy()), root=0)
    if comm.rank != 0:
        return None
    whole = np.zeros((grid.nx, grid.ny))
    for first, cols in parts:
        whole[first:first + len(cols)] = cols
    if dump:
        np.ascontiguousarray(whole.T).tofile(dump)
    return fnv1a(FNV_BASIS, whole.tobytes())


def run(comm, o):
    origin = pcm.process_status()
    dist = None
    if origin in (pcm.STARTED, pcm.RESTARTED):
        dist = pcm.Dist.block(o.nx, comm.size, unit_len=o.ny, halo=1)
    initial = None
    if origin == pcm.STARTED:
        first, count, _ = dist.segment(comm.rank, 0)
        initial = np.zeros((count + 2, o.ny))
        initial[:, 0] = TOP
    reg = pcm.register_dist("grid", np.float64, dist, initial)
    it = pcm.register_value("it", np.int32)
    reconfigs = pcm.register_value("reconfigs", np.int32)
    comm = pcm.resume(comm)
    if origin in (pcm.MIGRATED, pcm.SPLITTED):
        reconfigs.value += 1
    if origin == pcm.RESTARTED and comm.rank == 0:
        print(f"heat2d: restarted from iteration {it.value} on {comm.size} processes", flush=True)
    grid = Grid(reg, comm, o.nx, o.ny)
    start, t0 = it.value, time.monotonic()
    for t in range(start, o.iters):
        it.value = t
        status, comm = pcm.adapt(comm)
        if status == pcm.Adapt.RETIRED:
            return None, pcm.exit()
        if status == pcm.Adapt.RESHAPED:
            reconfigs.value += 1
            grid = Grid(reg, comm, o.nx, o.ny)
        if o.commit_every > 0 and t > 0 and t % o.commit_every == 0:
            pcm.checkpoint(comm, t)
        grid.exchange(comm)
        grid.step()
        if o.throttle_us and (o.throttle_while is None or os.path.exists(o.throttle_while)):
            time.sleep(o.throttle_us * 1e-6)
    it.value = o.iters
    seconds = time.monotonic() - t0
    s = result(grid, comm, o.dump)
    if comm.rank == 0:
        done = o.iters - start
        print(f"heat2d: done iters {o.iters} procs {comm.size} time {seconds:.3f} s "
              f"{seconds * 1e3 / done if done else 0:.4f} ms/iter")
        print(f"checksum {s:016x}")
        print(f"reconfigurations {reconfigs.value}", flush=True)
    return comm, None


def main():
    o = options(sys.argv[1:])
    comm = pcm.init()
    comm, code = run(comm, o)
    if comm is None:  # retired
        sys.exit(code or 0)
    pcm.finalize(comm)


if __name__ == "__main__":
    main()
