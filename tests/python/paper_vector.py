"""paper_vector.py — a vector in a block-distributed NumPy array, made malleable with the paper's
explicit calls (pcm.status, store/load, reconfigure, split, merge, commit) as a program written
against the paper would be: no registration, the program moves its own data.

    mpiexec -n P python3 paper_vector.py [--units N] [--iters N] [--commit-every K]
                                          [--throttle-us US] [--throttle-while FILE]

Element g (one per unit, one ghost unit each side) holds g * 1000 + it at the top of iteration
it: every iteration adds 1 to the owned elements and fills the ghosts from their owners. After
every reconfiguration (migration, split, merge) and a restart every process checks every element
it holds, and its ghosts after every exchange; the last world checks the global sum. Rank 0
prints one line per reconfiguration (its kind from pcm.reconfig_last) and ends with
"paper: ok: R reconfigurations, P processes, 0 wrong". Run by tests/integration/paper_python.sh.
"""
import argparse
import os
import sys
import time

import numpy as np

import pcm  # before mpi4py.MPI: PCM initialises and finalizes MPI
from mpi4py import MPI

p = argparse.ArgumentParser()
p.add_argument("--units", type=int, default=1001)
p.add_argument("--iters", type=int, default=600)
p.add_argument("--commit-every", type=int, default=0)
p.add_argument("--throttle-us", type=int, default=0)
p.add_argument("--throttle-while")
o = p.parse_args()


def fail(msg):
    print(f"paper: FAIL: rank {comm.rank}: {msg}", flush=True)
    comm.Abort(1)


def expected(dist, rank, it):
    """(element offsets, expected values) of rank's owned elements at the top of iteration it."""
    units, offsets = dist.owned_units(rank)
    return offsets, units.astype(np.float64) * 1000.0 + it


def check(x, dist, rank, it, what):
    """Every owned element, and the buffer's length; returns the number wrong."""
    n = dist.local(rank)[2]
    if x.shape != (n,):
        fail(f"{what}: the array has shape {x.shape}, its map gives {n} elements")
    offsets, want = expected(dist, rank, it)
    return int(np.count_nonzero(x[offsets] != want))


def ghost_units(dist, rank):
    """{element offset of a ghost unit: its global unit} for rank's buffer (inside [0, units))."""
    g = {}
    for s in range(dist.local(rank)[0]):
        first, count, offset = dist.segment(rank, s)
        for k in range(1, dist.halo + 1):
            if first - k >= 0:
                g[offset - k] = first - k
            if first + count - 1 + k < dist.units:
                g[offset + count - 1 + k] = first + count - 1 + k
    return g


def plan(dist, rank):
    """The halo plan, checked against the map: every entry's ghosts come from their owner."""
    h = pcm.Halo(dist, rank, 1, np.float64)
    ghosts = ghost_units(dist, rank)
    seen = 0
    for peer, ghost_offset, source_offset, units in h.entries():
        for u in range(units):
            unit = ghosts.get(ghost_offset + u)
            if unit is None or dist.owner(unit) != peer:
                fail(f"halo entry ({peer}, {ghost_offset}, {source_offset}, {units}): offset "
                     f"{ghost_offset + u} is not a ghost of a unit that rank {peer} owns")
            seen += 1
    if seen != len(ghosts):
        fail(f"the halo plan fills {seen} ghost units, the map gives {len(ghosts)}")
    return h, ghosts


def report():
    """Rank 0: what the reconfiguration just made was (PCM_Reconfig_last, _reason)."""
    if rank == 0:
        kind, before, started = pcm.reconfig_last()
        reason = pcm.reconfig_reason()
        if min(pcm.reconfig_times()) < 0:
            fail(f"reconfig_times {pcm.reconfig_times()}")
        print(f"paper: reconfiguration {reconfigs} at iteration {it}: kind {kind}, {before} -> "
              f"{comm.size} processes, {time.time() - started:.2f} s ago, reason {reason!r}: "
              "every element right", flush=True)


comm = pcm.init()
rank = comm.rank
origin = pcm.process_status()
reconfigs = 0
restarted_from = -1
if origin == pcm.STARTED:
    it = 0
    dist = pcm.Dist.block(o.units, comm.size, halo=1)
    x = np.zeros(dist.local(rank)[2])
    offsets, values = expected(dist, rank, 0)
    x[offsets] = values
elif origin == pcm.SPLITTED:  # receive this process's part, the map and the iteration
    comm, x, dist, it = pcm.split(comm, None, None, 0, dtype=np.float64)
    rank = comm.rank
    if x.size and (type(x.base).__name__ != "PyCapsule" or not x.flags.writeable):
        fail(f"the array split gave owns no buffer of its own: base {x.base!r}")
    reconfigs = int(pcm.load(0, "reconfigs")[0])
