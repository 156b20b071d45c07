// cluster_sim.h — a discrete-event simulation of a cluster under Slurm-like scheduling (issue 40):
// N nodes of one CPU each, a FCFS queue with EASY backfilling, rigid jobs that run their traced
// time, and malleable jobs that pcmd's own policy (pcmd/policy.h, the pcm_policy library) grows
// onto idle nodes, shrinks so that a waiting job starts, measures and keeps or undoes. The
// simulator plays Slurm and the jobs: it hands the policy the snapshot pcmd's server would (jobs
// with their rates, the nodes they hold, the queue and the idle nodes) on simulated time, and
// carries out its decisions, each with the policy's reason.
//
// Models (docs/perf/cluster.md says why):
//  - speed-up: Amdahl, S(n) = 1 / (f + (1 - f) / n) with a serial fraction f per job; a job's
//    work is its traced run time at its traced size, run_s * S(size), done at S(n) per second;
//  - reconfiguration: the job stops for fixed_s + per_gib_s * (its state / min(from, to))
//    (the bytes each of the fewer processes sends or receives), holding max(from, to) nodes
//    meanwhile; nodes taken at the decision, given back at the end; times factor;
//  - EASY: the queue's head (a moldable one, Config::moldable: at its min_size) gets a reservation
//  at the earliest time enough nodes are free (from
//    the running jobs' ends, known exactly: the trace has no requested times); a later job starts
//    now if it fits and ends before that time or uses only the nodes the head leaves spare.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "policy.h"

namespace pcm::sim {

struct Job {
  long id = 0;
  double submit = 0;  // s
  double run = 0;     // s, at its traced size
  int size = 1;       // nodes
  bool malleable = false;
  double serial = 0;  // Amdahl's serial fraction
  int min_size = 1;   // malleable: bounds
  int max_size = 1;
};

double speedup(double serial, int n);

struct CostModel {
  double fixed_s = 0.20;    // see docs/perf/cluster.md: a live split's intercept
  double per_gib_s = 1.08;  // and slope, s per GiB through one process
  double gib_per_node = 1;  // a job's state: this much per node of its traced size
  double factor = 1;        // x10: a slow file system, a large job
  double grow_s = 0;        // a growth's more: the grant of Slurm's second allocation
  // Seconds a resize from -> to of a job of traced size `size` stops it.
  double seconds(int size, int from, int to) const;
};

struct Config {
  int nodes = 128;
  CostModel cost;
  daemon::PolicyConfig policy;
  double period_s = 1;  // the policy is asked at most this often (pcmd: every second)
  // Malleable jobs are submitted as Slurm's `-N min-max`: one starts on fewer nodes than it asked
  // (at least its min_size) when that is what is free, rather than waiting.
  bool moldable = false;
  // Slurm as bench/slurm.py's test cluster runs it (0: the idealised scheduler above; see
  // docs/perf/cluster.md, "The simulator against the real Slurm run"):
  //  - limit_s > 0: every job's time limit (sbatch --time); the backfill reservation counts the
  //    running jobs' ends as start + limit_s and names its nodes (the lowest free ones then, as
  //    select/cons_tres picks), and a later job may start only on free nodes outside it, or if
  //    its own limit ends before the reservation;
  //  - sched_latency_s: a job that could start (a submission, an end, nodes given back) starts
  //    this long after, when slurmctld's scheduler runs;
  //  - queue_read_s: pcmd's policy sees Slurm's queue and idle nodes as read this often (pcmd
  //    reads them every 3 s: pcmd/slurm/slurm_growth.cpp), not as they are.
  //  - slowdown: a job computing on n nodes while the machine's running jobs compute on B nodes
  //    in all iterates slowdown[{n, B}] times slower than alone (missing: 1): bench/slurm.py's
  //    "nodes" share 2 cores, measured from heat2d's traces. A job's run is then its time alone.
  //  - backfill_interval_s > 0: a later job starts by backfill only in Slurm's backfill cycles,
  //    at backfill_phase_s + k * backfill_interval_s (slurmctld's start + k * bf_interval, 30 s).
  std::map<std::pair<int, int>, double> slowdown;
  double limit_s = 0;
  double backfill_interval_s = 0;
  double backfill_phase_s = 0;
  double sched_latency_s = 0;
  double queue_read_s = 0;
  // A malleable job is the policy's this long after its start (its pcmd and program starting).
  double attach_s = 0;
  // pcmd_per_job: every malleable job has a pcmd of its own (bench/slurm.py's auto jobs), started
  // with the job: its own Policy, which sees that job only; its rounds every period_s from the
  // job's start, whatever happens in between; its readings of the queue every queue_read_s from
  // the start too, each seen from the round after it (pcmd starts a reading in the loop's pass
  // after the round, and its commands take time: pcmd/server.cpp, slurm/slurm_watch.cpp).
  // Otherwise one policy for the whole machine, asked at events and at most every period_s, its
  // readings every queue_read_s from time 0, seen at once.
  bool pcmd_per_job = false;
  bool check = false;     // verify the node book at every step (the invariants)
  bool keep_log = false;  // keep every decision's line (Result::log)
};

struct JobResult {
  long id = 0;
  double submit = 0, start = -1, end = -1;
  int size = 0;
  bool malleable = false;
  int reconfigs = 0;
  double reconfig_node_s = 0;  // node-seconds its reconfigurations held the nodes, stopped
  int max_size = 0;            // the largest size it ran at
};

struct Result {
  std::vector<JobResult> jobs;
  double makespan = 0;  // first submission to last end
  double held_node_s = 0;
  double utilisation = 0;  // held_node_s / (nodes * makespan)
  int decisions = 0, grows = 0, shrinks = 0, undone = 0, kept = 0, refused = 0;
  std::vector<std::string> log;  // "t job: decision because reason" (Config::keep_log)
  long checks = 0;               // steps whose node book was verified (Config::check)
};

// Runs jobs (any order; submit times from 0) to their ends. Throws std::logic_error if an
// invariant breaks (a node held twice, a job never ending, a book out of balance).
Result simulate(const std::vector<Job>& jobs, const Config& config);

}  // namespace pcm::sim
