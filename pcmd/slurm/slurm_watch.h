// slurm_watch.h — what pcmd --resources slurm reads of Slurm while its jobs run, in the
// background every few seconds (pcmd's loop never waits for it): its own job (EndTime, which an
// operator's `scontrol update TimeLimit=` moves), the nodes Slurm is taking away (drain, fail:
// `scontrol update NodeName=N State=DRAIN`, a `scontrol reboot ASAP`), and, for the policy, the
// queue (jobs waiting for nodes, idle nodes). SlurmGrowth acts on the readings.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy.h"
#include "slurm/slurm_resources.h"
#include "slurm/subprocess.h"

namespace pcm::daemon {

// A command's output as lines, and lines "A|B|C" as cells (at most the first 64 lines; the last
// cell without line ends, cut to 300 characters).
std::vector<std::string> lines_of(const std::string& text);
std::vector<std::vector<std::string>> rows_of(const std::string& text);
// text's first 300 characters on one line, without trailing blanks.
std::string one_line(const std::string& text);

// `sinfo -h -N -t drain,fail -o %N|%T|%E`: node -> "STATE (reason)", each node once (sinfo lists a
// node once per partition).
std::map<std::string, std::string> parse_leaving_nodes(const std::string& sinfo_output);
// `squeue -h -t PD -o %i|%j|%D` (pcmd's own requests, pcm-grow.*, left out) and `sinfo -h -N -t
// idle -o %N|%c` as the policy's view of the queue.
PolicyQueue parse_queue(const std::string& squeue_output, const std::string& sinfo_output);

class SlurmWatch {
 public:
  struct Reading {
    std::optional<SlurmAllocation> own;  // pcmd's job (scontrol show job), when it answered
    // The nodes being taken away (node -> "STATE (reason)"), when sinfo answered.
    std::optional<std::map<std::string, std::string>> leaving;
    std::optional<PolicyQueue> queue;  // with the queue watched, when squeue and sinfo answered
  };

  // job_id: pcmd's own Slurm job; queue: read the queue too (the policy); period: between the
  // starts of two readings.
  SlurmWatch(std::string job_id, bool queue, std::chrono::milliseconds period);

  // Starts a reading when one is due; returns it once all its commands have ended. False in
  // `readable` once Slurm's commands could not be started (then nothing is read any more).
  std::optional<Reading> poll();
  bool readable() const { return readable_; }

 private:
  std::string job_id_;
  bool queue_;
  std::chrono::milliseconds period_;
  Child own_, leaving_, pending_, idle_;
  bool reading_ = false, readable_ = true;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace pcm::daemon
