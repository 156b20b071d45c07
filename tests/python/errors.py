#!/usr/bin/env python3
"""errors.py — run under mpiexec and with_pcmd.sh: bad calls of the pcm package raise pcm.Error
with PCM's code and PCM_Last_error's message (or TypeError/ValueError for Python-side misuse);
the job then goes on and ends normally. Prints 'python errors: ok'."""
import sys

import numpy as np

import pcm

from expect import expect as expect_error, expect_type, failures  # noqa: E402


def expect(code, what, call, *args):
    """expect.expect, with the message PCM_Last_error gives."""
    expect_error(code, what, call, *args, last_error=True)


# Before init: local calls that need no MPI.
expect(pcm.ERR_ARG, "Dist.block on 0 processes", pcm.Dist.block, 10, 0)
expect(pcm.ERR_ARG, "Dist.create with an unknown layout", pcm.Dist.create, 99, 10, 2)
comm = pcm.init()
if pcm.process_status() != pcm.STARTED:
    failures.append(f"process_status {pcm.process_status()}, expected STARTED")
dist = pcm.Dist.block(10, comm.size)
expect(pcm.ERR_ARG, "Dist.local of a rank out of range", dist.local, comm.size)
expect(pcm.ERR_ARG, "register_dist with a bad name", pcm.register_dist, "bad name!", np.float64,
       pcm.Dist.block(10, comm.size))
expect_type(TypeError, "register_dist of complex numbers", pcm.register_dist, "c", np.complex128,
            None)
expect_type(ValueError, "register_dist of an array of the wrong size", pcm.register_dist, "w",
            np.float64, pcm.Dist.block(10, comm.size), np.zeros(99))
v = pcm.register_dist("v", np.float64, dist)
expect_type(ValueError, "register_dist of a map already registered", pcm.register_dist, "v2",
            np.float64, dist)
it = pcm.register_value("it", np.int32)
expect(pcm.ERR_ARG, "register_value of a name already registered", pcm.register_value, "it",
       np.int32)
expect(pcm.ERR_STATE, "exit in a process that has not retired", pcm.exit)
expect(pcm.ERR_STATE, "restart_info in a job that was not restarted", pcm.restart_info)
comm = pcm.resume(comm)
expect(pcm.ERR_STATE, "register_value after resume", pcm.register_value, "late", np.int32)
expect_type(TypeError, "adapt of something not a communicator", pcm.adapt, 42)
# The job goes on: a few iterations and a checkpoint.
for t in range(3):
    it.value = t
    status, comm = pcm.adapt(comm)
    if status != pcm.Adapt.NONE:
        failures.append(f"adapt returned {status!r}")
    v.array[:] += 1
pcm.checkpoint(comm, 3)
expect(pcm.ERR_REFUSED, "a second checkpoint of iteration 3", pcm.checkpoint, comm, 3)
ok = comm.allreduce(0 if failures else 1) == comm.size
for f in failures:
    print(f"python errors: rank {comm.rank}: {f}", file=sys.stderr)
if comm.rank == 0:
    print("python errors: ok" if ok else "python errors: FAIL", flush=True)
pcm.finalize(comm)
sys.exit(0 if ok else 1)
