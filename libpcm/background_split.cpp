// background_split.cpp — BackgroundSplit (background_split.h): a split's spawn or a merge's new
// buffers made in the background, the switch to them, and what the reshape takes from them.
#include "background_split.h"

#include <algorithm>
#include <utility>

#include "error.h"
#include "log.h"
#include "protocol.h"
#include "reshape.h"
#include "split_guard.h"

namespace pcm::lib {

using proto::Command;

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
void BackgroundSplit::bound_background(const Command& cmd) {
  bound_.emplace(watchdog_,
                 Watchdog::Deadline{fmt::format("the {} (command {})", cmd.describe(), cmd.id),
                                    ctx_.settings.reconfig_timeout_s,
                                    ctx_.world.rank(),
                                    ctx_.job,
                                    ctx_.world.rank() == 0,
                                    mpi::is_mpich(),
                                    {},
                                    cmd.id});
}

void BackgroundSplit::start_merge(const Command& cmd, std::int64_t iteration) {
  const double t0 = wtime();
  bound_background(cmd);
  std::vector<BackgroundPrefault::Want> wants;
  std::vector<Distribution> maps;
  std::vector<int> types;
  if (!known_maps(&maps, &types)) maps.clear();  // nothing to make: no maps
  try {
    std::vector<int> new_of;
    const std::vector<Distribution> next = merged_maps(cmd, maps, ctx_.world.size(), &new_of);
    const int me = new_of.at(static_cast<std::size_t>(ctx_.world.rank()));
    for (std::size_t i = 0; me >= 0 && i < next.size(); ++i) {
      // Only a survivor that receives others' units needs a new buffer (one the merge leaves
      // alone keeps its own).
      const std::vector<Transfer> moves = plan(maps[i], next[i]);
      const bool receives = std::any_of(moves.begin(), moves.end(), [&](const Transfer& t) {
        return t.to == me && t.from != ctx_.world.rank();
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
  prefault_.start(std::move(wants));
  started_at_ = iteration;
  visible_ = wtime() - t0;
}

bool BackgroundSplit::start_for_paper_calls(const Command& cmd, int status,
                                            std::int64_t iteration) {
  if (!can_start() || cmd.respawn) return false;
  if (status == PCM_SPLIT)
    start_split(cmd, iteration);
  else if (status == PCM_MERGE)
    start_merge(cmd, iteration);
  else
    return false;
  return true;
}

void BackgroundSplit::keep_spawn_of(const char* command) {
  if (!switching_) return;
  int same = spawner_.program().spawns_itself(command) ? 1 : 0;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, ctx_.world.comm()),
            "MPI_Allreduce");
  if (same) return;
  if (ctx_.world.rank() == 0)
    plog()->info(
        "[rank 0] split: PCM_Split names another program than the one spawned in the "
        "background; spawning it now");
  spawn_.cancel_prefaulted();
  set_aside_spawned_ = result_ == PCM_SUCCESS;
  set_aside_ = std::move(inter_);
  switching_ = false;
}

void BackgroundSplit::give_up_set_aside() {
  withdraw_split(std::move(set_aside_), set_aside_spawned_, ctx_.world.rank());
  set_aside_spawned_ = false;
}

void BackgroundSplit::switch_now(const Command& cmd, std::int64_t iteration) {
  const double t0 = wtime();
  if (spawn_.pending()) {
    result_ = spawn_.finish(&inter_);
    switching_ = true;
    visible_ += wtime() - t0;
    if (ctx_.world.rank() == 0)
      plog()->info(
          "[rank 0] {} (command {}): spawned in the background in {:.3f} s while the application "
          "made {} iterations; switching (PCM_Adapt's own time: {:.4f} s)",
          cmd.describe(), cmd.id, spawn_.seconds(), iteration - started_at_, visible_);
    return;
  }
  prefault_.finish(&merge_buffers_);
  switching_ = true;
  visible_ += wtime() - t0;
  if (ctx_.world.rank() == 0)
    plog()->info(
        "[rank 0] {} (command {}): its buffers ({} bytes here) faulted in in the background in "
        "{:.3f} s while the application made {} iterations; switching (PCM_Adapt's own time: "
        "{:.4f} s)",
        cmd.describe(), cmd.id, prefault_.bytes(), prefault_.seconds(), iteration - started_at_,
        visible_);
}

std::vector<std::vector<int>> BackgroundSplit::take_merge_buffers(
    const std::vector<ArrayRef>& arrays, const std::vector<Distribution>& next, int me,
    std::vector<char*>* newbufs) {
  std::vector<std::vector<int>> fresh(
      arrays.size(), std::vector<int>(static_cast<std::size_t>(ctx_.world.size())));
  if (!std::exchange(switching_, false)) return fresh;  // everyone's the same
  std::vector<int> mine(arrays.size(), 0);
  for (std::size_t i = 0; me >= 0 && i < arrays.size(); ++i) {
    (*newbufs)[i] = merge_buffers_.take(i, {{"to", next[i].to_json()}, {"type", arrays[i].type}});
    mine[i] = (*newbufs)[i] != nullptr;
  }
  merge_buffers_.clear();
  // Everyone must know: it changes the moves (drop_in_place).
  std::vector<int> all(arrays.size() * static_cast<std::size_t>(ctx_.world.size()));
  mpi_check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT, all.data(),
                          static_cast<int>(mine.size()), MPI_INT, ctx_.world.comm()),
            "MPI_Allgather");
  for (std::size_t i = 0; i < arrays.size(); ++i)
    for (int r = 0; r < ctx_.world.size(); ++r) fresh[i][r] = all[r * arrays.size() + i];
  return fresh;
}

void BackgroundSplit::start_split(const Command& cmd, std::int64_t iteration) {
  const double t0 = wtime();
  bound_background(cmd);
  std::string exe;
  try {
    exe = spawner_.executable(nullptr);
  } catch (const Error& e) {
    bound_.reset();
    spawner_.abandon()(cmd, e.what());
    if (e.code() != PCM_ERR_SPAWN) throw;
    if (ctx_.world.rank() == 0) plog()->warn("[rank 0] {}; continuing in the old world", e.what());
    return;
  }
  // Every helper announces the buffers to make, or none (overlap.h); the new processes get rank
  // 0's plan. The paper's calls can leave a rank without one (a migration's replacement remembers
  // no map): rank 0 decides.
  nlohmann::json plan = prefault_plan(cmd);
  int announce = !plan.is_null();
  mpi_check(MPI_Bcast(&announce, 1, MPI_INT, 0, ctx_.world.comm()), "MPI_Bcast");
  if (!announce)
    plan = nullptr;
  else if (plan.is_null())
    plan = nlohmann::json::array();  // not sent: only rank 0's is
  spawn_.start(ctx_.world.comm(), spawner_.plan(exe, cmd.hosts), &watchdog_, std::move(plan),
               ctx_.world.rank(), split_can_go_back());
  started_at_ = iteration;
  visible_ = wtime() - t0;
}

// The maps and types the split will give the new processes (send_split computes the same from
// the same registered maps), or null when there is nothing to fault in.
nlohmann::json BackgroundSplit::prefault_plan(const Command& cmd) const {
  std::vector<Distribution> maps;
  std::vector<int> types;
  if (!known_maps(&maps, &types) || maps.empty()) return nullptr;
  try {
    const std::vector<Distribution> next = next_maps(cmd, maps, ctx_.world.size());
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
void BackgroundSplit::prefault_split(const nlohmann::json& plan, int me, MPI_Comm parent,
                                     const Waiter* wait) {
  const double t0 = wtime();
  std::uint64_t bytes = 0;
  ctx_.world.joining.prefaulted.clear();
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
    ctx_.world.joining.prefaulted.add(buf, a);
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

bool BackgroundSplit::known_maps(std::vector<Distribution>* maps, std::vector<int>* types) const {
  if (!ctx_.registry.of(ItemKind::kDist).empty())
    return registered_maps(ctx_.registry, maps, types);
  *maps = last_maps_;
  *types = last_types_;
  return true;
}

void BackgroundSplit::remember(const std::vector<ArrayRef>& arrays) {
  last_maps_.clear();
  last_types_.clear();
  for (const ArrayRef& a : arrays) {
    if (!*a.dist) continue;
    last_maps_.push_back((*a.dist)->d);
    last_types_.push_back(a.type);
  }
}

mpi::Comm BackgroundSplit::take_spawn(const Command& cmd) {
  switching_ = false;
  mpi::Comm inter = std::move(inter_);
  try {
    agree(ctx_.world.comm(), result_,
          fmt::format("MPI_Comm_spawn of {} processes (in the background) failed", cmd.size));
  } catch (const Error& e) {
    spawner_.abandon()(cmd, e.what());
    throw;
  }
  return inter;
}

void BackgroundSplit::drop(const Command* current) {
  if (prefault_.pending() || !merge_buffers_.made_for.empty()) {
    prefault_.finish(&merge_buffers_);
    merge_buffers_.clear();
    switching_ = false;
    if (current) spawner_.abandon()(*current, "the job ended before the merge's switch");
    bound_.reset();
    return;
  }
  if (!spawn_.pending() && !switching_) return;
  spawn_.stop_waiting();
  mpi::Comm inter;
  int result = spawn_.pending() ? spawn_.finish(&inter) : result_;
  spawn_.cancel_prefaulted();
  if (switching_) inter = std::move(inter_);
  switching_ = false;
  withdraw_split(std::move(inter), result == PCM_SUCCESS, ctx_.world.rank());
  if (current) spawner_.abandon()(*current, "the job ended before the split's switch");
  bound_.reset();
}

}  // namespace pcm::lib
