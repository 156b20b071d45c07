// world.cpp — building new worlds: spawning processes, adopting the world a reconfiguration
// built, joining it as a spawned process, retiring from the old one, and telling pcmd.
#include "world.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "buffer.h"
#include "error.h"
#include "ops.h"
#include "profiler.h"
#include "protocol.h"
#include "runtime.h"

namespace pcm::detail {

using proto::json;

// ---- the world ----------------------------------------------------------------------------

Parking::Decision Parking::bound(const Command& cmd, int size, int max_parked, bool adapts) const {
  if (!split_leaves || cmd.respawn) return {};  // nothing can leave: nothing to bound by
  const int adds = cmd.kind == Command::Kind::kMigrate ? 1 : std::max(0, size - cmd.size);
  const int cap = max_parked > 0 ? max_parked : adapts ? std::max(largest, size) : 0;
  if (adds == 0 || cap == 0 || parked + adds <= cap) return {};
  const bool respawn = adapts && cmd.hosts.size() == static_cast<std::size_t>(cmd.size);
  return {respawn ? Verdict::kRespawn : Verdict::kRefuse, parked + adds, cap};
}

bool Parking::admit(Command& cmd, int size, int max_parked, bool adapts,
                    std::string* refusal) const {
  // pcmd asks for a respawn where the command leaves a host it would give back (Slurm): a
  // PCM_Adapt job whose old world can leave does it, and so does PCM_Merge for a merge or a
  // shrinking resize (the paper's calls hand it the data); elsewhere the leavers park there.
  const bool shrinks =
      cmd.kind == Command::Kind::kMerge || (cmd.kind == Command::Kind::kResize && cmd.size < size);
  if (cmd.respawn && cmd.kind != Command::Kind::kSplit &&
      !((adapts || shrinks) && split_leaves &&
        cmd.hosts.size() == static_cast<std::size_t>(cmd.size))) {
    cmd.respawn = false;
    plog()->info(
        "[rank 0] {}: carried out in place, not by respawning the world as pcmd asked "
        "(only PCM_Adapt, or PCM_Merge, in a job whose old world can leave can respawn it)",
        cmd.describe());
  }
  const Decision d = bound(cmd, size, max_parked, adapts);
  if (d.verdict == Verdict::kKeep) return true;
  if (d.verdict == Verdict::kRespawn) {
    cmd.respawn = true;
    plog()->info(
        "[rank 0] {}: carried out by respawning the whole world, which lets the {} parked "
        "processes leave (it would park {}, over the cap of {})",
        cmd.describe(), parked, d.would_park, d.cap);
    return true;
  }
  *refusal = fmt::format(
      "refused: it would park {} processes, over the cap of {} "
      "(PCM_MAX_PARKED); {}",
      d.would_park, d.cap,
      adapts ? "pcmd sent no host for each new rank, which a respawn needs"
             : "a job that does not use PCM_Adapt cannot be respawned "
               "instead; a split or a growing resize lets every parked "
               "process leave");
  return false;
}

void World::begin(mpi::Comm dup, int rank, int size) {
  comm_ = std::move(dup);
  rank_ = rank;
  size_ = size;
}

void World::adopt(mpi::Comm comm) {
  comm_ = std::move(comm);
  MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_.get(), &rank_);
  MPI_Comm_size(comm_.get(), &size_);
  parking.largest = std::max(parking.largest, size_);
}

void World::leave() {
  comm_.reset();
  rank_ = -1;
  size_ = 0;
}

// ---- building worlds -----------------------------------------------------------------------

void Runtime::report_reconfigured(const Command& cmd, bool success, const std::string& error,
                                  const json& layout) {
  try {
    ops::Reconfigured req;
    req.job = job_;
    req.command = cmd.id;
    req.success = success;
    req.iteration = iteration_;
    if (success) {
      req.size = world_.size();
      req.hosts = gather_hosts(world_.comm());  // collective: every rank of the new world
      req.pid = static_cast<long>(::getpid());
      if (!layout.is_null()) req.layout = layout;
      req.respawned = cmd.respawn;
      if (world_.rank() != 0) return;
    } else {
      req.error = proto::clean_text(error, 4000);  // pcmd takes 4096 bytes of UTF-8
    }
    link_.request(ops::request(req), nullptr, 0, settings_.connect_timeout_ms);
  } catch (const Error& e) {
    plog()->warn("[rank {}] could not tell pcmd about command {}: {}", world_.rank(), cmd.id,
                 e.what());
  }
}

// A reconfiguration given up before anything changed: pcmd hears why, and the command is done.
void Runtime::abandon(const Command& cmd, const std::string& why) {
  reconfig_.done(cmd.id);
  if (world_.rank() == 0) report_reconfigured(cmd, false, why);
}

void Runtime::retire(mpi::Comm waker_comm, int waker_rank, const Command& cmd) {
  profiler().stop();
  const int rank = world_.rank();
  world_.leave();  // its communicator goes unless it is waker_comm, taken by the caller
  retirement_.retire_to(std::move(waker_comm), waker_rank);
  phase_ = Phase::kRetired;
  process_status_ = PCM_RETIRED;
  link_.stop_polling();
  reconfig_.clear();
  reconfig_.last_done = cmd.id;
  plog()->info("[rank {}] retired ({} {})", rank, proto::kind_name(cmd.kind), cmd.id);
  // A retired process that returns from main without PCM_Exit would end without MPI_Finalize,
  // which makes mpiexec tear the whole job down: at exit it parks and finalizes as PCM_Exit does.
  static bool at_exit = false;
  if (!at_exit) at_exit = std::atexit(exit_if_retired) == 0;
}

