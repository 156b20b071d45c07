// test_cluster_sim.cpp — the cluster simulator's invariants (bench/sim/cluster_sim.h): rigid EASY
// reproduces a schedule checked by hand, malleable jobs grow onto idle nodes and give them back
// for a waiting job through pcmd's policy, and no node is ever held twice (the node book is
// verified at every step: simulate() throws otherwise).
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
