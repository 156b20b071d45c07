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
#include "registry.h"
#include "reshape.h"
#include "runtime.h"
#include "split_guard.h"
#include "watchdog.h"

namespace pcm::detail {

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

// ---- in the runtime -------------------------------------------------------------------------

namespace {
// The registered arrays' maps and types, in registration order; false if one has no map.
bool registered_maps(const Registry& registry, std::vector<Distribution>* maps,
                     std::vector<int>* types) {
  for (const Item* i : registry.of(ItemKind::kDist)) {
    if (!*i->dist) return false;
    maps->push_back((*i->dist)->d);
    types->push_back(i->type);
  }
  return true;
}
}  // namespace

// From the start of the work in the background to the end of the reconfiguration, as a blocking
// one is bounded (the iterations meanwhile count: they are few, one agreement window after the
// work ends).
void Runtime::bound_background(const Command& cmd) {
  overlap_.bound.emplace(
      watchdog_, Watchdog::Deadline{fmt::format("the {} (command {})", cmd.describe(), cmd.id),
                                    settings_.reconfig_timeout_s,
                                    world_.rank(),
                                    job_,
                                    world_.rank() == 0,
                                    mpi::is_mpich(),
                                    {}});
}

void Runtime::start_background_merge() {
  const double t0 = wtime();
  const Command& cmd = *reconfig_.current;
  bound_background(cmd);
  std::vector<BackgroundPrefault::Want> wants;
  std::vector<Distribution> maps;
  std::vector<int> types;
  if (!registered_maps(registry_, &maps, &types)) maps.clear();  // nothing to make: no maps
  try {
    std::vector<int> new_of;
    const std::vector<Distribution> next = merged_maps(cmd, maps, world_.size(), &new_of);
    const int me = new_of.at(static_cast<std::size_t>(world_.rank()));
    for (std::size_t i = 0; me >= 0 && i < next.size(); ++i) {
      // Only a survivor that receives others' units needs a new buffer (one the merge leaves
      // alone keeps its own).
      const std::vector<Transfer> moves = plan(maps[i], next[i]);
      const bool receives = std::any_of(moves.begin(), moves.end(), [&](const Transfer& t) {
        return t.to == me && t.from != world_.rank();
      });
      wants.push_back({next[i],
                       me,
                       proto::type_size(types[i]),
                       {{"to", next[i].to_json()}, {"type", types[i]}},
                       receives});
    }
  } catch (const Error&) {
    wants.clear();  // the merge itself reports what is wrong with the maps
  }
  overlap_.prefault.start(std::move(wants));
  overlap_.started_at = iteration_;
  overlap_.visible = wtime() - t0;
}

void Runtime::switch_to_merge() {
  const double t0 = wtime();
  overlap_.prefault.finish(&overlap_.merge_buffers);
  overlap_.switching = true;
  overlap_.visible += wtime() - t0;
  if (world_.rank() == 0)
    plog()->info(
        "[rank 0] {} (command {}): its buffers ({} bytes here) faulted in in the background in "
        "{:.3f} s while the application made {} iterations; switching (PCM_Adapt's own time: "
        "{:.4f} s)",
        reconfig_.current->describe(), reconfig_.current->id, overlap_.prefault.bytes(),
        overlap_.prefault.seconds(), iteration_ - overlap_.started_at, overlap_.visible);
}

std::vector<std::vector<int>> Runtime::take_merge_buffers(const std::vector<ArrayRef>& arrays,
                                                          const std::vector<Distribution>& next,
                                                          int me, std::vector<char*>* newbufs) {
  std::vector<std::vector<int>> fresh(arrays.size(),
                                      std::vector<int>(static_cast<std::size_t>(world_.size())));
  if (!std::exchange(overlap_.switching, false)) return fresh;  // everyone's the same
  std::vector<int> mine(arrays.size(), 0);
  for (std::size_t i = 0; me >= 0 && i < arrays.size(); ++i) {
    (*newbufs)[i] =
        overlap_.merge_buffers.take(i, {{"to", next[i].to_json()}, {"type", arrays[i].type}});
    mine[i] = (*newbufs)[i] != nullptr;
  }
  overlap_.merge_buffers.clear();
  // Everyone must know: it changes the moves (drop_in_place).
  std::vector<int> all(arrays.size() * static_cast<std::size_t>(world_.size()));
  mpi_check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT, all.data(),
                          static_cast<int>(mine.size()), MPI_INT, world_.comm()),
            "MPI_Allgather");
  for (std::size_t i = 0; i < arrays.size(); ++i)
    for (int r = 0; r < world_.size(); ++r) fresh[i][r] = all[r * arrays.size() + i];
  return fresh;
}

void Runtime::start_background_split() {
  const double t0 = wtime();
  const Command& cmd = *reconfig_.current;
  bound_background(cmd);
  const std::string exe = program_.spawn_command(nullptr);
  try {
    // The program must exist, or hydra aborts the job (spawn_for).
    agreed(world_.comm(), [&] {
      if (world_.rank() == 0 && exe[0] == '/' && ::access(exe.c_str(), X_OK) != 0)
        fail(PCM_ERR_SPAWN, "program '{}' is not executable: {}", exe, std::strerror(errno));
    });
  } catch (const Error& e) {
    overlap_.bound.reset();
    abandon(cmd, e.what());
    if (e.code() != PCM_ERR_SPAWN) throw;
    if (world_.rank() == 0) plog()->warn("[rank 0] {}; continuing in the old world", e.what());
    return;
  }
  overlap_.spawn.start(world_.comm(), spawn_plan(exe, cmd.hosts), &watchdog_, prefault_plan(cmd),
                       world_.rank(), split_can_go_back());
  overlap_.started_at = iteration_;
  overlap_.visible = wtime() - t0;
}

