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
  *comm = world_.get();
  return PCM_SUCCESS;
}

void Runtime::migrate(const char* command, const MigrationSender& send) {
  if (!current_ || current_->kind != Command::Kind::kMigrate)
    fail(PCM_ERR_STATE,
         "no migration is pending (PCM_Status returned neither PCM_MIGRATE nor "
         "PCM_RECONFIGURE)");
  const Command cmd = *current_;
  std::string exe = spawn_command(command, self_exe_, cwd_);
  agree_spawnable(exe, cmd);
  mpi::Comm inter;
  try {
    inter = spawn(exe, {cmd.host});
  } catch (const Error& e) {
    abandon(cmd, e.what());
    throw;
  }
  // In merged the parents keep their ranks and the child is last. The new rank 0 wakes the mover
  // at the end: the child if the mover was rank 0.
  const int child = size_;
  const int waker = cmd.rank == 0 ? child : 0;
  json ctx = spawn_context("migrate", cmd);
  ctx["waker"] = waker;
  ctx["parked"] = parked_ + 1;  // the mover
  bcast_inter(ctx, true, rank_, inter.get());
  mpi::Comm merged;
  mpi_check(MPI_Intercomm_merge(inter.get(), 0, merged.out()), "MPI_Intercomm_merge");
  inter.reset();
  const bool mover = rank_ == cmd.rank;
  // The mover keeps merged (its waker's communicator, owned by retirement_) until it is woken.
  const MPI_Comm merged_handle = merged.get();
  ++parked_;
  finish_reconfigure(std::move(merged), waker, cmd.rank, mover, cmd);
  if (mover && send) send(merged_handle, child);
}

}  // namespace pcm::detail
