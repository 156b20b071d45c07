// overlap.cpp — a split's spawn in a helper thread (overlap.h), and the spawn's arguments.
#include "overlap.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "buffer.h"
#include "error.h"
#include "log.h"
#include "watchdog.h"

namespace pcm::lib {

std::unique_ptr<SpawnPlan> SpawnPlan::make(const std::string& exe,
                                           const std::vector<std::string>& args,
                                           const std::vector<std::string>& hosts,
                                           const std::string& cwd) {
  auto p = std::make_unique<SpawnPlan>();
  p->exe = exe;
  p->args = args;
  for (auto& a : p->args) p->argv.push_back(a.data());
  p->argv.push_back(nullptr);
  p->procs = hosts.size();
  for (std::size_t i = 0; i < hosts.size();) {
    std::size_t run = 1;
    while (i + run < hosts.size() && hosts[i + run] == hosts[i]) ++run;
    mpi::Info info;
    MPI_Info_create(info.out());
    const std::string where = fmt::format("{}:{}", hosts[i], run);
    MPI_Info_set(info.get(), "host", where.c_str());
    if (mpi::is_open_mpi()) MPI_Info_set(info.get(), "add-host", where.c_str());
    if (!cwd.empty()) MPI_Info_set(info.get(), "wdir", cwd.c_str());
    p->cmds.push_back(p->exe.data());
    p->argvs.push_back(p->argv.data());
    p->counts.push_back(static_cast<int>(run));
    p->infos.push_back(info.get());
    p->owned.push_back(std::move(info));
    i += run;
  }
  return p;
}

int SpawnPlan::run(MPI_Comm comm, mpi::Comm* inter) const {
  std::vector<int> errcodes(procs, MPI_SUCCESS);
  // The plan is const but MPI's prototype is not: MPI only reads these arrays.
  auto* self = const_cast<SpawnPlan*>(this);
  const int rc = MPI_Comm_spawn_multiple(
      static_cast<int>(cmds.size()), self->cmds.data(), self->argvs.data(), self->counts.data(),
      self->infos.data(), 0, comm, inter->out(), errcodes.data());
  int local = rc == MPI_SUCCESS ? PCM_SUCCESS : PCM_ERR_SPAWN;
  for (int e : errcodes)
    if (e != MPI_SUCCESS) local = PCM_ERR_SPAWN;
  return local;
}

BackgroundSpawn::~BackgroundSpawn() {
  if (thread_.joinable()) thread_.join();
}

void BackgroundSpawn::start(MPI_Comm world, std::unique_ptr<SpawnPlan> plan, Watchdog* stage,
                            nlohmann::json prefault, int rank, bool guarded) {
  mpi_check(MPI_Comm_dup(world, comm_.out()), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN);
  plan_ = std::move(plan);
  prefault_ = std::move(prefault);
  rank_ = rank;
  guarded_ = guarded;
  done_.store(false, std::memory_order_relaxed);
  stop_.store(false, std::memory_order_relaxed);
  started_ = true;
  thread_ = std::thread([this, stage] {
    const double t0 = MPI_Wtime();
    {
      // The helper's stage, for the line a process stuck in the spawn prints (watchdog.h).
      const Watchdog::Stage named(*stage, "MPI_Comm_spawn (in the background)");
      result_ = plan_->run(comm_.get(), &inter_);
    }
    if (!prefault_.is_null()) {
      const Watchdog::Stage named(*stage, "the new processes' buffers (in the background)");
      announce_prefault();
    }
    seconds_ = MPI_Wtime() - t0;
    done_.store(true, std::memory_order_release);
  });
}

void BackgroundSpawn::announce_prefault() {
  // Every helper sends, or none: the spawn's outcome may differ between ranks.
  int ok = result_ == PCM_SUCCESS && inter_ ? 1 : 0;
  if (MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm_.get()) != MPI_SUCCESS || !ok)
    return;
  MPI_Comm_set_errhandler(inter_.get(), MPI_ERRORS_RETURN);
  try {
    bcast_inter(nlohmann::json{{"prefault", prefault_}}, true, rank_, inter_.get(),
                guarded_ ? &plain_waiter() : nullptr);
    if (rank_ != 0) return;
    mpi_check(
        MPI_Irecv(&prefaulted_word_, 1, MPI_INT, 0, kPrefaultedTag, inter_.get(), &prefaulted_),
        "MPI_Irecv");
    // Polled, not waited: a new process lost meanwhile must not hold the helper; the switch's
    // guard sees such a loss (split_guard.h).
    const double until = MPI_Wtime() + kPrefaultWaitS;
    int flag = 0;
    while (!flag && MPI_Wtime() < until && !stop_.load(std::memory_order_acquire)) {
      mpi_check(MPI_Test(&prefaulted_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
      if (!flag) ::usleep(1000);
    }
  } catch (const Error& e) {
    // The switch goes on as without; its own calls meet whatever went wrong.
    plog()->debug("[rank {}] the new processes' buffers: {}", rank_, e.what());
  }
}

void BackgroundSpawn::await_prefaulted(const Waiter* wait) {
  if (prefaulted_ == MPI_REQUEST_NULL) return;
  wait_for(&prefaulted_, wait);
  prefaulted_ = MPI_REQUEST_NULL;
}

void BackgroundSpawn::cancel_prefaulted() {
  if (prefaulted_ == MPI_REQUEST_NULL) return;
  MPI_Cancel(&prefaulted_);
  MPI_Request_free(&prefaulted_);
  prefaulted_ = MPI_REQUEST_NULL;
}

int BackgroundSpawn::finish(mpi::Comm* inter) {
  if (thread_.joinable()) thread_.join();
  started_ = false;
  plan_.reset();
  prefault_ = nullptr;
  comm_.reset();
  *inter = std::move(inter_);
  return result_;
}

BackgroundPrefault::~BackgroundPrefault() {
  if (thread_.joinable()) thread_.join();
  for (char* b : bufs_) std::free(b);
}

void BackgroundPrefault::start(std::vector<Want> wants) {
  wants_ = std::move(wants);
  bufs_.assign(wants_.size(), nullptr);
  bytes_ = 0;
  done_.store(false, std::memory_order_relaxed);
  started_ = true;
  thread_ = std::thread([this] {
    const double t0 = MPI_Wtime();
    for (std::size_t i = 0; i < wants_.size(); ++i) {
      const Want& w = wants_[i];
      if (!w.needed) continue;
      bufs_[i] = prefaulted_buffer(w.map, w.rank, w.elem);  // NULL: the merge allocates then
      if (bufs_[i]) bytes_ += buffer_bytes(w.map, w.rank, w.elem);
    }
    seconds_ = MPI_Wtime() - t0;
    done_.store(true, std::memory_order_release);
  });
}

void BackgroundPrefault::finish(Prefaulted* out) {
  if (thread_.joinable()) thread_.join();
  started_ = false;
  out->clear();
  for (std::size_t i = 0; i < wants_.size(); ++i)
    out->add(std::exchange(bufs_[i], nullptr), std::move(wants_[i].made_for));
  wants_.clear();
  bufs_.clear();
}

}  // namespace pcm::lib
