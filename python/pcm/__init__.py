"""pcm — PCM's register-once calls for Python: make an iterative mpi4py + NumPy program malleable
(migrate, split, merge, resize live; checkpoint; restart at any process count). See
docs/user/python.md.

    import pcm                         # before mpi4py.MPI: PCM initialises and finalizes MPI
    comm = pcm.init()                  # MPI_PCM_Init + PCM_Init: the PCM world (an mpi4py Comm)
    dist = pcm.Dist.block(n, comm.size) if pcm.process_status() == pcm.STARTED else None
    v = pcm.register_dist("v", np.float64, dist)     # v.array: this process's part
    it = pcm.register_value("it", np.int32)          # it.value: a replicated scalar
    comm = pcm.resume(comm)
    while it.value < n_iters:
        status, comm = pcm.adapt(comm)
        if status == pcm.Adapt.RETIRED:
            pcm.exit(); sys.exit(0)
        if status == pcm.Adapt.RESHAPED:
            ...  # read v.array (and v.dist, comm.rank) again: the old array's memory is gone
        ...
        it.value += 1
    pcm.finalize(comm)

The paper's explicit calls (Table 1) are here too, for code written against them: status(comm),
store/load, commit, reconfigure, split/merge over a NumPy array and a Dist (docs/user/python.md).

Errors of the library raise pcm.Error, whose .code is PCM's (pcm.ERR_ARG, ...) and whose
.message is PCM_Last_error's.
"""
import enum
import os
import sys

import mpi4py
import numpy as _np

# PCM's MPI_PCM_Init initialises MPI and PCM_Finalize / PCM_Exit finalize it: mpi4py must do
# neither (set before mpi4py.MPI is first imported, which the extension below does).
if "mpi4py.MPI" not in sys.modules:
    mpi4py.rc.initialize = False
    mpi4py.rc.finalize = False

# libpcm defines MPI functions in place of MPI's (the profiling interface: the application's
# profile, retired processes parked in MPI_Finalize). Loaded into the global scope before
# mpi4py.MPI, it also sees mpi4py's MPI calls.
_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)
try:
    from . import _pcm
finally:
    sys.setdlopenflags(_flags)

from ._pcm import Dist, DistArray, Halo  # noqa: E402  (after the dlopen flags above)

SUCCESS = 0
ERR_ARG, ERR_STATE, ERR_CONFIG, ERR_DAEMON, ERR_REFUSED, ERR_NOT_FOUND = -1, -2, -3, -4, -5, -6
ERR_TYPE, ERR_COUNT, ERR_MPI, ERR_SPAWN, ERR_INTERNAL, ERR_CORRUPT, ERR_NOSPACE = (
    -7, -8, -9, -10, -11, -12, -13)

# How this process came to be (process_status).
STARTED, MIGRATED, SPLITTED, RETIRED, RESTARTED = 1, 2, 3, 4, 5
# Layouts of a Dist.
BLOCK, CYCLIC, BLOCK_CYCLIC, IRREGULAR = 1, 2, 3, 4


class Adapt(enum.IntEnum):
    """What adapt() did: nothing, a new world (re-read arrays, maps, rank), or this process left."""

    NONE = 0
    RETIRED = 4
    RESHAPED = 6


class Status(enum.IntEnum):
    """What status() says (PCM_Status): nothing, this process moves (store its state, then
    reconfigure), another one moves (reconfigure), the world grows (split) or shrinks (merge),
    the job is asked to end (commit, then finalize)."""

    NONE = 0
    MIGRATE = 1
    RECONFIGURE = 2
    SPLIT = 3
    MERGE = 4
    STOP = 7


class Error(Exception):
    """A PCM call failed: .code is PCM's error code (ERR_*), .message PCM_Last_error's text."""

    def __init__(self, code, message=""):
        self.code = code
        self.message = message
        self.name = _pcm.error_string(code)
        super().__init__(f"{message} ({self.name}, {code})" if message else f"{self.name} ({code})")


_pcm._setup(Error, Adapt.NONE, Adapt.RESHAPED, Adapt.RETIRED)
_pcm._setup_status(Status)


class Value:
    """A registered value: .array (a NumPy array that stays the same object) and .value (its first
    element, as a Python number)."""

    __slots__ = ("name", "array")

    def __init__(self, name, array):
        self.name = name
        self.array = array

    @property
    def value(self):
        return self.array[0].item()

    @value.setter
    def value(self, x):
        self.array[0] = x

    def __repr__(self):
        return f"pcm.Value({self.name!r}, {self.array!r})"


def _value(name, data, count, local):
    if isinstance(data, _np.ndarray):
        array = data
    else:
        array = _np.zeros(count, dtype=data)
    _pcm.register_value(name, array, local)
    return Value(name, array)


def init(argv=None):
    """MPI_PCM_Init and PCM_Init: returns the PCM world (an mpi4py Comm). argv (default: this
    interpreter's command line, sys.orig_argv) is what processes spawned by a reconfiguration run,
    after the interpreter itself. Collective. On failure MPI is finalized and pcm.Error raised."""
    return _pcm.init(list(sys.orig_argv if argv is None else argv))


def process_status():
    """STARTED, MIGRATED, SPLITTED, RESTARTED, or RETIRED (PCM_Process_Status). Local."""
    return _pcm.process_status()


