// adapt.cpp — the register-once layer: PCM_Resume (any origin -> registered state), PCM_Adapt
// (PCM_Status plus whatever is pending, for all registered data) and PCM_Checkpoint.
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "buffer.h"
#include "error.h"
#include "mpi_util.h"
#include "protocol.h"
#include "runtime.h"

namespace pcm::lib {

using proto::json;

// ---- PCM_Resume ----------------------------------------------------------------------------

int Runtime::resume(MPI_Comm* comm) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  if (life_.process_status == PCM_RETIRED) fail(PCM_ERR_STATE, "this process has retired");
  if (life_.phase != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  if (resumed_) fail(PCM_ERR_STATE, "PCM_Resume was already called");
  resumed_ = true;
  switch (life_.process_status) {
    case PCM_MIGRATED:
      registered_.receive_migrated();
      break;
    case PCM_SPLITTED:
      agreed(world_.comm(), [&] {
        json extra;
        reshaper_.receive_split(arrays_of(registry_), &extra);
        const auto& values = extra.at("values").get_binary();
        registry_.unpack(ItemKind::kValue, std::string(values.begin(), values.end()));
        registry_.zero(ItemKind::kLocal);
      });
      registered_.check();
      break;
    case PCM_RESTARTED:
      registered_.check();
      if (!checkpointer_.read_restart()) storage_.read_registered();  // format 1: through pcmd
      break;
    default: {  // started: the application's own data must be there
      registered_.check();
      int code = PCM_SUCCESS;
      std::string msg;
      for (const Item* i : registry_.of(ItemKind::kDist)) {
        if (!*i->dist || (*i->dist)->d.size() != world_.size()) {
          code = PCM_ERR_ARG;
          msg = *i->dist ? fmt::format("'{}': the map describes {} processes, the world has {}",
                                       i->name, (*i->dist)->d.size(), world_.size())
                         : fmt::format("'{}': the map is NULL", i->name);
        } else if (!*i->buf && (*i->dist)->d.local_elements(world_.rank()) > 0) {
          code = PCM_ERR_ARG;
          msg = fmt::format("'{}': the buffer is NULL", i->name);
        }
      }
      agree(world_.comm(), code, msg);
    }
  }
  *comm = world_.comm();
  return PCM_SUCCESS;
}

// ---- PCM_Adapt -----------------------------------------------------------------------------

// What adapt() checks, beyond status() (status_is_local), before returning PCM_NONE from inside
// a window; anything else (a stop, a command, a checkpoint due, a window's end) says no.
bool Runtime::adapt_is_local(MPI_Comm comm) const {
  return resumed_ && status_is_local(comm) && !checkpointer_.due() && !reshaped_by_restart_;
}

int Runtime::adapt(MPI_Comm* comm) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  const int s = status(*comm);
  if (s == PCM_STOP) return stop_job(comm);
  if (s == PCM_NONE) {
    if (checkpointer_.due() && resumed_) checkpointer_.write_due(life_.iteration);
    if (reshaped_by_restart_ && resumed_) {  // every rank has the same environment
      reshaped_by_restart_ = false;
      *comm = world_.comm();
      return PCM_RESHAPED;
    }
    return PCM_NONE;
  }
  if (!resumed_) fail(PCM_ERR_STATE, "call PCM_Resume before PCM_Adapt");
  if (!reconfig_.current) fail(PCM_ERR_INTERNAL, "PCM_Status returned {} with nothing pending", s);
  // A split whose spawn, or a merge whose new buffers, can be made while the loop goes on
  // (overlap.h): that starts now, and the reconfiguration goes on at the agreement after it has
  // finished (PCM_Status switches); meanwhile the application iterates in the old world.
  if ((s == PCM_SPLIT || s == PCM_MERGE) && background_.can_start()) {
    if (s == PCM_SPLIT)
      background_.start_split(*reconfig_.current, life_.iteration);
    else
      background_.start_merge(*reconfig_.current, life_.iteration);
    return PCM_NONE;
  }
  // A version PCM_Checkpoint started while the spawn ran in the background is committed in this
  // world before it changes (every rank of it has one in flight, or none).
  if (background_.switching() && checkpointer_.in_flight())
    checkpointer_.settle_quietly("before the split's switch");
  // The background spawn's bound (set before this scope, so that it is the outer one) ends with
  // the split, whichever way.
  const BackgroundSplit::EndBound end_bound{background_};
  storage_.flush();  // keys PCM_Store kept (PCM_STORE_ASYNC=1), for the processes after this one
  // The calls below bound their parts too; this scope adds the agreement after a migration.
  const Watchdog::Scope guard = bounds_.bounded(*reconfig_.current);
  try {
    switch (s) {
      case PCM_MIGRATE: {
        const int me = world_.rank();
        reshaper_.migrate(nullptr, [this, me](MPI_Comm merged, int child) {
          registered_.send_migrated(merged, child, me);
        });
        break;
      }
      case PCM_RECONFIGURE:
        reshaper_.migrate(nullptr, nullptr);
        // Pairs with the replacement's agreement at the end of its PCM_Resume.
        agree(world_.comm(), PCM_SUCCESS, "");
        break;
      case PCM_SPLIT: {
        const std::string values = registry_.pack(ItemKind::kValue);
        reshaper_.send_split(
            arrays_of(registry_),
            json{{"values", json::binary(std::vector<std::uint8_t>(values.begin(), values.end()))}},
            nullptr);
        break;
      }
      case PCM_MERGE:
        reshaper_.merge_arrays(arrays_of(registry_));
        break;
      default:
        fail(PCM_ERR_INTERNAL, "PCM_Status returned {}", s);
    }
  } catch (const Error& e) {
    if (e.code() != PCM_ERR_SPAWN) throw;
    // Agreed, and nothing changed: the job goes on in the old world.
    if (world_.rank() == 0) plog()->warn("[rank 0] {}; continuing in the old world", e.what());
    return PCM_NONE;
  }
  *comm = world_.comm();
  return life_.process_status == PCM_RETIRED ? PCM_RETIRED : PCM_RESHAPED;
}

