// paper_calls.cpp — the paper's reconfiguration calls (PCM_Reconfigure, PCM_Split, PCM_Merge,
// PCM_Merge_datacnts): their state checks, and the work made in the background for them as for
// PCM_Adapt (PCM_OVERLAP=1: a split's spawn and a merge's new buffers, started when PCM_Status
// adopts the command; background_split.h). The reconfigurations themselves: reshaper.h.
#include <optional>
#include <vector>

#include "error.h"
#include "log.h"
#include "protocol.h"
#include "reshape.h"
#include "runtime.h"

namespace pcm::lib {

using proto::json;

namespace {
void check_reshape_args(void** buf, PCM_Dist* dist, int* iteration, int* rank, int* size,
                        MPI_Comm* comm, int type) {
  if (!buf || !dist || !iteration || !rank || !size || !comm)
    fail(PCM_ERR_ARG, "buf, dist, iteration, rank, size and comm must not be NULL");
  if (proto::type_size(type) == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
}

// The bound of work started in the background ends with the call that carries the
// reconfiguration out, whichever way it ends.
struct EndBound {
  std::optional<Watchdog::Scope>& bound;
  ~EndBound() { bound.reset(); }
};
}  // namespace

// PCM_Status has just adopted a command (every rank at the same call). In a job of the paper's
// calls (nothing resumed), a split's spawn or a merge's new buffers start in the background where
// they can (PCM_OVERLAP=1), as PCM_Adapt starts them: PCM_Status says PCM_NONE until the window
// after they are ready, then the command, and PCM_Split or PCM_Merge takes what was made. A merge
// always starts (every rank must: the ranks that remember no map make nothing), a split's spawn
// without buffers when no map is remembered. Returns whether the work started.
bool Runtime::start_for_paper_calls() {
  if (resumed_ || !reconfig_.current || reconfig_.current->respawn || !background_.can_start())
    return false;
  const int s = reconfig_.status_of(world_.rank(), world_.size(), false);
  if (s == PCM_SPLIT)
    background_.start_split(*reconfig_.current, life_.iteration);
  else if (s == PCM_MERGE)
    background_.start_merge(*reconfig_.current, life_.iteration);
  else
    return false;
  return true;
}

int Runtime::reconfigure(MPI_Comm* comm, const char* command) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  require_world(*comm);
  reshaper_.migrate(command, nullptr);
  *comm = world_.comm();
  return PCM_SUCCESS;
}

void Runtime::check_pending(MPI_Comm comm, bool want_split) const {
  require_world(comm);
  reconfig_.check_pending(want_split, world_.size(), resumed_);
}

int Runtime::split(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
                   MPI_Comm* comm, const char* command) {
  check_reshape_args(buf, dist, iteration, rank, size, comm, type);
  const std::vector<ArrayRef> arrays{{buf, type, dist}};
  if (world_.joining.inter) {
    json extra;
    reshaper_.receive_split(arrays, &extra);
    *iteration = extra.at("iteration").get<int>();
    background_.remember(arrays);
  } else {
    check_pending(*comm, true);
    const EndBound end_bound{background_.bound()};
    // Spawned in the background, the new processes run this program: a split that names
    // another one (every rank says whether it does) gives them up and spawns that one now.
    if (background_.switching()) {
      int same = program_.spawns_itself(command) ? 1 : 0;
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, world_.comm()),
                "MPI_Allreduce");
      if (!same) {
        if (world_.rank() == 0)
          plog()->info(
              "[rank 0] split: PCM_Split names another program than the one spawned in "
              "the background; spawning it now");
        background_.drop(nullptr);
      }
    }
    reshaper_.send_split(arrays, json{{"iteration", *iteration}}, command);
  }
  *rank = world_.rank();
  *size = world_.size();
  *comm = world_.comm();
  return PCM_SUCCESS;
}

int Runtime::merge_datacnts(const Distribution* dist, long* count, int* merge_rank, MPI_Comm comm) {
  check_pending(comm, false);
  if (!dist || dist->size() != world_.size())
    fail(PCM_ERR_ARG, "dist does not describe this world");
  std::vector<int> new_of;
  Distribution next = merged_distribution(*reconfig_.current, *dist, &new_of);
  // A respawned merge (PCM_Merge) leaves every element to the new world: none stays here.
  int me = reconfig_.current->respawn ? -1 : new_of[world_.rank()];
  if (count) *count = me >= 0 ? static_cast<long>(next.local_elements(me)) : 0;
  if (merge_rank) *merge_rank = me;
  return PCM_SUCCESS;
}

int Runtime::merge(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
                   MPI_Comm* comm) {
  check_reshape_args(buf, dist, iteration, rank, size, comm, type);
  check_pending(*comm, false);
  const EndBound end_bound{background_.bound()};
  if (reconfig_.current->respawn) {
    // pcmd asked for the merge to leave nothing behind (a node that goes back to Slurm): the
    // world that remains is spawned anew, as a split's, and receives the merged data there (its
    // processes start as PCM_SPLITTED and call PCM_Split); every process here retires and the
    // old world leaves the job at once, with whatever was parked (retirement.h, case d).
    reshaper_.send_split({{buf, type, dist}}, json{{"iteration", *iteration}}, nullptr);
  } else {
    // Nothing spawned: every survivor knows the iteration.
    reshaper_.merge_arrays({{buf, type, dist}});
    if (world_.comm() != MPI_COMM_NULL) background_.remember({{buf, type, dist}});
  }
  *rank = world_.rank();
  *size = world_.size();
  *comm = world_.comm();
  return PCM_SUCCESS;
}

}  // namespace pcm::lib
