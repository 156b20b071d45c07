// vecsum.cpp — a malleable non-stencil program written against pcm.hpp: a distributed vector
// updated element by element, a replicated history of its exact sums, checked exactly at the end.
//
// Usage: vecsum N ITERS LAYOUT(block|cyclic) THROTTLE_US CKPT_EVERY
// Every iteration sets v[u] = (3 v[u] + u + it) mod 1000003 for each owned unit u (v[u] starts as
// u mod 1000), so every rank can recompute its own units' final values and the sums alone.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "pcm.hpp"

namespace {

constexpr long long kMod = 1000003;
constexpr int kHistory = 8;

long long initial(long u) { return u % 1000; }
long long step(long long v, long u, int it) { return (v * 3 + u + it) % kMod; }

struct Options {
  long n = 0;
  int iters = 0;
  bool cyclic = false;
  long throttle_us = 0;
  int ckpt_every = 0;
};

// Parses a whole non-negative decimal number; nullopt otherwise.
std::optional<long> number(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0) return std::nullopt;
  return v;
}

std::optional<Options> parse(int argc, char** argv) {
  if (argc != 6) return std::nullopt;
  const auto n = number(argv[1]), iters = number(argv[2]), throttle = number(argv[4]),
             every = number(argv[5]);
  const bool cyclic = std::strcmp(argv[3], "cyclic") == 0;
  if (!n || *n < 1 || !iters || !throttle || !every ||
      (!cyclic && std::strcmp(argv[3], "block") != 0))
    return std::nullopt;
  return Options{*n, static_cast<int>(*iters), cyclic, *throttle, static_cast<int>(*every)};
}

// The units this rank owns, as (global unit, index in the buffer): derived from the map and the
// rank, so rebuilt after every reshape.
std::vector<std::pair<long, long>> owned_units(const pcm::Dist& dist, int rank) {
  std::vector<std::pair<long, long>> owned;
  const pcm::Dist::Local local = dist.local(rank);
  owned.reserve(static_cast<std::size_t>(local.units));
  for (long s = 0; s < local.segments; ++s) {
    const pcm::Dist::Segment seg = dist.segment(rank, s);
    for (long k = 0; k < seg.units; ++k) owned.emplace_back(seg.first + k, seg.offset + k);
  }
  return owned;
}

long long allreduce_sum(long long x, MPI_Comm comm) {
  pcm::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_LONG_LONG, MPI_SUM, comm),
                         "MPI_Allreduce");
  return x;
}

// Runs the job in this process; returns the exit code.
int run(pcm::Session& session, const Options& opt) {
  const int origin = session.origin();
  pcm::Dist dist;
  pcm::Buffer<long long> v;
  // A started or restarted process lays the vector out for this world (a restart then loads the
  // saved state into that map); a spawned one receives map and data in resume().
  if (origin == PCM_STARTED || origin == PCM_RESTARTED) {
    const long n = opt.n;
    dist = opt.cyclic ? pcm::Dist::cyclic(n, 1, 0, session.size())
                      : pcm::Dist::block(n, 1, 0, session.size());
    v = pcm::Buffer<long long>(dist, session.rank());
    for (const auto& [u, i] : owned_units(dist, session.rank())) v[i] = initial(u);
  }
  int it = 0;
  int reconfigs = 0;
  std::vector<long long> history(kHistory, 0);
  long long computed = 0;  // iterations this process (or the one it replaced) computed
  session.register_dist("v", v, dist);
  session.register_value("it", it);
  session.register_value("reconfigs", reconfigs);
  session.register_value("history", history);
  session.register_local("computed", computed);
  session.resume();
  if (origin == PCM_MIGRATED || origin == PCM_SPLITTED) ++reconfigs;
  const int joined = it;
  if (origin == PCM_RESTARTED && session.rank() == 0)
    std::printf("vecsum: restarted from iteration %d on %d processes\n", it, session.size());

  auto owned = owned_units(dist, session.rank());
  for (; it < opt.iters; ++it) {
    const pcm::Adapt a = session.adapt();
    if (a == pcm::Adapt::Retired) {
      std::printf("vecsum: retired\n");
      std::fflush(stdout);
      session.exit_retired();
      return 0;
    }
    if (a == pcm::Adapt::Reshaped) {
      ++reconfigs;
      owned = owned_units(dist, session.rank());
    }
    if (opt.ckpt_every > 0 && it > 0 && it % opt.ckpt_every == 0) session.checkpoint(it);
    long long sum = 0;
    for (const auto& [u, i] : owned) sum += v[i] = step(v[i], u, it);
    history[it % kHistory] = allreduce_sum(sum, session.comm());
    ++computed;
    if (opt.throttle_us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(opt.throttle_us));
  }

  // Each rank recomputes its own units from scratch, and its part of the last sums.
  const int rank = session.rank(), size = session.size();
  long long wrong = 0;
  std::array<long long, kHistory> expected{};
  for (const auto& [u, i] : owned) {
    long long x = initial(u);
    for (int t = 0; t < opt.iters; ++t) {
      x = step(x, u, t);
      if (t >= opt.iters - kHistory) expected[t % kHistory] += x;
    }
    if (v[i] != x) ++wrong;
  }
  pcm::detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, expected.data(), kHistory, MPI_LONG_LONG,
                                       MPI_SUM, session.comm()),
                         "MPI_Allreduce");
  for (int k = 0; k < kHistory; ++k) {
    if (history[k] != expected[k]) {
      std::fprintf(stderr, "vecsum: rank %d: history[%d] is %lld, not %lld\n", rank, k, history[k],
                   expected[k]);
      ++wrong;
    }
  }
  const long long units = allreduce_sum(static_cast<long long>(owned.size()), session.comm());
  if (units != opt.n) {
    if (rank == 0)
      std::fprintf(stderr, "vecsum: the ranks own %lld units, not %ld\n", units, opt.n);
    ++wrong;
  }
  // Register_local: a started process has computed every iteration, one spawned by a split every
  // one since it joined; any other at least those.
  const long long since = opt.iters - joined;
  if ((origin == PCM_STARTED && computed != opt.iters) ||
      (origin == PCM_SPLITTED && computed != since) || computed < since || computed > opt.iters) {
    std::fprintf(stderr, "vecsum: rank %d (origin %d, joined at %d): computed %lld iterations\n",
                 rank, origin, joined, computed);
    ++wrong;
  }
  wrong = allreduce_sum(wrong, session.comm());
  if (rank == 0) {
    // The replicated history, which vecsum.py (the same program in Python) prints alike.
    std::printf("vecsum: history");
    for (int k = 0; k < kHistory; ++k) std::printf(" %lld", history[k]);
    std::printf("\n");
    std::printf("vecsum: %s: %d reconfigurations, %d processes, %lld wrong\n",
                wrong == 0 ? "ok" : "FAIL", reconfigs, size, wrong);
    std::fflush(stdout);
  }
  session.finalize();
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    pcm::Session session(argc, argv);
    const std::optional<Options> opt = parse(argc, argv);
    if (!opt) {
      if (session.rank() == 0)
        std::fprintf(stderr, "usage: vecsum N ITERS LAYOUT(block|cyclic) THROTTLE_US CKPT_EVERY\n");
      return 2;
    }
    return run(session, *opt);
  } catch (const pcm::Error& e) {
    std::fprintf(stderr, "vecsum: FAIL: %s (%s)\n", e.what(), PCM_Error_string(e.code()));
    return 1;
  }
}
