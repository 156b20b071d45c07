"""readme_loop.py — readme_loop.c through the package pcm (in docs/user/python.md; run as a test)."""
import sys

import numpy as np

import pcm  # before mpi4py.MPI: PCM initialises and finalizes MPI

comm = pcm.init()  # the PCM world, an mpi4py Comm; pcm.Error on failure
started = pcm.process_status() == pcm.STARTED  # spawned processes receive theirs
x = pcm.register_dist("x", np.float64, pcm.Dist.block(1000, comm.size, 4) if started else None)
x.array[:] = 1.0  # this process's units of 4 doubles (none yet where spawned)
it = pcm.register_value("it", np.int32)  # the same on every process
comm = pcm.resume(comm)
while it.value < 100:
    status, comm = pcm.adapt(comm)  # collective; cheap when nothing is pending
    if status == pcm.Adapt.RETIRED:
        pcm.exit()
        sys.exit(0)
    x.array[:] *= 0.5  # the current buffer; compute and communicate on comm
    it.value += 1
if x.dist.owner(0) == comm.rank:  # unit 0 comes first in its owner's buffer
    print(f"x[0] = {x.array[0]:g}")
pcm.finalize(comm)
