// slurm_resources.h — pcmd --resources slurm: the inventory is the Slurm allocation pcmd runs in
// (read from `scontrol show job`), each host tagged with the job that holds it; the refusals,
// which say what is missing and how to fix it, when there is no allocation or no Slurm.
#pragma once

#include <chrono>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hosts.h"
#include "slurm/subprocess.h"

namespace pcm::daemon {

// The allocation of one Slurm job.
struct SlurmAllocation {
  std::string job_id;            // "123"
  std::string state;             // JobState=, e.g. RUNNING
  std::vector<HostSlots> hosts;  // NodeList= in order; slots: the CPUs the job holds there
  // What a second allocation copies (empty: not shown, or "(null)").
  std::string partition, account, qos;  // Partition=, Account=, QOS=
  std::optional<std::time_t> end_time;  // EndTime= (local time); none: Unknown or unlimited
  std::string batch_host;               // BatchHost= (where the batch script, and mpiexec, run)
};

// Slurm's time stamp "2026-11-25T21:30:00" (local time); nothing for "Unknown", "None" or
// anything else.
std::optional<std::time_t> parse_slurm_time(std::string_view text);

// The number of CPU ids in a Slurm list such as "0-1,4,6-7" (5); throws pcm::Error(PCM_ERR_ARG)
// on anything else (empty items, reversed ranges, more than kMaxSlots).
int count_cpu_ids(std::string_view ids);

// One record of `scontrol show job -o -d JOB` (space-separated KEY=VALUE words): JobId=,
// JobState=, NodeList= (the whole allocation, expand_slurm_nodelist), and the detail words
// "Nodes=LIST CPU_IDs=IDS" giving each node's CPUs (its slots). A node without a detail word gets
// NumCPUs / NumNodes (at least 1). Partition=, Account=, QOS=, EndTime= and BatchHost= when shown.
// Throws pcm::Error(PCM_ERR_ARG) naming the field that is missing or wrong.
SlurmAllocation parse_scontrol_job(std::string_view record);

using EnvGetter = std::function<const char*(const char*)>;  // as getenv
using CommandRunner = std::function<CommandResult(const std::vector<std::string>& argv)>;

// The allocation pcmd runs in: SLURM_JOB_ID, `scontrol show job -o -d $SLURM_JOB_ID` (which
// must succeed and show the job RUNNING), and `srun --version` (reconfigurations start their
// processes through srun: testbed/launcher_slurm.sh). Throws pcm::Error(PCM_ERR_CONFIG) with a
// message starting "--resources slurm: " that says what is missing and how to fix it. env and
// run are getenv and run_command (with a bound) in pcmd; tests give their own.
SlurmAllocation slurm_allocation(const EnvGetter& env, const CommandRunner& run);

// slurm_allocation with the process's environment and run_command.
SlurmAllocation slurm_allocation();

}  // namespace pcm::daemon
