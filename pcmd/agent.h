// agent.h — a host's agent (`pcmd --agent`): it joins pcmd's inventory when it starts, reports the
// host's cores and how busy they are every period, and when told to stop (SIGTERM, SIGINT) has
// pcmd drain the host, waiting (with a progress line) until the host has left the inventory.
// pcmd marks a host whose agent falls silent for its --agent-timeout-ms as lost (server.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pcm::daemon {

struct AgentOptions {
  std::string config;  // pcmd's configuration file (endpoint, secret)
  std::string host;    // the host's name in the inventory ("": gethostname())
  int slots = 0;       // 0: one per core
  std::string site;    // "": pcmd's default
  int period_ms = 1000;
  int leave_timeout_s = 300;  // how long a leave waits for the drain
  // Count as the host's load only the tasks of this agent's network namespace: for hosts that
  // are network namespaces of one machine (the test clusters, testbed/cluster.py), whose CPUs
  // also run the machine's other work, which is not theirs.
  bool own_namespace = false;
};

// Runs until stop, then leaves. Returns the process's exit code (0: left cleanly).
int run_agent(const AgentOptions& options, const std::atomic<bool>& stop);

// CPU time counters of a set of CPUs, from /proc/stat's text.
struct CpuTimes {
  std::uint64_t busy = 0, total = 0;
};
CpuTimes cpu_times(const std::string& proc_stat, const std::vector<int>& cpus);
// Busy cores between two readings of n CPUs: 0..n.
double busy_cores(const CpuTimes& before, const CpuTimes& after, int n);
// From one task's /proc/PID/task/TID/stat text: whether it is runnable (state R) and the CPU it
// last ran on (-1 if the text does not parse).
bool task_runnable(const std::string& stat, int* cpu);

}  // namespace pcm::daemon
