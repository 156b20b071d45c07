// sim_main.cpp — pcm_cluster_sim: a workload (an SWF trace or a CSV) replayed on a simulated
// cluster, rigid EASY against shares of malleable jobs under pcmd's policy (cluster_sim.h).
// Prints one markdown table per (choice of jobs, cost factor) with the ratios to rigid EASY;
// --csv appends every run's figures. bench/cluster.sh runs it on the NASA iPSC/860 log.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>

#include "cluster_sim.h"
#include "workload.h"

namespace s = pcm::sim;

namespace {

struct Options {
  std::string trace, workload, csv, jobs_csv, log;
  std::string label = "trace";
  int nodes = 128;
  double from_day = 0, days = 0;
  double arrival_scale = 1;  // submit times divided by this (2: arrivals twice as dense)
  double log_share = 50;     // --log: the runs with this share of malleable jobs
  std::vector<double> shares{0, 20, 50, 100};
  std::vector<std::string> picks{"random"};
  std::vector<double> costs{1, 10};
  std::vector<std::string> slowdown;  // --slowdown n:B:factor
  s::Marking marking;
  s::Config config;
};

struct Figures {
  std::size_t jobs = 0, malleable = 0;
  double turnaround = 0, p95 = 0, wait = 0, makespan = 0, util = 0;
  double reconfigs = 0, reconfig_node_s = 0, held = 0;
  s::Result result;
};

Figures figures(s::Result r) {
  Figures f;
  f.jobs = r.jobs.size();
  std::vector<double> turn;
  for (const s::JobResult& j : r.jobs) {
    turn.push_back(j.end - j.submit);
    f.wait += j.start - j.submit;
    f.malleable += j.malleable;
    f.reconfigs += j.reconfigs;
    f.reconfig_node_s += j.reconfig_node_s;
  }
  if (!turn.empty()) {
    f.turnaround =
        std::accumulate(turn.begin(), turn.end(), 0.0) / static_cast<double>(turn.size());
    f.wait /= static_cast<double>(turn.size());
    std::sort(turn.begin(), turn.end());
    f.p95 = turn[std::min(
        turn.size() - 1,
        static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(turn.size()))) - 1)];
  }
  f.makespan = r.makespan;
  f.util = r.utilisation;
  f.held = r.held_node_s;
  f.result = std::move(r);
  return f;
}

void write_csv_row(const Options& o, const std::string& pick, double cost, double share,
                   const Figures& f) {
  if (o.csv.empty()) return;
  std::ifstream exists(o.csv);
  const bool header = !exists.good() || exists.peek() == std::ifstream::traits_type::eof();
  std::ofstream out(o.csv, std::ios::app);
  if (header)
    out << "workload,pick,cost_factor,share,jobs,malleable,mean_turnaround_s,p95_turnaround_s,"
           "mean_wait_s,makespan_s,utilisation,reconfigs,reconfigs_per_job,reconfig_node_s,"
           "reconfig_node_share,grows,shrinks,undone,kept,refused\n";
  const s::Result& r = f.result;
  out << fmt::format(
      "{},{},{},{},{},{},{:.1f},{:.1f},{:.1f},{:.0f},{:.4f},{:.0f},{:.3f},{:.0f},{:.6f},{},{},{},{}"
      ",{}\n",
      o.label, pick, cost, share, f.jobs, f.malleable, f.turnaround, f.p95, f.wait, f.makespan,
      f.util, f.reconfigs, f.reconfigs / std::max<double>(1, f.jobs), f.reconfig_node_s,
      f.reconfig_node_s / std::max(1.0, f.held), r.grows, r.shrinks, r.undone, r.kept, r.refused);
}

void write_jobs(const std::string& path, const s::Result& r, const std::string& run) {
  std::ifstream exists(path);
  const bool header = !exists.good() || exists.peek() == std::ifstream::traits_type::eof();
  std::ofstream out(path, std::ios::app);
  if (header) out << "run,id,submit,start,end,size,malleable,reconfigs,max_size\n";
  for (const s::JobResult& j : r.jobs)
    out << fmt::format("{},{},{:.3f},{:.3f},{:.3f},{},{},{},{}\n", run, j.id, j.submit, j.start,
                       j.end, j.size, j.malleable ? 1 : 0, j.reconfigs, j.max_size);
}

std::string ratio(double a, double b) { return b > 0 ? fmt::format("{:.2f}", a / b) : "-"; }

void print_row(double share, const Figures& f, const Figures& rigid) {
  const double mall = static_cast<double>(std::max<std::size_t>(1, f.malleable));
  fmt::print(
      "| {:>3.0f} % | {:>7} | {:.0f} ({}) | {:.0f} ({}) | {:.0f} ({}) | {:.0f} ({}) | {:.3f} ({}) "
      "| {:.2f} | {:.1f} | {:.0f} ({:.2f} %) |\n",
      share, f.malleable, f.turnaround, ratio(f.turnaround, rigid.turnaround), f.p95,
      ratio(f.p95, rigid.p95), f.wait, ratio(f.wait, rigid.wait), f.makespan,
      ratio(f.makespan, rigid.makespan), f.util, ratio(f.util, rigid.util),
      f.reconfigs / static_cast<double>(std::max<std::size_t>(1, f.jobs)), f.reconfigs / mall,
      f.reconfig_node_s, 100 * f.reconfig_node_s / std::max(1.0, f.held));
  std::fflush(stdout);
}

