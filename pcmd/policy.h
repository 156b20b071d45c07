// policy.h — pcmd's autonomous policy (`pcmd --policy auto`): from the jobs' measured iteration
// rates and the hosts' agent reports it decides reconfigurations by itself. A pure component: no
// socket, no clock of its own, no MPI; the server feeds it a snapshot every second and carries
// out what it returns (server.cpp), so that its rules are unit-tested alone (test_policy.cpp).
//
// Rules, per job (one decision at a time, never while a command is in flight):
//  - a host whose competing load (runnable tasks beyond the jobs' own processes there) stays
//    above load_high for load_sustain_s is left: one of the job's ranks there migrates to a host
//    with a free slot and a competing load below load_low, or else merges into a rank elsewhere;
//  - a job grows by one process onto a free slot of a host whose competing load is below
//    load_low (resize, balanced), then measures: after measure_s its iteration rate must have
//    risen by min_gain, or by min_efficiency times the share of processes added if that is less
//    (a 32-process job grown by one can gain 3 % at most, and is kept at 1.6 %), or the growth is
//    undone (resize back) and the job is not grown past that size again for cap_s (the
//    granularity curve is found by measuring, not assumed); never beyond the job's max_size;
//  - hysteresis everywhere: min_interval_s between two decisions for a job (and after an
//    operator's command), a failed decision is not retried for retry_after_s, the load thresholds
//    differ for leaving and for coming.
// With Slurm's queue (pcmd --resources slurm, PolicyQueue):
//  - a job waiting in the queue for more nodes than are idle makes jobs leave nodes that go
//    back to Slurm once left (PolicyHost::releasable): a shrinking resize whose new world avoids
//    that node (the desk respawns it elsewhere), never below the job's minimum (its min_size,
//    else min_procs); one node per job and decision, as many jobs in one snapshot as the waiting
//    job lacks nodes (idle ones and those being given back count); with shrink_if_enough, not
//    at all if all that the jobs could give back would still leave it waiting (by default they
//    do: other jobs' ends, which the policy does not know, may make up the rest);
//  - while nobody waits, a node idle for idle_s is grown onto (a resize by its CPUs, which asks
//    Slurm for it), measured and kept or undone like any growth;
//  - checkpoint_margin_s before the allocation's time limit, every job is asked once for a
//    checkpoint (a decision with `checkpoint` set, besides any command, in flight or not), so that
//    it can restart from there; from then on nothing grows.
// Draining a host that leaves is pcmd's drain (agent_leave), not a decision here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "command.h"

namespace pcm::daemon {

struct PolicyConfig {
  double min_interval_s = 10;
  double measure_s = 8;
  double min_gain = 0.05;
  // A growth from n to m processes is kept if the rate rose by min_gain or, if less, by
  // min_efficiency * (m / n - 1): the added processes deliver that share of their linear speed-up.
  // A negative min_gain keeps a growth unless the rate fell by more than that share (tests on a
  // machine whose other work makes the figure a lottery).
  double min_efficiency = 0.5;
  double load_high = 0.6;
  double load_low = 0.3;
  double load_sustain_s = 3;
  double retry_after_s = 30;
  double cap_s = 300;
  double idle_s = 10;  // with the queue: a node idle this long may be grown onto
  int min_procs = 1;   // with the queue: no job is shrunk below this
  // With the queue: jobs leave nodes for a waiting job only if all that they could give back
  // (above their minimums) would let it start.
  bool shrink_if_enough = false;
  // With the allocation's end known: a job is asked for a checkpoint this long before it. 0
  // (default): measured, kMarginFloorS + kMarginCostFactor times the longest version a running
  // job has written (begun to committed); kUnmeasuredMarginS while none has.
  double checkpoint_margin_s = 0;
  static constexpr double kMarginFloorS = 30;
  static constexpr double kMarginCostFactor = 4;
  static constexpr double kUnmeasuredMarginS = 300;
};

// What Slurm's queue shows beyond the inventory (pcmd --resources slurm).
struct PolicyQueue {
  struct Waiting {
    std::string id;
    int nodes = 1;
  };
  std::vector<Waiting> waiting;  // jobs waiting for nodes, highest priority first
  struct Idle {
    std::string name;
    int cpus = 1;
  };
  std::vector<Idle> idle;    // nodes that no job holds
  double seconds_left = -1;  // until the allocation's time limit (< 0: none known)
};

struct PolicyHost {
  std::string name;
  int slots = 0;
  int used = 0;  // processes of all running jobs
  bool draining = false;
  bool agent = false;  // the figures below come from its agent
  int cores = 0;
  double busy = 0;          // busy cores
  double runnable = 0;      // runnable tasks on its CPUs, the jobs' own included
  bool releasable = false;  // goes back to Slurm once no job uses it
  bool silent = false;      // a process on it was lost, and it has not answered since
};

struct PolicyJob {
  std::string name;
  int size = 0;
  std::vector<std::string> hosts;  // by rank
  double rate = -1;                // iterations per second lately (< 0: not known yet)
  bool pending = false;            // a command is in flight
  double version_s = -1;           // its last version took this long (< 0: none yet)
  int min_size = 0;                // not shrunk below (0: PolicyConfig::min_procs)
  int max_size = 0;                // not grown beyond (0: no bound)
};

struct PolicyDecision {
  std::string job;
  proto::Command::Kind kind = proto::Command::Kind::kMigrate;
  int rank = -1;            // migrate
  std::vector<int> ranks;   // merge
  int size = 0;             // resize
  std::string host;         // migrate: the target; resize up: where the new process goes
  std::string avoid;        // resize down: no process of the new world goes there
  std::string reason;       // with the figures it used
  bool checkpoint = false;  // not a command: the job is asked for a checkpoint (time limit)
};

class Policy {
 public:
  explicit Policy(PolicyConfig config = {}) : config_(config) {}

