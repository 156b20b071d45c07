// reshaper.cpp — Reshaper's worlds (reshaper.h): a migration, a spawned process's join, the
// adoption of the world a reconfiguration built, retiring from the old one, and telling pcmd.
// Split and merge: split_merge.cpp.
#include "reshaper.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#include "error.h"
#include "log.h"
#include "ops.h"
#include "profiler.h"
#include "protocol.h"
#include "split_guard.h"
#include "world.h"

namespace pcm::lib {

using proto::Command;
using proto::json;

// ---- building worlds -----------------------------------------------------------------------

void Reshaper::report_reconfigured(const Command& cmd, bool success, const std::string& error,
                                   const json& layout) {
  try {
    ops::Reconfigured req;
    req.job = life_.job;
    req.command = cmd.id;
    req.success = success;
    req.iteration = life_.iteration;
    if (success) {
      req.size = ctx_.world.size();
      req.hosts = gather_hosts(ctx_.world.comm());  // collective: every rank of the new world
      req.pid = static_cast<long>(::getpid());
      if (!layout.is_null()) req.layout = layout;
      req.respawned = cmd.respawn;
      if (ctx_.world.rank() != 0) return;
    } else {
      req.error = proto::clean_text(error, 4000);  // pcmd takes 4096 bytes of UTF-8
    }
    ctx_.link.request(ops::request(req), nullptr, 0, ctx_.settings.connect_timeout_ms);
  } catch (const Error& e) {
    plog()->warn("[rank {}] could not tell pcmd about command {}: {}", ctx_.world.rank(), cmd.id,
                 e.what());
  }
}

// A reconfiguration given up before anything changed: pcmd hears why, and the command is done.
// cmd may be the pending command itself (*reconfig_.current), which done() destroys: a copy is
// reported.
void Reshaper::abandon(const Command& cmd, const std::string& why) {
  const Command given_up = cmd;
  reconfig_.done(given_up.id);
  if (ctx_.world.rank() == 0) report_reconfigured(given_up, false, why);
}

void Reshaper::retire(mpi::Comm waker_comm, int waker_rank, const Command& cmd) {
  profiler().stop();
  const int rank = ctx_.world.rank();
  ctx_.world.leave();  // its communicator goes unless it is waker_comm, taken by the caller
  retirement_.retire_to(std::move(waker_comm), waker_rank);
  life_.phase = Lifecycle::Phase::kRetired;
  life_.process_status = PCM_RETIRED;
  ctx_.link.stop_polling();
  reconfig_.clear();
  reconfig_.last_done = cmd.id;
  plog()->info("[rank {}] retired ({} {})", rank, proto::kind_name(cmd.kind), cmd.id);
  // A retired process that returns from main without PCM_Exit would end without MPI_Finalize,
  // which makes mpiexec tear the whole job down: at exit it parks and finalizes as PCM_Exit does.
  static bool registered = false;
  if (!registered) registered = std::atexit(at_exit_) == 0;
}

void Reshaper::adopt_world(mpi::Comm world) {
  ctx_.world.adopt(std::move(world));
  profiler().start(ctx_.settings.profile_ms, ctx_.world.comm(), ctx_.world.rank(),
                   ctx_.world.size());
  life_.phase = Lifecycle::Phase::kActive;
  reconfig_.clear();
  if (ctx_.world.rank() != 0) ctx_.link.stop_polling();  // only rank 0 polls; it may have moved
}

// Called in the parents (after the spawn) and in the child (after it merged with them): builds
// the new world from merged and records who wakes whom.
void Reshaper::finish_reconfigure(mpi::Comm merged, int waker_in_merged, int mover_in_merged,
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
  ctx_.world.leave();
  adopt_world(std::move(next));
  reconfig_.done(cmd.id);
  if (me_in_merged == waker_in_merged) {
    retirement_.watch(std::move(merged), {mover_in_merged});
  } else if (merged.get() == ctx_.world.migrant.comm) {
    ctx_.world.migrant.owned = std::move(merged);  // a migrated process keeps it for PCM_Resume
  }                                                // else merged goes
  report_reconfigured(cmd, true, "");
}

json Reshaper::spawn_context(const char* kind, const Command& cmd) const {
  return json{{"kind", kind},
              {"job", life_.job},
              {"incarnation", life_.incarnation},
              {"command", cmd.to_json()},
              {"old_size", ctx_.world.size()},
              {"pcm_iteration", life_.iteration},
              {"restart", ctx_.restart.version()},
              {"reconfig", reconfig_.last},
              {"parked", ctx_.world.parking.parked},
              {"largest", ctx_.world.parking.largest},
              {"checkpoints", checkpointer_.schedule()}};
}

void Reshaper::join_as_child(MPI_Comm parent_handle) {
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
    // Given up: it leaves pcmd ("bye": not taken for a lost process) and ends, exit 0; withdrawn:
    // after MPI_Finalize (split_guard.h).
    verdict = std::make_unique<NewSideGuard>(
        parent.get(), [this, me](const std::string& why, bool withdrawn) {
          plog()->warn("[new process {}] the split it was spawned for did not happen ({}); it ends",
                       me, why);
          plog()->flush();
          ctx_.link.close();
          if (withdrawn) end_withdrawn(kWithdrawnFinalizeBound);
          ::_exit(0);
        });
    wait = verdict->waiter();
  }
  json ctx = bcast_inter(json{}, false, me, parent.get(), verdict ? &wait : nullptr);
  if (ctx.contains("prefault")) {  // spawned in the background: the split comes later
    background_.prefault_split(ctx.at("prefault"), me, parent.get(), verdict ? &wait : nullptr);
    ctx = bcast_inter(json{}, false, me, parent.get(), verdict ? &wait : nullptr);
  }
  life_.job = ctx.at("job").get<std::string>();
  life_.incarnation = ctx.at("incarnation").get<std::int64_t>();
  ctx_.link.watch(life_.job, life_.incarnation, processor_name(), ctx_.settings.connect_timeout_ms);
  life_.iteration = ctx.at("pcm_iteration").get<std::int64_t>();
  ctx_.restart.resume_from(ctx.at("restart"));
  reconfig_.last = ctx.at("reconfig");
  ctx_.world.parking.parked = ctx.value("parked", 0);
  ctx_.world.parking.largest = ctx.value("largest", 0);
  checkpointer_.resume_schedule(ctx.value("checkpoints", json()));
  life_.skip_next_status = true;
  if (ctx.at("kind") == "migrate") {
    verdict.reset();
    mpi::Comm merged;
    mpi_check(MPI_Intercomm_merge(parent.get(), 1, merged.out()), "MPI_Intercomm_merge");
    parent.reset();
    Command cmd = Command::from_json(ctx.at("command"), ctx.at("old_size").get<int>());
    life_.process_status = PCM_MIGRATED;
    // PCM_Resume receives the mover's registered state on merged.
    ctx_.world.migrant.comm = merged.get();
    ctx_.world.migrant.src = cmd.rank;
    finish_reconfigure(std::move(merged), ctx.at("waker").get<int>(), cmd.rank, false, cmd.rank,
                       cmd);
    return;
  }
  // A split: this process belongs to a new world spawned as one group. Its data arrives when the
  // application calls PCM_Split (or PCM_Resume).
  life_.process_status = PCM_SPLITTED;
  ctx_.world.joining.inter = std::move(parent);
  ctx_.world.joining.ctx = std::move(ctx);
  ctx_.world.joining.verdict = std::move(verdict);
  mpi::Comm world;
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, world.out()), "MPI_Comm_dup");
  adopt_world(std::move(world));
}

