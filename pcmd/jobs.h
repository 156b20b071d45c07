// jobs.h — pcmd's jobs: what it knows of each (Job) and the table of them (JobTable), which
// registers them, keeps their history, serves their rank 0's requests (poll, reconfigured,
// finished, profile, status) and notices when they die (the watch port, rank 0's pid).
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "durability.h"
#include "hosts.h"
#include "log.h"
#include "ops.h"
#include "protocol.h"
#include "storage/checkpoint.h"
#include "watch.h"

namespace pcm::daemon {

// A job's state as pcmctl shows it ("running", "finished", "failed" on the wire).
// kStopped: ended after the last version a stop asked for (a signal, `pcmctl stop`): a run with
// PCM_RESTART=1 resumes it.
enum class JobState { kRunning, kFinished, kFailed, kStopped };
const char* state_name(JobState state);

// One entry of a job's history: when (wall clock, seconds since the epoch; 0 for entries of a job
// table from before pcmd kept times) and what.
struct JobEvent {
  double time = 0;
  std::string text;
};

struct Job {
  std::string name;
  JobState state = JobState::kRunning;
  int size = 0;
  std::vector<std::string> hosts;  // by rank
  std::string executable;          // what reconfigurations spawn (checked before each)
  std::int64_t iteration = 0;
  int reconfigurations = 0;
  // The command asked of the job and not yet carried out (one at a time).
  struct Pending {
    std::optional<proto::Command> command;  // queued by the desk (commands.h)
    bool delivered = false;                 // rank 0 has been told
    bool drain = false;                     // the command is a step of a host's drain
    // PCM_RESHAPE=auto: its live attempt failed or hung, and pcmctl run carries it out by a
    // restart (as for a job that reshapes by restart; rank 0 is not handed it again).
    bool by_restart = false;
    // by_restart because it hung: the watchdog ends the run, and pcmctl run relaunches it on the
    // command's world from the newest version (never a version of the dying run).
    bool hung = false;
  };
  Pending pending;
  // A command that waits for more hosts before it can be placed (pcmd --resources slurm:
  // slurm_growth.h): what it is, the Slurm job asked for ("" until Slurm names it), since when.
  // Kept in the job table: a pcmd started again says that the command was not carried out (the
  // allocation is cancelled by its sweep).
  struct Allocating {
    std::string text;
    std::string slurm_job;
    std::chrono::steady_clock::time_point since;
    // As status shows it and the job table keeps it, its age as "seconds" (now: the clock's).
    nlohmann::json to_json(std::chrono::steady_clock::time_point now) const;
    static Allocating from_json(const nlohmann::json& j, std::chrono::steady_clock::time_point now);
  };
  std::optional<Allocating> allocating;
  // A checkpoint asked of the job (pcmctl checkpoint, the policy before a time limit): rank 0's
  // polls carry its id, and PCM_Adapt writes a version, until one is committed. Kept in the job
  // table: a pcmd started again asks it again.
  struct CheckpointWanted {
    std::int64_t id = 0;  // milliseconds since the epoch when asked: never reused
    std::string why;
    std::chrono::steady_clock::time_point since;
    bool at_once = false;  // written from the application's buffers, not staged (ops.h)
    bool stop = false;     // and then the job ends (ops::CheckpointRequest's stop)
    // The stop a move asked (JobMove "stop"): the ranks' own stops during the move are taken as
    // this one, and it is withdrawn when the move fails.
    bool by_move = false;
    // As status shows it and the job table keeps it, its age as "seconds" (now: the clock's).
    nlohmann::json to_json(std::chrono::steady_clock::time_point now) const;
    static CheckpointWanted from_json(const nlohmann::json& j,
                                      std::chrono::steady_clock::time_point now);
  };
  std::optional<CheckpointWanted> checkpoint_wanted;
  // The last version's time from its checkpoint_begin to its commit (seconds; < 0: none yet in
  // this pcmd): the policy's margin before a time limit.
  std::chrono::steady_clock::time_point version_begun{};
  double version_s = -1;
  // This run of the job is supervised by `pcmctl run` (it said so), which can carry a move out.
  bool supervised = false;
  // How the job reshapes, as its processes said at registration (PCM_RESHAPE): "spawn", "auto"
  // (rank 0 is handed the command and spawns) or "restart" (it cannot spawn: the command is never
  // handed to the job; pcmctl run, which must supervise it, sees it pending in the job's status
  // and carries it out by a version, a stop and a relaunch at the command's world: docs/user/
  // restart-reshape.md).
  std::string reshape = "spawn";
  std::string launcher;  // "srun" when pcmctl run --launcher srun started it; else ""
  bool reshapes_by_restart() const { return reshape == "restart"; }
  // A command is pending that pcmctl run is to carry out by a restart reshape.
  bool restart_pending() const {
    return pending.command && (reshapes_by_restart() || pending.by_restart);
  }
  // pcmctl run is ending this run to carry its pending command out by a restart (JobMove
  // reshape_stop): its processes' losses and MPI failures are expected, a signal to them is not a
  // stop, and its relaunch takes the name over. (A move ends its run through PCM: a stop.)
  struct Stopping {
    std::int64_t command = 0;
    std::chrono::steady_clock::time_point since;
  };
  std::optional<Stopping> stopping;
  // A whole job's move to another site (site_moves.h): asked by an operator, carried out by pcmctl
  // run, kept over the runs that follow (as the events) and in the job table.
  struct Move {
    std::string site;
    std::string state;  // asked, under way, done, failed
    std::string text;   // done, failed: what happened
    std::chrono::steady_clock::time_point since;
    // As status shows it and the job table keeps it, its age as "seconds" (now: the clock's).
    nlohmann::json to_json(std::chrono::steady_clock::time_point now) const;
    static Move from_json(const nlohmann::json& j, std::chrono::steady_clock::time_point now);
  };
  std::optional<Move> move;
  // Checkpoints PCM_Adapt schedules itself (PCM_CHECKPOINT_MTBF), as rank 0's polls report them:
  // {"cost_s", "interval_s", "mtbf_s"} (null: not scheduled).
  nlohmann::json checkpoint_schedule;
  std::string last_event;
  std::vector<JobEvent> events;  // the last few events, oldest first
  std::chrono::steady_clock::time_point last_seen;
  std::int64_t layout_command = 0;         // the command whose data layout pcmd holds (0: none)
  nlohmann::json layout;                   // that layout (null: none reported)
  std::optional<Manifest> restarted_from;  // the verified version a restarted job reads
  std::optional<Placement> placement;      // the job's own (PCM_PLACEMENT at launch)
  std::string drain_stalled;               // a drain step failed: the job is no longer drained
  long long incarnation = 0;               // this run of the job: only its processes' hellos count
  std::string nonce;  // its registration's, so that a registration sent again is known
  std::int64_t last_done_command = 0;  // the last command the job reported (done or failed)
  // Whether the job's processes are alive: rank 0's pid, the watch port's connections, the losses.
  struct Liveness {
    long rank0_pid = 0;  // watched while rank 0 runs on pcmd's host
    std::string rank0_host;
    // Since when rank 0's pid has been gone while a delivered command was in flight (check_alive).
    std::optional<std::chrono::steady_clock::time_point> rank0_missing_since;
    // The job's processes holding a connection to the watch port (watch.h), by host and pid.
    std::map<std::pair<std::string, long>, int> watched;
    bool ever_watched = false;
    std::optional<std::chrono::steady_clock::time_point> unwatched_since;
    // Processes lost without saying bye ("PID on HOST"), first first: when a host vanishes, MPI
    // tears the rest of the job down and those losses follow the first one.
    std::vector<std::string> lost;
    // Processes that joined while the delivered command was in flight (a split's new ones): one
    // of them lost then ("PID on HOST") does not fail the job at once, because the old world
    // gives the split up (libpcm/split_guard.h); rank 0's polls hear of it and the command's
    // report decides. Those of a command given up are `abandoned`: their later loss says nothing
    // of the job.
    std::set<std::pair<std::string, long>> joining, abandoned;
    std::string lost_joining;
  };
  Liveness liveness;
  // The last profile rank 0 sent (profile.h, validated; null: none) and when it came. Kept in
  // memory only: a restarted pcmd has the next one within PCM_PROFILE_MS.
  nlohmann::json profile;
  std::chrono::steady_clock::time_point profile_at;
  // Iterations reported by rank 0's polls lately (the policy's iteration rate).
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::int64_t>> progress;
  // Iterations per second over the last few seconds of polls (< 0: not known).
  double rate(std::chrono::steady_clock::time_point now) const;
  // The history as status and the job table show it: "events" (texts) and "event_times".
  void put_events(nlohmann::json& j) const;
};

// The job's move to another site as status shows it (null: none asked of this run or its
// predecessors); the move itself is site_moves.h's, on top of this table.
proto::json move_json(const Job& job);

class JobTable {
 public:
  // my_host: this host's name (rank 0 running here is watched by its pid).
  JobTable(Changes& changes, std::shared_ptr<spdlog::logger> log, std::string my_host);

