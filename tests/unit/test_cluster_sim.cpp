// test_cluster_sim.cpp — the cluster simulator's invariants (bench/sim/cluster_sim.h): rigid EASY
// reproduces a schedule checked by hand, malleable jobs grow onto idle nodes and give them back
// for a waiting job through pcmd's policy, and no node is ever held twice (the node book is
// verified at every step: simulate() throws otherwise); Slurm's backfill by limits on named nodes,
// its cycles and latency, and jobs sharing the machine's cores (the check against the real Slurm
// runs, bench/cluster_slurm.py) and a pcmd per job on its own clock, on schedules checked by hand.
#include <gtest/gtest.h>

#include <random>

#include "cluster_sim.h"

namespace s = pcm::sim;

namespace {

s::Job job(long id, double submit, double run, int size) {
  s::Job j;
  j.id = id;
  j.submit = submit;
  j.run = run;
  j.size = j.min_size = j.max_size = size;
  return j;
}

s::Config config(int nodes) {
  s::Config c;
  c.nodes = nodes;
  c.check = true;
  c.keep_log = true;
  return c;
}

}  // namespace

TEST(Sim, RigidEasyReproducesAScheduleCheckedByHand) {
  // 4 nodes. A (2 nodes, 0-10); B (4 nodes) waits for A: reserved at 10, runs 10-15. C (2 nodes,
  // 5 s) fits at 2 and ends by 10: backfilled, 2-7. D (1 node, 20 s) would end after 10 and the
  // reservation leaves no node spare: not backfilled, runs after B, 15-35. E (2 nodes, 3 s) fits
  // when C ends (7) and ends by 10: backfilled, 7-10. FCFS alone would give C 15-20.
  const std::vector<s::Job> jobs{job(1, 0, 10, 2), job(2, 1, 5, 4), job(3, 2, 5, 2),
                                 job(4, 3, 20, 1), job(5, 4, 3, 2)};
  const s::Result r = s::simulate(jobs, config(4));
  const double want[][2] = {{0, 10}, {10, 15}, {2, 7}, {15, 35}, {7, 10}};
  ASSERT_EQ(r.jobs.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(r.jobs[i].start, want[i][0], 1e-6) << "job " << r.jobs[i].id;
    EXPECT_NEAR(r.jobs[i].end, want[i][1], 1e-6) << "job " << r.jobs[i].id;
  }
  EXPECT_NEAR(r.makespan, 35, 1e-6);
  EXPECT_NEAR(r.held_node_s, 2 * 10 + 4 * 5 + 2 * 5 + 1 * 20 + 2 * 3, 1e-6);
  EXPECT_GT(r.checks, 0);
  EXPECT_EQ(r.decisions, 0);
}

TEST(Sim, AMalleableJobGrowsOntoIdleNodesAndGivesThemBackForAWaitingJob) {
  // 4 nodes; M (malleable, perfectly parallel) asks for 2 for 2000 s and may run on 1-4: it
  // doubles onto the 2 idle nodes; R (rigid, 2 nodes) arrives at 500, when M holds all 4: M
  // leaves a node, and another after the policy's interval, and R starts.
  s::Job m = job(1, 0, 2000, 2);
  m.malleable = true;
  m.min_size = 1;
  m.max_size = 4;
  const std::vector<s::Job> jobs{m, job(2, 500, 100, 2)};
  const s::Result r = s::simulate(jobs, config(4));
  EXPECT_EQ(r.jobs[0].max_size, 4);
  EXPECT_LT(r.jobs[0].end, 1700);  // 4000 node-seconds of work, on 4 nodes half the time
  EXPECT_GT(r.jobs[1].start, 500);
  EXPECT_LT(r.jobs[1].start, 530);  // two shrinks, each after the policy's interval
  EXPECT_GE(r.grows, 1);
  EXPECT_GE(r.shrinks, 2);
  // Every decision carries the policy's reason, every growth kept its figures.
  bool shrink = false, grow = false;
  for (const std::string& line : r.log) {
    EXPECT_TRUE(line.find("because") != std::string::npos ||
                line.find("kept: ") != std::string::npos)
        << line;
    shrink = shrink || line.find("Slurm job 2 waits for 2 node(s)") != std::string::npos;
    grow = grow || line.find("been idle for 10 s and no job waits") != std::string::npos;
  }
  EXPECT_TRUE(shrink && grow);
}

TEST(Sim, NoNodeIsDoubleBookedAndEveryJobEndsOnARandomMalleableWorkload) {
  std::mt19937 rng(40);
  std::vector<s::Job> jobs;
  for (long i = 0; i < 300; ++i) {
    s::Job j = job(i, static_cast<double>(rng() % 20000), 1 + rng() % 3000, 1 << (rng() % 6));
    j.malleable = i % 2 == 0;
    j.serial = 0.001 * static_cast<double>(rng() % 100);
    if (j.malleable) {
      j.min_size = std::max(1, j.size / 2);
      j.max_size = std::min(32, 4 * j.size);
    }
    jobs.push_back(j);
  }
  for (double factor : {1.0, 10.0}) {
    s::Config c = config(32);
    c.cost.factor = factor;
    const s::Result r = s::simulate(jobs, c);  // throws on a double booking or a job never ending
    EXPECT_GT(r.decisions, 0);
    EXPECT_LE(r.utilisation, 1.0);
    for (const s::JobResult& j : r.jobs) {
      EXPECT_GE(j.start, j.submit);
      EXPECT_GT(j.end, j.start - 1e-9);
    }
  }
}

