// slurm_growth.h — pcmd --resources slurm beyond the allocation it runs in. A command whose new
// processes do not fit asks Slurm for a second allocation (`sbatch` of a batch script that
// watches pcmd's own job and ends, so the allocation with it, once that job has: nothing pcmd
// asked for outlives the allocation it runs in, even a pcmd killed with -9), in the background
// (pcmd's loop goes on), waits for it to run in state "allocating" up to a bound, and is then
// carried out on the hosts granted, or refused with the job unchanged and nothing left
// allocated. Nodes a job has left are given back: an extra allocation once no process of any job
// uses it (scancel), a node of pcmd's own allocation once a job ran there and none does any more
// (`scontrol update JobId=J NodeList=<the rest>`; never the batch host nor pcmd's), in both cases
// only when no step of the allocation runs there (retired processes, hydra's proxies). A command
// that leaves such a node is made a respawn, so that nothing of the job stays there. A node Slurm
// takes away while the job runs (drain, fail: slurm_watch.h) is drained the way `pcmctl host
// drain` does it, and then given back; the time limit is followed as an operator moves it.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "drains.h"
#include "durability.h"
#include "inventory.h"
#include "jobs.h"
#include "slurm/slurm_resources.h"
#include "slurm/slurm_watch.h"
#include "slurm/subprocess.h"

namespace pcm::daemon {

class SlurmGrowth : public CommandDesk::Growth {
 public:
  using Clock = std::chrono::steady_clock;

  // parent: the allocation pcmd runs in (whose partition, account, QOS and end a second
  // allocation copies); timeout: how long a command waits for one (--slurm-grow-timeout);
  // my_host: pcmd's host; watch_queue: read Slurm's queue for the policy (every few seconds, in
  // the background). The extra allocations are those the inventory's hosts are tagged with.
  SlurmGrowth(SlurmAllocation parent, std::chrono::seconds timeout, std::string my_host,
              bool watch_queue, JobTable& jobs, Inventory& inventory, CommandDesk& desk,
              Changes& changes, std::shared_ptr<spdlog::logger> log);
  // pcmd stops: the requests still waiting are stopped and what they asked for cancelled, and
  // so is every extra allocation where no process of a running job remains.
  ~SlurmGrowth() override;

  proto::json grow(Job& job, const proto::Command& c, const CommandDesk::Where& where,
                   CommandDesk::From from, int missing) override;
  void before_queue(const Job& job, proto::Command& c) override;
  // A node of an extra allocation, or of pcmd's own but the batch host and pcmd's host.
  bool releasable(const std::string& host) const override;
  std::optional<PolicyQueue> queue() const override;
  // Where the nodes Slurm takes away (drain, fail) are drained (pcmctl host drain's way).
  void set_drains(Drains* drains) { drains_ = drains; }

  // From pcmd's loop: the requests under way (granted, refused, out of time) and, every few
  // seconds, the extra allocations that nothing uses any more.
  void tick();
  // At start: the allocations an earlier pcmd asked for (job name pcm-grow.PARENT) that no host
  // of the inventory holds are cancelled (it ended while the allocation was asked for).
  void sweep();

  // The job name of this pcmd's second allocations.
  std::string grow_name() const { return "pcm-grow." + parent_.job_id; }
  // The sbatch command line for `missing` more slots (for the tests and the events).
  std::vector<std::string> sbatch_argv(int missing) const;
  // The batch script of a second allocation: it waits while Slurm job `parent` has not ended
  // (squeue every few seconds; a controller that does not answer is waited for), then ends.
  static std::string watcher_script(const std::string& parent);

 private:
  struct Request {
    std::string job;
    proto::Command command;  // as asked, not placed
    CommandDesk::Where where;
    CommandDesk::From from;
    std::string text;       // what it waits for, for status and the events
    std::string slurm_job;  // what sbatch submitted, once it says
    Clock::time_point started, deadline;
    Child sbatch;
    Child state;  // squeue of slurm_job's state, every kStatePeriod until it runs
    Clock::time_point next_state{};
    bool running = false;  // the state said RUNNING: `show` reads the allocation
    Child show;            // scontrol show job -o -d slurm_job
  };
  // Where a request stands, from its sbatch and its squeue (read without waiting).
  enum class Stage { kWaiting, kGranted, kRefused };
  Stage look_at(Request& r, std::string* why);

  // Done with r, granted: its hosts join, the command is placed and queued.
  void finish(Request& r);
  void refuse(Request& r, const std::string& why);
  // Notes the releasable hosts where jobs run, or where a command in flight puts them (occupied_).
  void note_occupied();
  // Whether a process of a running job is (or a queued command puts one) on host.
  bool in_use(const std::string& host) const;
  // Slurm's readings (slurm_watch.h), taken as they come: the time limit followed, the nodes
  // Slurm takes away drained (releasable ones; the others said), the queue kept for the policy.
  void look_at_slurm();
  void follow_end_time(std::optional<std::time_t> end);
  // Nodes an operator took out of pcmd's allocation (scontrol update NodeList=) are forgotten.
  void follow_node_list(const SlurmAllocation& own);
  void leave_nodes(const std::map<std::string, std::string>& leaving);
  void give_back_unused();
  // The extra allocations no process uses (or will), and the releasable nodes of pcmd's own.
  std::vector<std::string> free_extras() const;
  std::vector<std::string> free_nodes() const;
  // Hosts that take no new process while they are given back (draining); those it marked.
  std::vector<std::string> take_no_process(const std::vector<std::string>& hosts);
  // scancel of extra allocation id in the background; then its hosts leave the inventory and
  // what happened is told to job `owner` (when not empty) and the log.
  void give_back(const std::string& id, const std::string& owner);
  // Nodes `hosts` of pcmd's own allocation back to Slurm (scontrol update NodeList=the rest), in
  // the background.
  void give_back_nodes(const std::vector<std::string>& hosts);
  // Nodes of pcmd's own allocation gone from it: out of the inventory and of parent_.
  void drop_nodes(const std::vector<std::string>& hosts);
  // The hosts of the inventory gone (they were given back).
  void forget_hosts(const std::vector<std::string>& hosts, const std::string& id);

  SlurmAllocation parent_;  // its hosts: those still held
  std::chrono::seconds timeout_;
  std::string my_host_;
  JobTable& jobs_;
  Inventory& inventory_;
  CommandDesk& desk_;
  Changes& changes_;
  std::shared_ptr<spdlog::logger> log_;
  std::vector<std::unique_ptr<Request>> requests_;
  // The extra allocations: Slurm job -> its hosts; the job each was asked for (when known).
  std::map<std::string, std::vector<std::string>> extras_;
  std::map<std::string, std::string> grown_for_;
  // Hosts of pcmd's own allocation where a job has run (host -> the last such job).
  std::map<std::string, std::string> occupied_;
  std::set<std::string> waiting_logged_;  // what was said to wait for steps (logged once)
  Clock::time_point next_check_{};
  bool watch_queue_ = false;
  // Slurm's commands pcmd runs (scontrol, squeue, scancel) are given this long.
  static constexpr std::chrono::milliseconds kSlurmTimeout{20000};
  SlurmWatch watch_;
  Background background_;  // Slurm's commands whose answers pcmd's loop does not wait for
  int giving_back_ = 0;    // give-backs' squeue, scancel or scontrol running (several: a refusal's)
  std::set<std::string> leaving_;  // nodes Slurm takes away, acted on once each
  Drains* drains_ = nullptr;
  std::optional<PolicyQueue> queue_;
};

}  // namespace pcm::daemon