elif origin == pcm.MIGRATED:  # take over the mover's state
    dist = pcm.load_dist(rank, "dist")
    x = pcm.load(rank, "x", np.zeros(dist.local(rank)[2]))
    it = int(pcm.load(rank, "it", np.int32)[0])
    reconfigs = int(pcm.load(rank, "reconfigs")[0])
    dtype, count = pcm.load_count(rank, "x")
    if dtype != np.float64 or count != x.size:
        fail(f"load_count says {dtype} x {count}, the array is float64 x {x.size}")
elif origin == pcm.RESTARTED:  # the newest version, at this run's process count
    it, then = pcm.restart_info()
    restarted_from = it
    old = pcm.load_dist(0, "dist")
    dist = pcm.Dist.block(old.units, comm.size, halo=old.halo)
    x = pcm.load_redistribute("x", np.float64, old, dist, rank)
    if rank == 0:
        print(f"paper: restarted from iteration {it} ({then} -> {comm.size} processes)", flush=True)
else:
    fail(f"process status {origin}")
bad = check(x, dist, rank, it, "at start")
if comm.allreduce(bad) != 0:
    fail(f"{bad} wrong elements at start ({origin})")
halo, ghosts = plan(dist, rank)
if origin in (pcm.SPLITTED, pcm.MIGRATED):
    report()

while it < o.iters:
    s = pcm.status(comm)  # collective; cheap when nothing is pending
    size_before = comm.size
    if s == pcm.Status.MIGRATE:  # this process moves: leave its state behind
        pcm.store_dist(rank, "dist", dist)
        pcm.store(rank, "x", x)
        pcm.store(rank, "it", np.int32(it))
        pcm.store(rank, "reconfigs", np.int64(reconfigs + 1))
    if s in (pcm.Status.MIGRATE, pcm.Status.RECONFIGURE):
        comm = pcm.reconfigure(comm)
    elif s == pcm.Status.SPLIT:
        if rank == 0:
            pcm.store(0, "reconfigs", np.int64(reconfigs + 1))
        kept, (offsets, values) = x, expected(dist, rank, it)
        comm, x, dist, it = pcm.split(comm, x, dist, it)
        if not np.array_equal(kept[offsets], values):  # split works on a copy: kept is intact
            print(f"paper: FAIL: rank {rank}: the array given to split changed", flush=True)
            sys.exit(1)
    elif s == pcm.Status.MERGE:
        count, merged_rank = pcm.merge_datacnts(dist, comm)
        comm, x, dist, it = pcm.merge(comm, x, dist, it)
        if comm != MPI.COMM_NULL and (x.size != count or comm.rank != merged_rank):
            fail(f"merge_datacnts said {count} elements as rank {merged_rank}, "
                 f"merge gave {x.size} as rank {comm.rank}")
    elif s == pcm.Status.STOP:
        break
    if comm == MPI.COMM_NULL:  # this process left the world: wait for the end, using no CPU
        sys.exit(pcm.exit() or 0)
    if s != pcm.Status.NONE:
        reconfigs += 1
        rank = comm.rank
        if s in (pcm.Status.SPLIT, pcm.Status.MERGE) and x.size and (
                type(x.base).__name__ != "PyCapsule" or not x.flags.writeable):
            fail(f"the array merge gave owns no buffer of its own: base {x.base!r}")
        bad = check(x, dist, rank, it, f"after reconfiguration {reconfigs}")
        if comm.allreduce(bad) != 0:
            fail(f"{bad} wrong elements after reconfiguration {reconfigs}")
        halo, ghosts = plan(dist, rank)
        report()
    if o.commit_every and it % o.commit_every == 0 and it != restarted_from:
        if rank == 0:
            pcm.store_dist(0, "dist", dist)
        pcm.store(rank, "x", x)
        pcm.commit(comm, it)
    offsets, _ = expected(dist, rank, it)
    x[offsets] += 1.0
    halo.exchange(x, comm)
    it += 1
    got = np.array([x[off] for off in ghosts])
    want = np.array([u * 1000.0 + it for u in ghosts.values()])
    if not np.array_equal(got, want):
        fail(f"ghosts after the exchange of iteration {it}: {got} != {want}")
    if o.throttle_us and (not o.throttle_while or os.path.exists(o.throttle_while)):
        time.sleep(o.throttle_us / 1e6)

bad = comm.allreduce(check(x, dist, rank, it, "at the end"))
offsets, _ = expected(dist, rank, it)
total = comm.allreduce(float(x[offsets].sum()))
want = 1000.0 * o.units * (o.units - 1) / 2 + float(it) * o.units
if rank == 0:
    print(f"paper: sum {total:.1f}, expected {want:.1f}", flush=True)
    if bad == 0 and total == want:
        print(f"paper: ok: {reconfigs} reconfigurations, {comm.size} processes, 0 wrong",
              flush=True)
    else:
        print(f"paper: FAIL: {bad} wrong", flush=True)
pcm.finalize(comm)
sys.exit(0 if bad == 0 and total == want else 1)