s::Result run_one(const Options& o, const std::vector<s::Job>& jobs, double cost,
                  const std::string& name, double share) {
  s::Config c = o.config;
  c.cost.factor = cost;
  c.keep_log = !o.log.empty() && (share == o.log_share || share < 0);
  s::Result r = s::simulate(jobs, c);
  if (!o.jobs_csv.empty()) write_jobs(o.jobs_csv, r, name);
  if (c.keep_log) {
    std::ofstream out(o.log, std::ios::app);
    out << "# " << name << "\n";
    for (const auto& line : r.log) out << line << "\n";
  }
  return r;
}

void add_options(CLI::App& app, Options& o) {
  app.add_option("--trace", o.trace, "an SWF log (.swf or .swf.gz), e.g. the NASA iPSC/860's");
  app.add_option("--workload", o.workload,
                 "a CSV workload: id,submit,run,size,malleable,serial "
                 "(its own malleable jobs; --shares ignored)");
  app.add_option("--label", o.label, "the workload's name in --csv")->capture_default_str();
  app.add_option("--nodes", o.config.nodes, "nodes of the machine")->capture_default_str();
  app.add_option("--from-day", o.from_day, "the window's first day (from the first submission)");
  app.add_option("--days", o.days, "the window's length in days (0: the whole log)");
  app.add_option("--arrival-scale", o.arrival_scale,
                 "submit times divided by this: the offered load times this")
      ->check(CLI::PositiveNumber);
  app.add_option("--shares", o.shares, "percentages of malleable jobs")->delimiter(',');
  app.add_option("--pick", o.picks, "random (a seeded draw) and/or largest (node-seconds first)")
      ->delimiter(',');
  app.add_option("--costs", o.costs, "reconfiguration cost factors")->delimiter(',');
  app.add_option("--seed", o.marking.seed, "the draws' seed")->capture_default_str();
  app.add_option("--serial-lo", o.marking.serial_lo, "Amdahl serial fraction, lowest")
      ->capture_default_str();
  app.add_option("--serial-hi", o.marking.serial_hi, "Amdahl serial fraction, highest")
      ->capture_default_str();
  app.add_option("--min-share", o.marking.min_share, "a malleable job's minimum, share of its size")
      ->capture_default_str();
  app.add_option("--max-factor", o.marking.max_factor, "a malleable job's maximum, times its size")
      ->capture_default_str();
  app.add_option("--gib-per-node", o.config.cost.gib_per_node, "a job's state per node, GiB")
      ->capture_default_str();
  app.add_option("--cost-fixed-s", o.config.cost.fixed_s, "a resize's fixed cost, s")
      ->capture_default_str();
  app.add_option("--cost-grow-s", o.config.cost.grow_s,
                 "a growth's more seconds (the grant of a second allocation)")
      ->capture_default_str();
  app.add_option("--cost-per-gib-s", o.config.cost.per_gib_s,
                 "a resize's cost per GiB per process, s")
      ->capture_default_str();
  auto& p = o.config.policy;
  app.add_option("--policy-idle-s", p.idle_s, "pcmd --policy-idle-s")->capture_default_str();
  app.add_option("--policy-interval-s", p.min_interval_s, "pcmd --policy-interval-s")
      ->capture_default_str();
  app.add_option("--policy-measure-s", p.measure_s, "pcmd --policy-measure-s")
      ->capture_default_str();
  app.add_option("--policy-cap-s", p.cap_s, "pcmd --policy-cap-s")->capture_default_str();
  app.add_option("--policy-min-gain", p.min_gain, "pcmd --policy-min-gain")->capture_default_str();
  app.add_option("--policy-min-efficiency", p.min_efficiency, "pcmd --policy-min-efficiency")
      ->capture_default_str();
  app.add_flag("--policy-shrink-if-enough", p.shrink_if_enough,
               "jobs leave nodes for a waiting job only if all they could give would start it");
  app.add_option("--period-s", o.config.period_s, "the policy's round, s")->capture_default_str();
  app.add_option(
         "--slurm-limit-s", o.config.limit_s,
         "every job's time limit: Slurm's backfill by limits, on named nodes (0: exact ends)")
      ->capture_default_str();
  app.add_option("--backfill-interval-s", o.config.backfill_interval_s,
                 "with --slurm-limit-s: backfill only every this many seconds (0: at once)")
      ->capture_default_str();
  app.add_option("--backfill-phase-s", o.config.backfill_phase_s,
                 "the backfill cycles' time after the first submission")
      ->capture_default_str();
  app.add_option("--slurm-latency-s", o.config.sched_latency_s,
                 "a job starts this long after it could (slurmctld's scheduler)")
      ->capture_default_str();
  app.add_option("--queue-read-s", o.config.queue_read_s,
                 "the policy sees the queue and idle nodes as read this often (0: live)")
      ->capture_default_str();
  app.add_option("--slowdown", o.slowdown,
                 "n:B:factor, ...: a job on n nodes while jobs compute on B nodes in all runs "
                 "factor times slower than alone (a machine whose nodes share cores)")
      ->delimiter(',');
  app.add_option("--attach-s", o.config.attach_s,
                 "a malleable job is the policy's this long after its start")
      ->capture_default_str();
  app.add_flag("--pcmd-per-job", o.config.pcmd_per_job,
               "every malleable job has a pcmd of its own, on its own clock (rounds every "
               "--period-s and readings every --queue-read-s from the job's start; a reading is "
               "seen from the next round)");
  app.add_flag("--check", o.config.check, "verify the node book at every step");
  app.add_flag("--moldable", o.config.moldable,
               "malleable jobs start on fewer nodes than asked (at least their minimum) if that "
               "is what is free, as Slurm's -N min-max");
  app.add_option("--csv", o.csv, "append every run's figures to this CSV");
  app.add_option("--jobs-csv", o.jobs_csv, "append every job of every run to this CSV");
  app.add_option("--log", o.log, "append every decision, with its reason, to this file");
  app.add_option("--log-share", o.log_share, "--log: only the runs with this share")
      ->capture_default_str();
}