  // The decisions for this snapshot (at most one per job). now: seconds on any steady clock.
  // queue: Slurm's (null: none, the rules that use it are off).
  std::vector<PolicyDecision> decide(double now, const std::vector<PolicyJob>& jobs,
                                     const std::vector<PolicyHost>& hosts,
                                     const PolicyQueue* queue = nullptr);
  // A decision's command could not be queued, or failed when it ran.
  void failed(const std::string& job, double now);
  // An operator's command for job (it takes precedence: the policy waits min_interval_s after).
  void operator_command(const std::string& job, double now);
  // Lines for the job's events that the last decide() produced besides its decisions (a growth
  // kept), taken once.
  std::vector<std::pair<std::string, std::string>> take_notes();
  // The earliest time after now at which one of the policy's own clocks runs out (an interval,
  // a retry, a trial's measurement, a cap, a node's idle_s, a load's sustain): with the same
  // snapshot, decide() cannot answer differently before then. For a driver on simulated time
  // (bench/sim/), which calls decide() at its events and at this time; +infinity if none.
  double next_wake(double now) const;
  // The rate rise a growth from `from` to `to` processes must show (min_gain, min_efficiency).
  double wanted_gain(int from, int to) const;

  // The competing load on a host: its runnable tasks beyond the jobs' own processes there.
  static double competing(const PolicyHost& h);

 private:
  struct JobState {
    double last = -1e18;    // last decision (or operator command)
    double failed = -1e18;  // last failure
    bool trial = false;     // a growth being measured
    int trial_size = 0;     // the size it grew from
    double trial_rate = 0;  // the rate before
    bool trial_started = false;
    double trial_since = 0;         // when the grown world was running
    int cap = 0;                    // not grown past this size ...
    double cap_until = -1e18;       // ... until then
    bool checkpoint_asked = false;  // before the time limit
    int leaving = 0;                // nodes its shrink for the queue gives back (while pending)
  };

  // One decide() call's hosts, and the free slots its decisions have not taken yet.
  struct Snapshot {
    double now = 0;
    const std::vector<PolicyHost>& hosts;
    std::map<std::string, const PolicyHost*> by_name;
    std::map<std::string, int> room;
    const PolicyQueue* queue = nullptr;
    bool queue_used = false;  // one growth onto idle nodes per snapshot
    int leaving = 0;          // nodes being given back for the queue (shrinks under way or decided)
    int can_leave = 0;        // releasable nodes the jobs hold above their minimums
  };

  // The steps of decide(), in order.
  void track_loads(const Snapshot& snap);
  // A growth on trial; nothing until it has run measure_s, then a note (kept) or the resize
  // undoing it.
  std::optional<PolicyDecision> judge_trial(double now, const PolicyJob& job, JobState& s);
  // A job with a rank on loaded host from: that rank moves or merges (nothing if it cannot).
  std::optional<PolicyDecision> leave_host(Snapshot& snap, const PolicyJob& job,
                                           const std::string& from);
  std::optional<PolicyDecision> grow(Snapshot& snap, const PolicyJob& job, JobState& s);
  // The queue's rules: leave a node for a waiting job; grow onto a node idle for idle_s.
  std::optional<PolicyDecision> shrink_for_queue(Snapshot& snap, const PolicyJob& job);
  std::optional<PolicyDecision> grow_onto_idle(Snapshot& snap, const PolicyJob& job, JobState& s);
  void start_trial(JobState& s, const PolicyJob& job, double now);
  // Within checkpoint_margin_s of the allocation's time limit (with the queue's reading).
  bool near_time_limit(const Snapshot& snap, double margin) const;
  // The checkpoint margin for these jobs (PolicyConfig::checkpoint_margin_s), and how it was had.
  double checkpoint_margin(const std::vector<PolicyJob>& jobs, std::string* how) const;

  // The size the job is not shrunk below (PolicyJob::min_size, else min_procs; at least 1).
  int min_size(const PolicyJob& job) const;
  // Above load_high for load_sustain_s.
  bool loaded(const std::string& host, double now) const;
  // May receive processes: not draining, competing load below load_low, not loaded.
  bool quiet(const PolicyHost& h, double now) const;
  // The first quiet host with a free slot, other than *except if given ("" if none).
  std::string quiet_target(const Snapshot& snap, const std::string* except) const;

  PolicyConfig config_;
  std::map<std::string, JobState> jobs_;
  std::map<std::string, double> high_since_;  // host: since when above load_high (absent: not)
  std::map<std::string, double> idle_since_;  // Slurm node: since when idle (absent: not)
  std::vector<std::pair<std::string, std::string>> notes_;
};

}  // namespace pcm::daemon