  std::map<std::string, Job>& all() { return jobs_; }
  const std::map<std::string, Job>& all() const { return jobs_; }
  Job* get(const std::string& name);
  Job& find(const std::string& name);  // refused: unknown job
  // pcmd's fence (ops::Fence): refuses op, sent by a process of run `run` of the job, unless that
  // is the job's current run and, for an op that writes the job's data, the run still runs. An
  // unknown job passes (the handler refuses it).
  void fence(const std::string& name, long long run, bool writes, const char* op) const;
  // A job's latest event, also appended to its history; a change of the table.
  void note(Job& job, std::string event);
  // A running job fails: its state, why, and the command it leaves undone.
  void fail_job(Job& job, std::string why);
  void reshaped_by_restart(Job& job, const Job& old, std::int64_t command);
  void stuck(Job& job, std::int64_t command);
  // Whether the job's rank 0 ran on this host and its process is gone.
  bool rank0_gone(const Job& job) const;
  // Rank 0's pid and jobs every process of which left; whether a job failed (its hosts are
  // free). After take_watch_events (it takes the watcher's news again only before it fails a job
  // on rank 0's pid, so that a loss the watch port names comes first).
  bool check_alive(Watcher& watcher);
  // What the watch port saw (processes arriving, leaving, lost); whether a job failed. Taken
  // before a poll and a reconfiguration's report too, so that a process that joined during a
  // command is known as one of its new processes, and its loss is news to the next poll.
  bool take_watch_events(Watcher& watcher);
  // The hosts of the processes lost since the last call (the inventory makes them silent).
  std::vector<std::string> take_lost_hosts() { return std::exchange(lost_hosts_, {}); }
  void note_lost_host(const std::string& host) {
    if (lost_hosts_.size() < 64) lost_hosts_.push_back(host);
  }