// The maps and types the split will give the new processes (send_split computes the same from
// the same registered maps), or null when there is nothing to fault in.
nlohmann::json Runtime::prefault_plan(const Command& cmd) const {
  std::vector<Distribution> maps;
  std::vector<int> types;
  if (!registered_maps(registry_, &maps, &types) || maps.empty()) return nullptr;
  try {
    const std::vector<Distribution> next = next_maps(cmd, maps, world_.size());
    nlohmann::json plan = nlohmann::json::array();
    for (std::size_t i = 0; i < next.size(); ++i)
      plan.push_back({{"to", next[i].to_json()}, {"type", types[i]}});
    return plan;
  } catch (const Error&) {
    return nullptr;  // the split itself reports what is wrong with the maps
  }
}

// A new process of a split spawned in the background, before the split's context: its buffers,
// faulted in now (overlap.h); the new rank 0 tells the old one once every new process has them.
void Runtime::prefault_split(const nlohmann::json& plan, int me, MPI_Comm parent,
                             const Waiter* wait) {
  const double t0 = wtime();
  std::uint64_t bytes = 0;
  world_.joining.prefaulted.clear();
  for (const nlohmann::json& a : plan) {
    char* buf = nullptr;
    try {
      const Distribution to = Distribution::from_json(a.at("to"));
      const std::size_t elem = proto::type_size(a.at("type").get<int>());
      buf = prefaulted_buffer(to, me, elem);
      if (buf) bytes += buffer_bytes(to, me, elem);
    } catch (const std::exception&) {
      buf = nullptr;  // the split allocates it then, as without
    }
    world_.joining.prefaulted.add(buf, a);
  }
  MPI_Request req;
  mpi_check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
  wait_for(&req, wait);
  if (me == 0) {
    int word = 1;
    mpi_check(MPI_Isend(&word, 1, MPI_INT, 0, kPrefaultedTag, parent, &req), "MPI_Isend");
    wait_for(&req, wait);
  }
  // The new rank 0 says it (at info: one line per split).
  const auto level = me == 0 ? spdlog::level::info : spdlog::level::debug;
  plog()->log(
      level,
      "[new process {}] its buffers ({} bytes) faulted in while the old world iterated ({:.3f} s)",
      me, bytes, wtime() - t0);
}

void Runtime::switch_to_split() {
  const double t0 = wtime();
  overlap_.result = overlap_.spawn.finish(&overlap_.inter);
  overlap_.switching = true;
  overlap_.visible += wtime() - t0;
  if (world_.rank() == 0)
    plog()->info(
        "[rank 0] {} (command {}): spawned in the background in {:.3f} s while the application "
        "made {} iterations; switching (PCM_Adapt's own time: {:.4f} s)",
        reconfig_.current->describe(), reconfig_.current->id, overlap_.spawn.seconds(),
        iteration_ - overlap_.started_at, overlap_.visible);
}

mpi::Comm Runtime::spawned_for(const Command& cmd, const char* command) {
  if (!overlap_.switching) return spawn_for(cmd, command, cmd.hosts);
  overlap_.switching = false;
  mpi::Comm inter = std::move(overlap_.inter);
  try {
    agree(world_.comm(), overlap_.result,
          fmt::format("MPI_Comm_spawn of {} processes (in the background) failed", cmd.size));
  } catch (const Error& e) {
    abandon(cmd, e.what());
    throw;
  }
  return inter;
}

void Runtime::drop_background_split() {
  if (overlap_.prefault.pending() || !overlap_.merge_buffers.made_for.empty()) {
    overlap_.prefault.finish(&overlap_.merge_buffers);
    overlap_.merge_buffers.clear();
    overlap_.switching = false;
    if (reconfig_.current) abandon(*reconfig_.current, "the job ended before the merge's switch");
    overlap_.bound.reset();
    return;
  }
  if (!overlap_.spawn.pending() && !overlap_.switching) return;
  overlap_.spawn.stop_waiting();
  mpi::Comm inter;
  int result = overlap_.spawn.pending() ? overlap_.spawn.finish(&inter) : overlap_.result;
  overlap_.spawn.cancel_prefaulted();
  if (overlap_.switching) inter = std::move(overlap_.inter);
  overlap_.switching = false;
  // The new processes wait for the old world's context, guarded where the split can go back
  // (split_guard.h): the verdict ends them. Elsewhere they wait until the launcher ends them.
  if (result == PCM_SUCCESS && inter && world_.rank() == 0 && split_can_go_back())
    OldSideGuard::tell_new_world(inter.get(), false);
  if (reconfig_.current) abandon(*reconfig_.current, "the job ended before the split's switch");
  overlap_.bound.reset();
}

}  // namespace pcm::detail
