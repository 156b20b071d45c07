// host_loss.h — a host that stops answering while one of its jobs reconfigures (issue 38 item 1).
// A host that loses power (or its link) closes no connection: its processes' watch connections
// end only by TCP keepalive (about 10 s, watch.cpp), and a new process that had not connected yet
// says nothing at all, so the old world of a split waited for it until the watchdog's deadline
// (PCM_RECONFIG_TIMEOUT_S, 310 s by default). While a job's command is delivered, HostLoss has the
// inventory's prober measure the hosts of its old and new worlds again every second (3 tries of
// 1 s each); a host that answered and then does not is gone:
//   - the job's processes there are lost: the job fails (pcmctl run relaunches it elsewhere);
//   - a new process going there is lost: rank 0's polls say so (JobTable's lost_joining) and the
//     old world gives the command up (libpcm/split_guard.h);
//   - when the command has not ended kStuckAfter later (the old world is inside MPI_Comm_spawn
//     toward the lost host, where nothing reaches it), a job under pcmctl run fails, so that
//     pcmctl run ends the run and relaunches it; another job is told so in its events (its
//     watchdog ends it).
// A host that never answered the probe (a firewall) proves nothing and is not followed; without
// probing (pcmd --probe-port 0) nothing is.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "inventory.h"
#include "jobs.h"

namespace pcm::daemon {

class HostLoss {
 public:
  static constexpr std::chrono::seconds kStuckAfter{5};

  HostLoss(JobTable& jobs, Inventory& inventory) : jobs_(jobs), inventory_(inventory) {}
  // Every second: probes, and what a silent host means; whether a job failed.
  bool check(std::chrono::steady_clock::time_point now);

 private:
  // A job's command whose new process was lost to a silent host: since when.
  struct Lost {
    std::int64_t command = 0;
    std::string host;
    std::chrono::steady_clock::time_point since;
    bool told = false;  // a job not under pcmctl run: its events said so once
  };
  bool host_gone(Job& job, const std::string& host, std::chrono::steady_clock::time_point now);
  bool check_stuck(Job& job, std::chrono::steady_clock::time_point now);

  JobTable& jobs_;
  Inventory& inventory_;
  std::map<std::string, bool> answered_;  // hosts followed: whether each answered once
  std::map<std::string, Lost> lost_;      // by job
};

}  // namespace pcm::daemon