  // register: the running job a registration sent again made (same nonce), if any; the name a
  // registration takes; the job made.
  const Job* registered(const ops::Register& r) const;
  std::string registration_name(const ops::Register& r);
  proto::json register_job(const ops::Register& r, const std::string& name,
                           std::optional<Manifest> restarted_from);
  proto::json registration_reply(const Job& job) const;

  proto::json poll(const ops::Poll& r, LogLimiter& refusals);
  // keep_layout(job, encoded layout, command id): where a restart will look for it.
  enum class Outcome { kAgain, kDone, kFailed };  // kAgain: sent again, taken already
  Outcome reconfigured(
      const ops::Reconfigured& r,
      const std::function<void(const std::string&, std::string, std::int64_t)>& keep_layout);
  void finished(const ops::Finished& r);
  proto::json profile(const ops::Profile& r);
  // A checkpoint asked of a running job (a request asked already stays, with the newer reason);
  // the reply names it. checkpoint_written: a version of the job was committed.
  proto::json want_checkpoint(Job& job, std::string why, bool at_once = false, bool stop = false,
                              bool by_move = false);
  void checkpoint_written(Job& job);
  // Status of one job (named) or all.
  proto::json status(const std::optional<std::string>& name);

  // The table on disk (table_snapshot.cpp): the jobs and the counters, and back.
  proto::json jobs_json() const;
  void put_counters(proto::json& t) const;
  static std::map<std::string, Job> parse_jobs(const proto::json& t);
  // Takes jobs read from the table over; rebooted: the machine restarted since.
  void take_over(std::map<std::string, Job> jobs, const proto::json& t, bool rebooted);

 private:
  void forget_ended_jobs();
  proto::json job_json(const Job& job) const;

  Changes& changes_;
  std::vector<std::string> lost_hosts_;
  std::shared_ptr<spdlog::logger> log_;
  std::string my_host_;
  std::map<std::string, Job> jobs_;
  std::int64_t next_job_ = 1;
  long long next_incarnation_ = 1;
  std::int64_t last_checkpoint_id_ = 0;  // want_checkpoint: ids grow within a run of pcmd
};

}  // namespace pcm::daemon
