// profiler.cpp — the profile of the application (profiler.h): what the MPI profiling interface's
// wrappers (mpi_wrappers.cpp) count, gathered per interval.
#include "profiler.h"

#include <algorithm>
#include <memory>

#include "error.h"
#include "mpi_util.h"

namespace pcm::lib {

namespace {

// World ranks of a communicator's ranks (of the remote group for an intercommunicator), cached
// on the communicator as an attribute; -1 for a process outside the world.
struct RankTable {
  std::uint64_t generation;
  std::vector<int> world_rank;
};

int delete_table(MPI_Comm, int, void* value, void*) {
  delete static_cast<RankTable*>(value);
  return MPI_SUCCESS;
}

}  // namespace

Profiler& profiler() {
  static Profiler p;
  return p;
}

void Profiler::start(long interval_ms, MPI_Comm world, int rank, int size) {
  interval_ms_ = interval_ms;
  g_profiling = false;
  if (interval_ms <= 0) return;
  world_ = world;
  rank_ = rank;
  size_ = size;
  ++generation_;
  if (world_group_ != MPI_GROUP_NULL) PMPI_Group_free(&world_group_);
  PMPI_Comm_group(world, &world_group_);
  if (keyval_ == MPI_KEYVAL_INVALID)
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_table, &keyval_, nullptr);
  const bool matrix = size <= JobProfile::kMaxMatrixRanks;
  bytes_to_.assign(matrix ? static_cast<std::size_t>(size) : 0, 0);
  messages_to_.assign(bytes_to_.size(), 0);
  mine_ = RankProfile{};
  last_status_ = 0;
  mpi_ticks_ = 0;
  interval_start_ = PMPI_Wtime();
  ticks_start_ = ticks();
  g_profiled_thread = pthread_self();
  g_profiling = true;
}

void Profiler::stop() {
  interval_ms_ = 0;
  g_profiling = false;
  world_ = MPI_COMM_NULL;
  if (world_group_ != MPI_GROUP_NULL && !mpi::finalized()) PMPI_Group_free(&world_group_);
  world_group_ = MPI_GROUP_NULL;
}

int Profiler::world_rank_of(MPI_Comm comm, int rank) {
  if (comm == world_) return rank;
  void* value = nullptr;
  int found = 0;
  if (keyval_ == MPI_KEYVAL_INVALID || PMPI_Comm_get_attr(comm, keyval_, &value, &found) != 0)
    return -1;
  auto* table = static_cast<RankTable*>(value);
  if (!found || table->generation != generation_) {
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    MPI_Group group = MPI_GROUP_NULL;
    if ((inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) != 0)
      return -1;
    int n = 0;
    PMPI_Group_size(group, &n);
    std::vector<int> ranks(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)] = i;
    auto fresh =
        std::make_unique<RankTable>(RankTable{generation_, std::vector<int>(ranks.size())});
    PMPI_Group_translate_ranks(group, n, ranks.data(), world_group_, fresh->world_rank.data());
    PMPI_Group_free(&group);
    for (int& r : fresh->world_rank)
      if (r == MPI_UNDEFINED) r = -1;
    if (found) PMPI_Comm_delete_attr(comm, keyval_);
    table = fresh.get();
    if (PMPI_Comm_set_attr(comm, keyval_, fresh.get()) != 0) return -1;
    fresh.release();
  }
  if (rank < 0 || static_cast<std::size_t>(rank) >= table->world_rank.size()) return -1;
  return table->world_rank[static_cast<std::size_t>(rank)];
}

void Profiler::sent(MPI_Comm comm, int dest, int count, MPI_Datatype type) {
  if (dest == MPI_PROC_NULL || count <= 0) return;
  int type_size = 0;
  PMPI_Type_size(type, &type_size);
  const auto bytes = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(type_size);
  mine_.bytes_out += bytes;
  const int to = world_rank_of(comm, dest);
  if (to >= 0 && static_cast<std::size_t>(to) < bytes_to_.size()) {
    bytes_to_[static_cast<std::size_t>(to)] += bytes;
    ++messages_to_[static_cast<std::size_t>(to)];
  }
}

JobProfile Profiler::gather(std::int64_t iteration) {
  const double now = PMPI_Wtime();
  const std::uint64_t tick_now = ticks();
  if (tick_now > ticks_start_)
    mine_.mpi_s = static_cast<double>(mpi_ticks_) * (now - interval_start_) /
                  static_cast<double>(tick_now - ticks_start_);
  double reals[5] = {mine_.iter_s, mine_.iter_min_s, mine_.iter_max_s, mine_.mpi_s,
                     now - interval_start_};
  std::int64_t counts[3] = {mine_.iterations, mine_.mpi_calls,
                            static_cast<std::int64_t>(mine_.bytes_out)};
  const auto n = static_cast<std::size_t>(size_);
  std::vector<double> all_reals(rank_ == 0 ? 5 * n : 0);
  std::vector<std::int64_t> all_counts(rank_ == 0 ? 3 * n : 0);
  mpi_check(PMPI_Gather(reals, 5, MPI_DOUBLE, all_reals.data(), 5, MPI_DOUBLE, 0, world_),
            "MPI_Gather");
  mpi_check(PMPI_Gather(counts, 3, MPI_INT64_T, all_counts.data(), 3, MPI_INT64_T, 0, world_),
            "MPI_Gather");
  JobProfile p;
  const bool matrix = !bytes_to_.empty();
  if (matrix) {
    std::vector<std::uint64_t> row(bytes_to_);
    row.insert(row.end(), messages_to_.begin(), messages_to_.end());
    std::vector<std::uint64_t> rows(rank_ == 0 ? 2 * n * n : 0);
    mpi_check(PMPI_Gather(row.data(), static_cast<int>(2 * n), MPI_UINT64_T, rows.data(),
                          static_cast<int>(2 * n), MPI_UINT64_T, 0, world_),
              "MPI_Gather");
    if (rank_ == 0) {
      p.bytes.resize(n * n);
      p.messages.resize(n * n);
      for (std::size_t r = 0; r < n; ++r) {
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(2 * n * r), n,
                    p.bytes.begin() + static_cast<std::ptrdiff_t>(n * r));
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(2 * n * r + n), n,
                    p.messages.begin() + static_cast<std::ptrdiff_t>(n * r));
      }
    }
    std::fill(bytes_to_.begin(), bytes_to_.end(), 0);
    std::fill(messages_to_.begin(), messages_to_.end(), 0);
  }
  if (rank_ == 0) {
    p.interval_s = reals[4];
    p.iteration = iteration;
    for (std::size_t r = 0; r < n; ++r) {
      RankProfile rp;
      rp.iter_s = all_reals[5 * r];
      rp.iter_min_s = all_reals[5 * r + 1];
      rp.iter_max_s = all_reals[5 * r + 2];
      rp.mpi_s = all_reals[5 * r + 3];
      rp.iterations = all_counts[3 * r];
      rp.mpi_calls = all_counts[3 * r + 1];
      rp.bytes_out = static_cast<std::uint64_t>(all_counts[3 * r + 2]);
      p.ranks.push_back(rp);
    }
  }
  mine_ = RankProfile{};
  mpi_ticks_ = 0;
  interval_start_ = now;
  ticks_start_ = tick_now;
  return p;
}

}  // namespace pcm::lib