// The job is asked to end (a signal any rank received, pcmd's request): the last version of the
// registered data, pcmd told the job stopped (not finished: a restart resumes it), and every
// process of the world out, as a retiree with nothing left to wait for (PCM_Exit returns
// PCM_EXIT_STOPPED).
int Runtime::stop_job(MPI_Comm* comm) {
  if (world_.rank() == 0)
    plog()->warn("[rank 0] job {}: {}: a last version, then the end", life_.job, stop_reason());
  ops::Finished done;
  done.job = life_.job;
  // The iteration the call begins, counted over the job's runs as the last version's label is
  // (Checkpointer::write_final), not over this run's calls.
  done.iteration = std::max<std::int64_t>(restart_.iteration, 0) + life_.iteration;
  done.stopped = stop_reason();
  storage_.flush();
  if (resumed_ && !registry_.empty()) {
    done.stopped_version = checkpointer_.write_final(life_.iteration, stop_reason());
  } else {
    // Nothing registered: the application's own PCM_Checkpoint versions, settled.
    if (checkpointer_.in_flight()) checkpointer_.settle_quietly("at the stop");
    if (world_.rank() == 0)
      plog()->warn("[rank 0] job {}: nothing registered (PCM_Resume not called): no last version",
                   life_.job);
  }
  end_world(done);
  life_.process_status = PCM_RETIRED;
  *comm = MPI_COMM_NULL;
  return PCM_RETIRED;
}

// ---- PCM_Checkpoint ------------------------------------------------------------------------

int Runtime::checkpoint(MPI_Comm comm, int iteration) {
  require_world(comm);
  if (!resumed_) fail(PCM_ERR_STATE, "call PCM_Resume before PCM_Checkpoint");
  checkpointer_.checkpoint(iteration, life_.iteration);
  return PCM_SUCCESS;
}

int Runtime::checkpoint_wait(MPI_Comm comm) {
  require_world(comm);
  checkpointer_.settle();
  return PCM_SUCCESS;
}

}  // namespace pcm::lib
