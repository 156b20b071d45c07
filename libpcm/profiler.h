// profiler.h — libpcm's profile of the application (PCM_PROFILE_MS): the MPI calls it makes on
// the thread that called PCM_Init are timed and its sends counted per destination, through the MPI
// profiling interface (mpi_wrappers.cpp defines MPI_Send & co. and calls PMPI_*); PCM_Status marks
// the iterations. libpcm's own MPI calls (agreements, reconfigurations, checkpoints) are not the
// application's and are left out (Quiet). Rank 0 gathers the ranks' figures at an agreement once
// per interval and sends them to pcmd with its next poll.
#pragma once

#include <mpi.h>
#include <pthread.h>
#include <time.h>

#include <cstdint>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "profile.h"

namespace pcm::lib {

// What every wrapper reads first: profiling is on and the PCM world alive (plain globals, set
// by the thread that called PCM_Init; only its calls are counted).
inline bool g_profiling = false;
inline pthread_t g_profiled_thread;
// >0 on a thread inside libpcm's own work. Every entry point counts it up and down (guard()):
// initial-exec, so that this is one load from the thread pointer, not a call to __tls_get_addr.
inline thread_local int t_quiet __attribute__((tls_model("initial-exec"))) = 0;

// Whether the MPI call being made is the application's, to count.
inline bool counted() {
  return g_profiling && pthread_equal(pthread_self(), g_profiled_thread) && t_quiet == 0;
}

// A cheap clock for the wrappers: the time-stamp counter where there is one (converted to seconds
// with the wall clock over each interval), else the monotonic clock in nanoseconds.
inline std::uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
#endif
}

// While one lives, this thread's MPI calls are libpcm's, not the application's.
struct Quiet {
  Quiet() { ++t_quiet; }
  ~Quiet() { --t_quiet; }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;
};

// The application's own MPI calls, inside a libpcm entry point that makes them on its behalf
// (PCM_Halo_*): counted as the application's.
struct Unquiet {
  Unquiet() : saved_(t_quiet) { t_quiet = 0; }
  ~Unquiet() { t_quiet = saved_; }
  Unquiet(const Unquiet&) = delete;
  Unquiet& operator=(const Unquiet&) = delete;

 private:
  int saved_;
};

class Profiler {
 public:
  // interval_ms 0: off. Called on the thread that called PCM_Init, and whenever the world
  // changes (the figures start again: ranks and sizes changed).
  void start(long interval_ms, MPI_Comm world, int rank, int size);
  // This process leaves the world (retired, finalized): nothing is counted any more.
  void stop();
  bool on() const { return interval_ms_ > 0; }

  // PCM_Status, at an agreement (once per window, not at every call: profiling adds nothing to
  // the calls inside a window): the iterations since the last agreement end here. The shortest
  // and longest iteration are those windows' means.
  void agreement(std::int64_t iteration) {
    const double now = PMPI_Wtime();
    const std::int64_t n = iteration - last_iteration_;
    if (last_status_ > 0 && n > 0) {
      const double d = now - last_status_;
      const double mean = d / static_cast<double>(n);
      if (mine_.iterations == 0 || mean < mine_.iter_min_s) mine_.iter_min_s = mean;
      if (mean > mine_.iter_max_s) mine_.iter_max_s = mean;
      mine_.iter_s += d;
      mine_.iterations += n;
    }
    last_status_ = now;
    last_iteration_ = iteration;
  }
  // Rank 0, at an agreement: is a profile due?
  bool due() const { return on() && PMPI_Wtime() - interval_start_ >= interval_ms_ * 1e-3; }
  // Collective over the world: rank 0 gets the profile of the interval that ends now (the other
  // ranks an empty one); every rank starts the next interval.
  JobProfile gather(std::int64_t iteration);

  // The wrappers' side (mpi_wrappers.cpp).
  void mpi_call(std::uint64_t ticks) {
    mpi_ticks_ += ticks;
    ++mine_.mpi_calls;
  }
  void sent(MPI_Comm comm, int dest, int count, MPI_Datatype type);

 private:
  int world_rank_of(MPI_Comm comm, int rank);

  long interval_ms_ = 0;
  MPI_Comm world_ = MPI_COMM_NULL;
  MPI_Group world_group_ = MPI_GROUP_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::uint64_t generation_ = 0;  // of the world: cached rank tables of other worlds are stale
  int keyval_ = MPI_KEYVAL_INVALID;
  double interval_start_ = 0;  // PMPI_Wtime and ticks() when the interval began
  std::uint64_t ticks_start_ = 0;
  std::uint64_t mpi_ticks_ = 0;  // inside the application's MPI calls, this interval
  double last_status_ = 0;       // PMPI_Wtime of the last agreement (0: none in this world)
  std::int64_t last_iteration_ = 0;
  RankProfile mine_;
  std::vector<std::uint64_t> bytes_to_, messages_to_;  // by world rank (empty: not kept)
};

// The process's profiler (the wrappers have no other way to reach it).
Profiler& profiler();

}  // namespace pcm::lib