std::vector<s::Job> load(const Options& o) {
  if (!o.workload.empty()) {
    auto jobs = s::read_csv(o.workload);
    s::bound(jobs, o.marking, o.config.nodes);
    return jobs;
  }
  s::TraceInfo info;
  auto all = s::read_swf(o.trace, o.config.nodes, &info);
  auto jobs = s::window(all, o.from_day, o.days);
  for (s::Job& j : jobs) j.submit /= o.arrival_scale;
  fmt::print(
      "trace: {} job lines, {} without run time or size skipped, {} cut to {} nodes; "
      "window: days {}..{}: {} jobs\n",
      info.lines, info.skipped, info.clamped, o.config.nodes, o.from_day,
      o.days > 0 ? fmt::format("{}", o.from_day + o.days) : std::string("end"), jobs.size());
  return jobs;
}

void table_head(const std::string& title) {
  fmt::print("\n{}\n\n", title);
  fmt::print(
      "| malleable | jobs | mean turnaround s (x rigid) | p95 turnaround s | mean wait s | "
      "makespan s | utilisation | reconfigurations / job | / malleable job | "
      "node-s they cost (of held) |\n");
  fmt::print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pcm_cluster_sim: a workload on a simulated cluster under pcmd's policy"};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);
  if (o.trace.empty() == o.workload.empty()) {
    std::cerr << "pcm_cluster_sim: give --trace FILE or --workload FILE\n";
    return 2;
  }
  for (const std::string& e : o.slowdown) {
    int n = 0, b = 0;
    double f = 0;
    if (std::sscanf(e.c_str(), "%d:%d:%lf", &n, &b, &f) != 3 || n < 1 || b < n || !(f > 0)) {
      std::cerr << "pcm_cluster_sim: --slowdown " << e << ": n:B:factor with 1 <= n <= B wanted\n";
      return 2;
    }
    o.config.slowdown[{n, b}] = f;
  }
  try {
    const std::vector<s::Job> base = load(o);
    s::Marking rigid_m = o.marking;
    rigid_m.share = 0;
    const auto rigid_jobs = o.workload.empty() ? s::mark(base, rigid_m, o.config.nodes) : [&] {
      auto j = base;
      for (auto& x : j) x.malleable = false;
      return j;
    }();
    const Figures rigid = figures(run_one(o, rigid_jobs, 1, "rigid", 0));
    write_csv_row(o, "none", 1, 0, rigid);
    fmt::print(
        "rigid EASY ({}): {} jobs, mean turnaround {:.0f} s, p95 {:.0f} s, mean wait {:.0f} s, "
        "makespan {:.0f} s, utilisation {:.3f}\n",
        o.label, rigid.jobs, rigid.turnaround, rigid.p95, rigid.wait, rigid.makespan, rigid.util);
    for (const std::string& pick : o.workload.empty() ? o.picks : std::vector<std::string>{"csv"})
      for (double cost : o.costs) {
        table_head(fmt::format("{}: malleable jobs chosen {}, reconfiguration cost x{}", o.label,
                               pick == "largest" ? "largest first"
                               : pick == "csv"   ? "by the workload"
                                                 : "at random",
                               cost));
        for (double share : o.workload.empty() ? o.shares : std::vector<double>{-1}) {
          s::Marking m = o.marking;
          m.share = share / 100;
          m.largest = pick == "largest";
          const auto jobs = o.workload.empty() ? s::mark(base, m, o.config.nodes) : base;
          const std::string name = fmt::format("{}-{}-x{}", pick, share, cost);
          const Figures f = figures(run_one(o, jobs, cost, name, share));
          write_csv_row(o, pick, cost, share, f);
          print_row(share < 0 ? 100.0 * f.malleable / std::max<std::size_t>(1, f.jobs) : share, f,
                    rigid);
        }
      }
  } catch (const std::exception& e) {
    std::cerr << "pcm_cluster_sim: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