TEST(Sim, SlurmBackfillByLimitsOnNamedNodesAndItsLatency) {
  // bench/slurm.py's quick workload in miniature, 3 nodes, every limit 600 s. A (1 node, 0-20)
  // on n0; B (2 nodes, 0-60) on n1-n2; C (2 nodes) queued at 1: reserved at B's limit (600) on
  // n0-n1, the lowest nodes free then; D (1 node, 30 s) queued at 5 fits on n0 when A ends, and
  // EASY by exact ends backfills it (20-50), but by limits n0 is C's: D waits for B, as Slurm
  // did. With a 0.5-s latency every start comes 0.5 s after what allowed it.
  const std::vector<s::Job> jobs{job(1, 0, 20, 1), job(2, 0, 60, 2), job(3, 1, 10, 2),
                                 job(4, 5, 30, 1)};
  const s::Result easy = s::simulate(jobs, config(3));
  EXPECT_NEAR(easy.jobs[3].start, 20, 1e-6);
  s::Config c = config(3);
  c.limit_s = 600;
  const s::Result lim = s::simulate(jobs, c);
  const double want[][2] = {{0, 20}, {0, 60}, {60, 70}, {60, 90}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(lim.jobs[i].start, want[i][0], 1e-6) << "job " << lim.jobs[i].id;
    EXPECT_NEAR(lim.jobs[i].end, want[i][1], 1e-6) << "job " << lim.jobs[i].id;
  }
  c.sched_latency_s = 0.5;
  const s::Result late = s::simulate(jobs, c);
  const double starts[] = {0.5, 0.5, 61, 61};  // B ends at 60.5
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(late.jobs[i].start, starts[i], 1e-6) << "job " << late.jobs[i].id;
}

TEST(Sim, SlurmBackfillStartsOnlyInItsCycles) {
  // A (1 node, 0-10) ends before B (2 nodes, 60 s) arrives at 12: B takes n0-n1; C (2 nodes)
  // queued at 12 is reserved n0-n1 at B's limit, leaving n2 spare, on which D (1 node, queued at
  // 15) is backfilled: at once, or at the next backfill cycle (every 30 s from 0): at 30.
  const std::vector<s::Job> jobs{job(1, 0, 10, 1), job(2, 12, 60, 2), job(3, 12, 10, 2),
                                 job(4, 15, 20, 1)};
  s::Config c = config(3);
  c.limit_s = 600;
  EXPECT_NEAR(s::simulate(jobs, c).jobs[3].start, 15, 1e-6);
  c.backfill_interval_s = 30;
  const s::Result r = s::simulate(jobs, c);
  EXPECT_NEAR(r.jobs[3].start, 30, 1e-6);
  EXPECT_NEAR(r.jobs[2].start, 72, 1e-6);  // C when B ends, by the main scheduler
}

TEST(Sim, JobsSharingTheMachineSlowEachOtherDown) {
  // Two 1-node jobs of 10 s alone; while both compute each is 1.5x slower (Config::slowdown):
  // together from 0, both end at 15.
  const std::vector<s::Job> jobs{job(1, 0, 10, 1), job(2, 0, 10, 1)};
  s::Config c = config(2);
  c.slowdown[{1, 2}] = 1.5;
  const s::Result r = s::simulate(jobs, c);
  EXPECT_NEAR(r.jobs[0].end, 15, 1e-6);
  EXPECT_NEAR(r.jobs[1].end, 15, 1e-6);
}

TEST(Sim, EachJobsPcmdActsOnItsOwnClock) {
  // 2 nodes. M (malleable, 2 nodes, may run on 1) starts at 0.25; R (rigid, 1 node) waits from
  // 0.5. Slurm's queue is read every 3 s. One policy for the machine (the default) reads at 0, 3,
  // ... and sees a reading at once: M's shrink for R is decided at 3. M's own pcmd
  // (pcmd_per_job) ticks every second from M's start and reads at 0.25, 3.25, ..., each reading
  // seen from the round after it: the shrink is decided at 4.25, and R starts 1.25 s later.
  s::Job m = job(1, 0.25, 100, 2);
  m.malleable = true;
  m.min_size = 1;
  const std::vector<s::Job> jobs{m, job(2, 0.5, 10, 1)};
  s::Config c = config(2);
  c.queue_read_s = 3;
  const s::Result machine = s::simulate(jobs, c);
  c.pcmd_per_job = true;
  const s::Result own = s::simulate(jobs, c);
  const double cost = c.cost.seconds(2, 2, 1);
  EXPECT_NEAR(machine.jobs[1].start, 3 + cost, 1e-6);
  EXPECT_NEAR(own.jobs[1].start, 4.25 + cost, 1e-6);
  EXPECT_EQ(own.shrinks, 1);
  ASSERT_FALSE(own.log.empty());
  EXPECT_NE(own.log.front().find("Slurm job 2 waits for 1 node(s)"), std::string::npos)
      << own.log.front();
}
