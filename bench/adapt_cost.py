#!/usr/bin/env python3
"""adapt_cost.py — benchmark: the cost per call of pcm.adapt from Python against PCM_Adapt called
from C (a loop inside the extension), and an empty Python loop, in the same run; nothing pending,
so each call is PCM_Status's cost plus the binding's. Prints one line per variant and repetition,
the slowest rank's time, as bench/status_cost does.

  mpiexec -n 2 /usr/bin/python3 bench/adapt_cost.py [CALLS [REPS]]   (PYTHONPATH: the pcm package)
"""
import sys

import pcm

from mpi4py import MPI  # noqa: E402

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
comm = pcm.init()
comm = pcm.resume(comm)  # nothing registered: adapt is PCM_Status


def python_adapt(n):
    global comm
    adapt, none = pcm.adapt, pcm.Adapt.NONE
    t0 = MPI.Wtime()
    for _ in range(n):
        status, comm = adapt(comm)
        if status != none:
            raise SystemExit("adapt_cost: unexpected reconfiguration")
    return MPI.Wtime() - t0


def empty(n):
    t0 = MPI.Wtime()
    for _ in range(n):
        pass
    return MPI.Wtime() - t0


variants = [("python empty loop", empty), ("C PCM_Adapt", lambda n: pcm._pcm._adapt_loop(comm, n)),
            ("python pcm.adapt", python_adapt)]
for rep in range(reps):
    for name, f in variants:
        comm.Barrier()
        t = comm.allreduce(f(calls), op=MPI.MAX)
        if comm.rank == 0:
            print(f"adapt_cost: rep {rep} procs {comm.size} {name:<18} {t / calls * 1e6:.3f} us/call",
                  flush=True)
pcm.finalize(comm)