def register_dist(name, dtype, dist=None, array=None):
    """Register a distributed array of dtype (int8, uint8, int32, int64, float32, float64) laid
    out by dist (a new pcm.Dist, which the registration takes over: from now on it shows the
    current map), or None where the process holds none yet (a spawned process receives it in
    resume). Its buffer starts zeroed, or as a copy of array. Returns a DistArray: read .array
    (a NumPy view of the library's buffer, halos included) again whenever adapt returns RESHAPED,
    since the library frees the old buffer. Local."""
    return _pcm.register_dist(name, dtype, dist, array)


def register_value(name, data, count=1):
    """Register a value every process holds alike: data is a NumPy array (registered in place:
    never resize it) or a dtype for a new zeroed array of count elements. Returns a Value. Local."""
    return _value(name, data, count, False)


def register_local(name, data, count=1):
    """As register_value, for a value of this process's own (PCM_Register_local). Local."""
    return _value(name, data, count, True)


unregister = _pcm.unregister
resume = _pcm.resume  # resume(comm) -> comm: PCM_Resume, collective
adapt = _pcm.adapt  # adapt(comm) -> (Adapt, comm): PCM_Adapt, collective
checkpoint = _pcm.checkpoint  # checkpoint(comm, iteration): PCM_Checkpoint, collective
checkpoint_wait = _pcm.checkpoint_wait  # checkpoint_wait(comm): PCM_Checkpoint_wait, collective
restart_info = _pcm.restart_info  # -> (iteration, process count) in a restarted job
# gather(array, root, comm) -> the whole registered array on root (global order, no ghosts), None
# elsewhere: PCM_Dist_gather, collective.
gather = _pcm.gather
# topology(comm) -> this process's colour at each level (site, host): PCM_Topology, collective.
topology = _pcm.topology
# host_comm(comm) -> the processes of comm on this host, a new Comm (free it): PCM_Host_comm.
host_comm = _pcm.host_comm
error_string = _pcm.error_string
last_error = _pcm.last_error

# The paper's explicit calls (docs/user/python.md, "The paper's calls"). Local unless collective.
# status(comm) -> Status: PCM_Status, collective, at the top of every iteration.
status = _pcm.status
# store(rank, key, array): PCM_Store of all of array's elements (any shape; a scalar is one).
store = _pcm.store
# load(rank, key, out=None) -> array: PCM_Load into out (a writable C-contiguous array, returned)
# or, given a dtype or None (the stored type), into a new 1-D array of the stored count.
load = _pcm.load
# load_count(rank, key) -> (dtype, count): PCM_Load_count.
load_count = _pcm.load_count
# store_dist(rank, key, dist), load_dist(rank, key) -> a new Dist: PCM_Store_dist, PCM_Load_dist.
store_dist = _pcm.store_dist
load_dist = _pcm.load_dist
# load_redistribute(key, dtype, from_dist, to_dist, rank, out=None) -> array laid out for rank by
# to_dist: PCM_Load_redistribute (a restarted job, before its first status).
load_redistribute = _pcm.load_redistribute
# commit(comm, iteration): PCM_Commit, collective.
commit = _pcm.commit
# reconfigure(comm, command=None) -> comm: PCM_Reconfigure, collective; MPI.COMM_NULL in the mover.
reconfigure = _pcm.reconfigure
# split(comm, array, dist, iteration, dtype=None, command=None) -> (comm, array, dist, iteration):
# PCM_Split, collective. dist is taken over (it shows no map afterwards); array is copied, and
# stays valid. New processes get a new array (owning the library's buffer) and a new Dist; the old
# ones get (MPI.COMM_NULL, None, None, iteration): call exit(). A process spawned by a split
# (process_status() == SPLITTED) calls split(comm, None, None, 0, dtype) to receive its part.
split = _pcm.split
split_collective = _pcm.split_collective
# merge(comm, array, dist, iteration, dtype=None) -> (comm, array, dist, iteration): PCM_Merge, as
# split; a process that leaves gets (MPI.COMM_NULL, None, None, iteration).
merge = _pcm.merge
merge_collective = _pcm.merge_collective
# merge_datacnts(dist, comm) -> (elements, rank) after the pending merge (0, -1: this one leaves).
merge_datacnts = _pcm.merge_datacnts
# reconfig_last() -> (kind, size before, started: seconds since the epoch): PCM_Reconfig_last.
reconfig_last = _pcm.reconfig_last
# reconfig_reason() -> str: who asked for the last reconfiguration and why (PCM_Reconfig_reason).
reconfig_reason = _pcm.reconfig_reason
# reconfig_times() -> (spawn, data, rebuild) seconds of the last split or merge.
reconfig_times = _pcm.reconfig_times


def finalize(comm=None):
    """PCM_Finalize(comm): collective over the PCM world; ends PCM and MPI."""
    _pcm.finalize(comm)


EXIT_STOPPED = 75  # PCM_EXIT_STOPPED


def exit():  # noqa: A001  (PCM_Exit's name)
    """PCM_Exit: a retired process waits until the job finalizes, then MPI is finalized.

    Returns EXIT_STOPPED (75) when a signal or `pcmctl stop` ended the job after its last version
    (docs/user/preemption.md), else None: `sys.exit(pcm.exit())` gives the process that status."""
    return _pcm.exit()


__all__ = [n for n in dir() if not n.startswith("_")]
