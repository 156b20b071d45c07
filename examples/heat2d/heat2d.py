#!/usr/bin/env python3
"""heat2d.py — heat2d_pcm.c in NumPy through the pcm package: the Jacobi sweep of heat2d_plain.c on
an ny x nx grid (top row 100, the other edges 0), its columns dealt to the processes by --layout
(block, cyclic, block-cyclic of --block columns) with one ghost column around each segment,
filled by PCM's halo plan (pcm.Halo), malleable (split, merge, migrate, resize live; checkpoint; restart
at any process count). Bit for bit with the C heat2d: same checksum, same --dump bytes.

Usage: heat2d.py [--nx N] [--ny N] [--iters N] [--throttle-us N] [--throttle-while FILE]
                 [--layout L] [--block B] [--commit-every N] [--dump FILE]
Prints, from rank 0, "heat2d: done iters ..." then "checksum %016x" and "reconfigurations N", as
heat2d_pcm does; after a restart "heat2d: restarted from iteration K on N processes".
"""
import argparse
import os
import sys
import time

import numpy as np

import pcm  # before mpi4py.MPI: PCM initialises MPI (communicators are mpi4py's)

TOP = 100.0
FNV_BASIS, FNV_PRIME, MASK = 14695981039346656037, 1099511628211, (1 << 64) - 1
LAYOUTS = {"block": pcm.BLOCK, "cyclic": pcm.CYCLIC, "block-cyclic": pcm.BLOCK_CYCLIC}


def options(argv):
    p = argparse.ArgumentParser(prog="heat2d.py")
    for name, default in (("nx", 512), ("ny", 512), ("iters", 2000), ("throttle-us", 0),
                          ("commit-every", 0)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--throttle-while")
    p.add_argument("--layout", choices=sorted(LAYOUTS), default="block")
    p.add_argument("--block", type=int, default=4)
    p.add_argument("--dump")
    o = p.parse_args(argv)
    if o.nx < 3 or o.ny < 3 or o.iters < 0 or o.throttle_us < 0 or o.commit_every < 0 or \
            o.block < 1:
        p.error("--nx and --ny must be at least 3, --block at least 1, the others at least 0")
    return o


class Grid:
    """This process's part of the grid: the registered buffer (cur, 1-D), its segments of columns
    (global first column, columns, element offset), each with one ghost column on either side,
    and PCM's halo plan that fills those ghosts."""

    def __init__(self, reg, comm, nx, ny):
        self.reg, self.nx, self.ny = reg, nx, ny
        d = reg.dist
        nseg, _, _ = d.local(comm.rank)
        self.segs = [d.segment(comm.rank, k) for k in range(nseg)]
        self.halo = pcm.Halo(d, comm.rank, 1, np.float64)

    def exchange(self, comm):
        self.halo.exchange(self.reg, comm)

    def step(self):
        cur, ny = self.reg.array, self.ny
        for first, units, offset in self.segs:
            c = cur[offset - ny:offset + (units + 1) * ny].reshape(units + 2, ny)
            # Columns the sweep writes: global 1 .. nx-2 (0 and nx-1 are fixed).
            lo, hi = max(first, 1) - first + 1, min(first + units - 1, self.nx - 2) - first + 1
            if lo > hi:
                continue
            s, lft, rgt = slice(lo, hi + 1), slice(lo - 1, hi), slice(lo + 1, hi + 2)
            # heat2d_step_columns's order, cell by cell: ((up + down) + left) + right. Each
            # segment reads only its own columns and ghosts, so it is written back at once.
            c[s, 1:-1] = 0.25 * (c[s, :-2] + c[s, 2:] + c[lft, 1:-1] + c[rgt, 1:-1])


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def result(grid, comm, dump):
    """The checksum of the column-major grid in global order (rank 0; None elsewhere), and the
    row-major dump. Collective."""
    whole = pcm.gather(grid.reg, 0, comm)
    if comm.rank != 0:
        return None
    whole = whole.reshape(grid.nx, grid.ny)
    if dump:
        np.ascontiguousarray(whole.T).tofile(dump)
    return fnv1a(FNV_BASIS, whole.tobytes())


def run(comm, o):
    origin = pcm.process_status()
    dist = None
    if origin in (pcm.STARTED, pcm.RESTARTED):
        dist = pcm.Dist.create(LAYOUTS[o.layout], o.nx, comm.size, unit_len=o.ny, block=o.block,
                               halo=1)
    initial = None
    if origin == pcm.STARTED:
        initial = np.zeros(dist.local(comm.rank)[2])
        initial.reshape(-1, o.ny)[:, 0] = TOP  # every column's top cell, ghosts included
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