void Runtime::exit_if_retired() {
  Runtime& rt = instance();
  if (!rt.retired_unfinished()) return;
  plog()->warn(
      "a retired process is ending without PCM_Exit: it waits for the end of the job as "
      "PCM_Exit does (call PCM_Exit, or PCM_Finalize, before returning from main)");
  try {
    rt.exit_retired();
  } catch (const std::exception& e) {
    plog()->error("PCM_Exit at exit failed: {}", e.what());
  }
}

void Runtime::adopt_world(mpi::Comm world) {
  world_.adopt(std::move(world));
  profiler().start(settings_.profile_ms, world_.comm(), world_.rank(), world_.size());
  phase_ = Phase::kActive;
  reconfig_.clear();
  if (world_.rank() != 0) link_.stop_polling();  // only rank 0 polls; it may have moved
}

// Called in the parents (after the spawn) and in the child (after it merged with them): builds
// the new world from merged and records who wakes whom.
void Runtime::finish_reconfigure(mpi::Comm merged, int waker_in_merged, int mover_in_merged,
                                 bool i_am_mover, int key, const Command& cmd) {
  int me_in_merged;
  MPI_Comm_rank(merged.get(), &me_in_merged);
  // The new process takes the mover's rank; everyone else keeps theirs.
  mpi::Comm next;
  mpi_check(MPI_Comm_split(merged.get(), i_am_mover ? MPI_UNDEFINED : 0, key, next.out()),
            "MPI_Comm_split");
  if (i_am_mover) {
    retire(std::move(merged), waker_in_merged, cmd);
    return;
  }
  world_.leave();
  adopt_world(std::move(next));
  reconfig_.done(cmd.id);
  if (me_in_merged == waker_in_merged) {
    retirement_.watch(std::move(merged), {mover_in_merged});
  } else if (merged.get() == world_.migrant.comm) {  // a migrated process keeps it for PCM_Resume
    world_.migrant.owned = std::move(merged);
  }  // else merged goes
  report_reconfigured(cmd, true, "");
}

json Runtime::spawn_context(const char* kind, const Command& cmd) const {
  return json{{"kind", kind},
              {"job", job_},
              {"incarnation", incarnation_},
              {"command", cmd.to_json()},
              {"old_size", world_.size()},
              {"pcm_iteration", iteration_},
              {"restart", restart_.version()},
              {"reconfig", reconfig_.last},
              {"parked", world_.parking.parked},
              {"largest", world_.parking.largest},
              {"checkpoints", checkpointer_.schedule()}};
}

void Runtime::join_as_child(MPI_Comm parent_handle) {
  mpi::Comm parent(parent_handle);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  // The parents, whose rank 0 tells pcmd, are bounded as well.
  const Watchdog::Scope guard =
      bounds_.bounded("joining the world a reconfiguration builds (spawned process)", me, false);
  // A split's old world may give it up from now on (split_guard.h); a migration's never does.
  std::unique_ptr<NewSideGuard> verdict;
  Waiter wait;
  if (split_can_go_back()) {
    // Given up: it leaves pcmd ("bye": not taken for a lost process) and ends, exit 0.
    verdict = std::make_unique<NewSideGuard>(parent.get(), [this, me](const std::string& why) {
      plog()->warn("[new process {}] the split it was spawned for did not happen ({}); it ends", me,
                   why);
      plog()->flush();
      link_.close();
      ::_exit(0);
    });
    wait = verdict->waiter();
  }
  json ctx = bcast_inter(json{}, false, me, parent.get(), verdict ? &wait : nullptr);
  if (ctx.contains("prefault")) {  // spawned in the background: the split comes later
    background_.prefault_split(ctx.at("prefault"), me, parent.get(), verdict ? &wait : nullptr);
    ctx = bcast_inter(json{}, false, me, parent.get(), verdict ? &wait : nullptr);
  }
  job_ = ctx.at("job").get<std::string>();
  incarnation_ = ctx.at("incarnation").get<std::int64_t>();
  link_.watch(job_, incarnation_, processor_name(), settings_.connect_timeout_ms);
  iteration_ = ctx.at("pcm_iteration").get<std::int64_t>();
  restart_.resume_from(ctx.at("restart"));
  reconfig_.last = ctx.at("reconfig");
  world_.parking.parked = ctx.value("parked", 0);
  world_.parking.largest = ctx.value("largest", 0);
  checkpointer_.resume_schedule(ctx.value("checkpoints", json()));
  skip_next_status_ = true;
  if (ctx.at("kind") == "migrate") {
    verdict.reset();
    mpi::Comm merged;
    mpi_check(MPI_Intercomm_merge(parent.get(), 1, merged.out()), "MPI_Intercomm_merge");
    parent.reset();
    Command cmd = Command::from_json(ctx.at("command"), ctx.at("old_size").get<int>());
    process_status_ = PCM_MIGRATED;
    // PCM_Resume receives the mover's registered state on merged.
    world_.migrant.comm = merged.get();
    world_.migrant.src = cmd.rank;
    finish_reconfigure(std::move(merged), ctx.at("waker").get<int>(), cmd.rank, false, cmd.rank,
                       cmd);
    return;
  }
  // A split: this process belongs to a new world spawned as one group. Its data arrives when the
  // application calls PCM_Split (or PCM_Resume).
  process_status_ = PCM_SPLITTED;
  world_.joining.inter = std::move(parent);
  world_.joining.ctx = std::move(ctx);
  world_.joining.verdict = std::move(verdict);
  mpi::Comm world;
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, world.out()), "MPI_Comm_dup");
  adopt_world(std::move(world));
}

}  // namespace pcm::detail
