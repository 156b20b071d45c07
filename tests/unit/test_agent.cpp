// test_agent.cpp — unit tests of the host agent's measurement (agent.h): busy cores from two
// readings of /proc/stat, over the agent's own CPUs only.
#include <gtest/gtest.h>

#include "agent.h"

namespace d = pcm::daemon;

TEST(Agent, BusyCoresCountOnlyTheAgentsCpus) {
  // user nice system idle iowait irq softirq steal
  const std::string t0 =
      "cpu  300 0 100 600 0 0 0 0 0 0\n"
      "cpu0 100 0 0 100 0 0 0 0 0 0\n"
      "cpu1 200 0 100 500 0 0 0 0 0 0\n"
      "intr 12345\n";
  const std::string t1 =
      "cpu  600 0 100 700 0 0 0 0 0 0\n"
      "cpu0 200 0 0 100 0 0 0 0 0 0\n"    // cpu0: 100 busy, 0 idle: fully busy
      "cpu1 400 0 100 600 0 0 0 0 0 0\n"  // cpu1: 200 busy, 100 idle
      "intr 12399\n";
  const auto a0 = d::cpu_times(t0, {0}), a1 = d::cpu_times(t1, {0});
  EXPECT_DOUBLE_EQ(d::busy_cores(a0, a1, 1), 1.0);
  const auto b0 = d::cpu_times(t0, {1}), b1 = d::cpu_times(t1, {1});
  EXPECT_NEAR(d::busy_cores(b0, b1, 1), 2.0 / 3.0, 1e-12);
  const auto c0 = d::cpu_times(t0, {0, 1}), c1 = d::cpu_times(t1, {0, 1});
  EXPECT_NEAR(d::busy_cores(c0, c1, 2), 2 * 300.0 / 400.0, 1e-12);
  // No time passed, or counters that went back (a reading of another machine): nothing busy.
  EXPECT_EQ(d::busy_cores(c1, c1, 2), 0.0);
  EXPECT_EQ(d::busy_cores(c1, c0, 2), 0.0);
  // A CPU the text does not list counts nothing.
  EXPECT_EQ(d::cpu_times(t1, {7}).total, 0u);
}

TEST(Agent, TaskStatesAndCpusParse) {
  int cpu = -2;
  // comm with spaces and a parenthesis; state R; processor (field 39) 1.
  std::string stat = "123 (a (b) c) R 1 123 123 0 -1 4194560";
  for (int f = 10; f <= 38; ++f) stat += f == 39 ? " 1" : " 0";
  stat += " 1 0 0 0 0 0";
  EXPECT_TRUE(d::task_runnable(stat, &cpu));
  EXPECT_EQ(cpu, 1);
  std::string sleeping = stat;
  sleeping[sleeping.rfind(')') + 2] = 'S';
  EXPECT_FALSE(d::task_runnable(sleeping, &cpu));
  EXPECT_FALSE(d::task_runnable("garbage", &cpu));
  EXPECT_EQ(cpu, -1);
  EXPECT_FALSE(d::task_runnable("1 (x) R 2 3", &cpu));  // too short
}
