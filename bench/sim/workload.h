// workload.h — the simulator's jobs: read from a Standard Workload Format log (the Parallel
// Workloads Archive's .swf, gzipped or not) or from a small CSV, cut to a window, and marked
// malleable (a share of them, chosen by a seeded draw or largest first).
#pragma once

#include <string>
#include <vector>

#include "cluster_sim.h"

namespace pcm::sim {

struct TraceInfo {
  std::size_t lines = 0;    // job lines read
  std::size_t skipped = 0;  // without a run time or a size
  std::size_t clamped = 0;  // wider than the machine: cut to it
};

// SWF: field 1 job, 2 submit, 4 run time, 5 allocated processors (8, requested, if absent).
// Throws std::runtime_error if the file cannot be read.
std::vector<Job> read_swf(const std::string& path, int nodes, TraceInfo* info);

// CSV with a header: id,submit,run,size,malleable,serial (malleable 0/1), e.g. bench_slurm's
// workload (bench/cluster_slurm.py); min and max sizes come from mark()'s rules.
std::vector<Job> read_csv(const std::string& path);

// The jobs submitted in [from_day, from_day + days) days after the first (days <= 0: all),
// submit times shifted so that the first is 0.
std::vector<Job> window(const std::vector<Job>& jobs, double from_day, double days);

struct Marking {
  double share = 0;      // of the jobs, 0..1
  bool largest = false;  // largest node-seconds first, else a seeded draw
  unsigned seed = 1;
  double serial_lo = 0.001;  // Amdahl's serial fraction: log-uniform in [lo, hi] per job
  double serial_hi = 0.1;
  double min_share = 0.5;  // a malleable job runs on ceil(min_share * size) nodes at least
  double max_factor = 4;   // and on max_factor * size at most (within the machine)
};

// Marks jobs malleable (a fresh copy); every job gets its serial fraction, so that the same jobs
// have the same speed-up curve whatever the share.
std::vector<Job> mark(std::vector<Job> jobs, const Marking& m, int nodes);
// The malleable jobs' bounds (min_share, max_factor); a rigid job's are its size.
void bound(std::vector<Job>& jobs, const Marking& m, int nodes);

}  // namespace pcm::sim
