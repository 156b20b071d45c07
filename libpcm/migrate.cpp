// migrate.cpp — migration (PCM_Reconfigure, and PCM_Adapt's migrations): one process is replaced
// by a new one spawned on the target host, which takes its rank.
#include "error.h"
#include "runtime.h"
#include "world.h"

namespace pcm::detail {

using proto::json;

int Runtime::reconfigure(MPI_Comm* comm, const char* command) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  require_world(*comm);
  migrate(command, nullptr);
  *comm = world_.comm();
  return PCM_SUCCESS;
}

void Runtime::migrate(const char* command, const MigrationSender& send) {
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
  const int child = world_.size();
  const int waker = cmd.rank == 0 ? child : 0;
  json ctx = spawn_context("migrate", cmd);
  ctx["waker"] = waker;
  ctx["parked"] = world_.parking.parked + 1;  // the mover
  // A spawned process receives this with nonblocking broadcasts where a split can go back (it
  // does not know yet whether it joins a split or a migration): the same kind here.
  bcast_inter(ctx, true, world_.rank(), inter.get(),
              split_can_go_back() ? &plain_waiter() : nullptr);
  mpi::Comm merged;
  mpi_check(MPI_Intercomm_merge(inter.get(), 0, merged.out()), "MPI_Intercomm_merge");
  inter.reset();
  const bool mover = world_.rank() == cmd.rank;
  // The mover keeps merged (its waker's communicator, owned by retirement_) until it is woken.
  const MPI_Comm merged_handle = merged.get();
  ++world_.parking.parked;
  finish_reconfigure(std::move(merged), waker, cmd.rank, mover, world_.rank(), cmd);
  if (mover && send) send(merged_handle, child);
}

}  // namespace pcm::detail
