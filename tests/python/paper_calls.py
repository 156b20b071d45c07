#!/usr/bin/env python3
"""paper_calls.py — run under mpiexec -n 2 and with_pcmd.sh: the paper's explicit calls of the pcm
package without a reconfiguration. store/load round trips of every dtype and shape (every element
compared), load_count, store_dist/load_dist, Halo.entries against the map, commit; and the
refusals: each raises pcm.Error with PCM's code (or TypeError/ValueError for Python-side misuse)
and leaves the caller's array and map as they were. Prints 'python paper calls: ok'."""
import sys

import numpy as np

import pcm
from mpi4py import MPI

from expect import expect, expect_type, failures  # noqa: E402


def same(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        failures.append(f"{what}: got {got.dtype} {got.shape} {got!r}, expected {want.dtype} "
                        f"{want.shape} {want!r}")


comm = pcm.init()
rank, size = comm.rank, comm.size
expect(pcm.ERR_STATE, "reconfig_last before any reconfiguration", pcm.reconfig_last)
expect(pcm.ERR_STATE, "reconfig_reason before any reconfiguration", pcm.reconfig_reason)
for t in range(5):
    s = pcm.status(comm)
    if s is not pcm.Status.NONE:
        failures.append(f"status returned {s!r}, expected pcm.Status.NONE")
expect_type(TypeError, "status of something not a communicator", pcm.status, 42)

# store / load: every dtype, any shape (stored flat), a scalar; every element compared.
rng = np.random.default_rng(7 + rank)
for dtype in (np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64):
    a = (rng.random((3, 5)) * 100).astype(dtype)
    key = f"a.{np.dtype(dtype).name}"
    pcm.store(rank, key, a)
    same(f"load {key} (stored type)", pcm.load(rank, key), a.ravel())
    same(f"load {key} as dtype", pcm.load(rank, key, dtype), a.ravel())
    out = np.zeros((5, 3), dtype)
    if pcm.load(rank, key, out) is not out:
        failures.append(f"load {key} into out did not return out")
    same(f"load {key} into a (5, 3) array", out, a.reshape(5, 3))
    dt, count = pcm.load_count(rank, key)
    if dt != np.dtype(dtype) or count != 15:
        failures.append(f"load_count {key}: {dt} x {count}, expected {np.dtype(dtype)} x 15")
pcm.store(rank, "it", np.int32(41 + rank))
same("a stored scalar", pcm.load(rank, "it"), np.array([41 + rank], np.int32))
pcm.store(rank, "strided", np.arange(20.0)[::2])  # not contiguous: stored as a copy
same("a strided array", pcm.load(rank, "strided"), np.arange(20.0)[::2])
comm.Barrier()  # any process may load any rank's key
other = (rank + 1) % size
same("another rank's key", pcm.load(other, "it"), np.array([41 + other], np.int32))

expect(pcm.ERR_NOT_FOUND, "load of a key never stored", pcm.load, rank, "never")
expect(pcm.ERR_COUNT, "load into an array of the wrong size", pcm.load, rank, "a.float64",
       np.zeros(14))
expect(pcm.ERR_TYPE, "load into an array of the wrong dtype", pcm.load, rank, "a.float64",
       np.zeros(15, np.float32))
expect(pcm.ERR_TYPE, "load as another dtype", pcm.load, rank, "a.int32", np.int64)
expect(pcm.ERR_ARG, "store under a bad key", pcm.store, rank, "bad key!", np.zeros(3))
expect_type(TypeError, "store of complex numbers", pcm.store, rank, "c", np.zeros(3, complex))
expect_type(TypeError, "store of big-endian numbers", pcm.store, rank, "be",
            np.zeros(3, ">f8"))
expect_type(ValueError, "load into a read-only array", pcm.load, rank, "a.float64",
            np.broadcast_to(np.zeros(1), (15,)))

# store_dist / load_dist: the same map back (fields and every rank's units and offsets).
dist = pcm.Dist.create(pcm.BLOCK_CYCLIC, 23, size, unit_len=3, block=2, halo=1)
pcm.store_dist(rank, "dist", dist)
back = pcm.load_dist(rank, "dist")
for f in ("size", "layout", "units", "unit_len", "block", "halo"):
    if getattr(back, f) != getattr(dist, f):
        failures.append(f"load_dist: {f} {getattr(back, f)}, stored {getattr(dist, f)}")
for r in range(size):
    for got, want in zip(back.owned_units(r), dist.owned_units(r)):
        same(f"load_dist: rank {r}'s owned units", got, want)

# Halo.entries: a block map's, exactly; a cyclic map's, against the map.
b = pcm.Dist.block(10, size, halo=1)
entries = pcm.Halo(b, rank, 1, np.float64).entries()
if size == 2:
    want = [(1, 6, 1, 1)] if rank == 0 else [(0, 0, 5, 1)]
    if entries != want:
        failures.append(f"Halo.entries of block(10, 2, halo=1): {entries}, expected {want}")
c = pcm.Dist.cyclic(11, size, halo=1)
for peer, ghost, source, units in pcm.Halo(c, rank, 1, np.float64).entries():
    # c's buffer: per owned unit u at offset o, its ghosts u-1 at o-1 and u+1 at o+1.
    units_at = dict(zip(*c.owned_units(rank)[::-1]))
    peer_at = dict(zip(*c.owned_units(peer)))
    for k in range(units):
        left, right = units_at.get(ghost + k + 1), units_at.get(ghost + k - 1)
        unit = left - 1 if left is not None else right + 1
        if c.owner(unit) != peer or peer_at.get(unit) != source + k:
            failures.append(f"Halo.entries of cyclic: ({peer}, {ghost}, {source}, {units}): "
                            f"ghost unit {unit} is at {peer_at.get(unit)} in its owner "
                            f"{c.owner(unit)}")

# The reconfiguring calls with nothing pending are refused; array and map stay as they were.
x = np.arange(float(b.local(rank)[2]))
x0 = x.copy()
expect(pcm.ERR_STATE, "split with no split pending", pcm.split, comm, x, b, 0)
expect(pcm.ERR_STATE, "merge with no merge pending", pcm.merge, comm, x, b, 0)
expect(pcm.ERR_STATE, "split_collective with no split pending", pcm.split_collective, comm, x, b,
       0)
expect(pcm.ERR_STATE, "merge_collective with no merge pending", pcm.merge_collective, comm, x, b,
       0)
expect(pcm.ERR_STATE, "merge_datacnts with no merge pending", pcm.merge_datacnts, b, comm)
expect(pcm.ERR_STATE, "reconfigure with nothing pending", pcm.reconfigure, comm)
same("the array after refused calls", x, x0)
if b.local(rank)[2] != x.size:
    failures.append("the map after refused calls")
expect_type(ValueError, "split of an array of the wrong size", pcm.split, comm, x[1:], b, 0)
expect_type(ValueError, "split without an array or a dtype", pcm.split, comm, None, None, 0)
# A mistake on one process only: every process raises (none is left waiting in the C call).
expect_type(ValueError, "split with a wrong array on rank 0 only", pcm.split, comm,
            x[1:] if rank == 0 else x, b, 0)
expect_type(TypeError, "merge with another dtype on rank 0 only", pcm.merge, comm,
            x.astype(np.float32) if rank == 0 else x, b, 0)
same("the array after refused calls", x, x0)
if b.local(rank)[2] != x.size:
    failures.append("the map after a refused split")
expect_type(TypeError, "merge of complex numbers", pcm.merge, comm, x.astype(complex), b, 0)
if not isinstance(pcm.reconfig_times(), tuple):
    failures.append("reconfig_times did not return a tuple")

# commit: every rank's store of x, one version; a second of the same iteration is refused.
pcm.store(rank, "x", x)
pcm.commit(comm, 5)
expect(pcm.ERR_REFUSED, "a second commit of iteration 5", pcm.commit, comm, 5)
if pcm.status(comm) != pcm.Status.NONE:
    failures.append("status after commit")

ok = comm.allreduce(0 if failures else 1, op=MPI.SUM) == size
for f in failures:
    print(f"python paper calls: rank {rank}: {f}", file=sys.stderr)
if rank == 0:
    print("python paper calls: ok" if ok else "python paper calls: FAIL", flush=True)
pcm.finalize(comm)
sys.exit(0 if ok else 1)