// ---- migration ----------------------------------------------------------------------------

void Reshaper::migrate(const char* command, const MigrationSender& send) {
  if (!reconfig_.current || reconfig_.current->kind != Command::Kind::kMigrate)
    fail(PCM_ERR_STATE,
         "no migration is pending (PCM_Status returned neither PCM_MIGRATE nor "
         "PCM_RECONFIGURE)");
  const Command cmd = *reconfig_.current;
  // Until the new world is built and, in the mover, its state sent (the mover then parks unbound).
  const Watchdog::Scope guard = bounds_.bounded(cmd);
  mpi::Comm inter = spawner_.spawn_for(cmd, command, {cmd.host});
  // In merged the parents keep their ranks and the child is last. The new rank 0 wakes the mover
  // at the end: the child if the mover was rank 0.
  const int child = ctx_.world.size();
  const int waker = cmd.rank == 0 ? child : 0;
  json ctx = spawn_context("migrate", cmd);
  ctx["waker"] = waker;
  ctx["parked"] = ctx_.world.parking.parked + 1;  // the mover
  // A spawned process receives this with nonblocking broadcasts where a split can go back (it
  // does not know yet whether it joins a split or a migration): the same kind here.
  bcast_inter(ctx, true, ctx_.world.rank(), inter.get(),
              split_can_go_back() ? &plain_waiter() : nullptr);
  mpi::Comm merged;
  mpi_check(MPI_Intercomm_merge(inter.get(), 0, merged.out()), "MPI_Intercomm_merge");
  inter.reset();
  const bool mover = ctx_.world.rank() == cmd.rank;
  // The mover keeps merged (its waker's communicator, owned by retirement_) until it is woken.
  const MPI_Comm merged_handle = merged.get();
  ++ctx_.world.parking.parked;
  finish_reconfigure(std::move(merged), waker, cmd.rank, mover, ctx_.world.rank(), cmd);
  if (mover && send) send(merged_handle, child);
}

}  // namespace pcm::lib
