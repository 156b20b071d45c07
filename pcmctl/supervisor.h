// supervisor.h — `pcmctl run`'s supervisor, shared by run.cpp (launch, watch,
// recover) and move.cpp (a whole job stopped and relaunched: a move to another site, a restart
// reshape).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "pcmctl.h"

namespace pcm::ctl {

using SupervisorClock = std::chrono::steady_clock;

double seconds_between(SupervisorClock::time_point a, SupervisorClock::time_point b);
void pause_ms(long ms);
// Whether child pid ended within seconds (its wait status in *status).
bool wait_within(pid_t pid, double seconds, int* status);
// Ends the launcher's whole group: TERM, then KILL after grace_s; returns its wait status.
int end_group(pid_t pid, double grace_s);
// A wait status as words: "exited with 0", "was killed by signal 9".
std::string describe(int status);
// The job in pcmd's status (null: pcmd does not answer or does not know it).
proto::json job_status(Connection& pcmd, const std::string& job);
bool has_valid_version(Connection& pcmd, const std::string& job);
// The INT, TERM, USR1 or USR2 pcmctl run was sent and has not taken up (0: none).
int pending_signal();
// --requeue: `scontrol requeue $SLURM_JOB_ID`; what happened, for the job's events.
std::string requeue_job();
// A line of the job's events (and of pcmctl run's standard error).
void event(Connection& pcmd, const std::string& job, const std::string& text);

// How runs start in a site (pcmctl run --site-launcher, --site-config); "" for either: as
// pcmctl run itself (no prefix, its own environment's PCM_CONFIG).
struct SiteLaunch {
  std::vector<std::string> prefix;  // e.g. {"ssh", "frontend-b"}: mpiexec runs inside the site
  std::string config;               // PCM_CONFIG for the job's processes there
};
SiteLaunch site_launch(const RunOptions& o, const std::string& site);

// One supervised job: its runs one after another until one ends well or the restarts run out.
class Supervisor {
 public:
  Supervisor(Connection& pcmd, const RunOptions& o)
      : pcmd_(pcmd), o_(o), site_(o.site), target_np_(o.np) {}
  int run();

 private:
  using Clock = SupervisorClock;
  // What a move (move.cpp) did with the run it was asked of.
  enum class MoveStep { kStayed, kMoved, kEnded };
  // A move under way: from which site, and when each of its steps ended.
  struct Moving {
    std::string from, to;
    std::string from_hosts;
    int from_np = 0;
    Clock::time_point asked, checkpointed, stopped;  // checkpointed: the run stopped
    std::string launcher_ended;                      // how its launcher ended
  };
  // A restart reshape under way (move.cpp): the command, the world it makes (size, hosts by
  // rank), and when each step ended.
  struct Reshaping {
    std::int64_t command = 0;
    std::string what;
    int from_np = 0;
    int size = 0;
    std::vector<std::string> hosts;
    Clock::time_point asked, checkpointed, stopped;
  };

  // Where the next run goes; false (with an event) when it cannot start anywhere.
  bool place();
  // Starts a run and follows it until it ends; its wait status. Sets broken_ when pcmd saw it
  // fail (or it never registered) while the launcher stayed, detected_/why_ on every failure,
  // moved_ when a move ended it (the next run goes to the move's site).
  int follow_run();
  void note_resumed(const proto::json& j, Clock::time_point started);
  // move.cpp: the run of launcher pid was asked to move (its status j): checkpoint, stop,
  // place in the new site. kEnded: the launcher ended meanwhile (its wait status in *status).
  MoveStep move(pid_t pid, const proto::json& j, int* status);
  // move.cpp: the move under way (moving_) stops the run of launcher pid through PCM: pcmd asks
  // it for a last version and its end (JobMove "stop"), as for a preemption; the processes leave
  // by themselves (the launcher is ended only after the finish grace). kMoved: stopped (moving_'s
  // checkpointed, stopped, launcher_ended); kStayed: the run goes on (*why; the move's failure
  // withdraws the stop); kEnded: the launcher ended before the job stopped (*status, *why).
  MoveStep stop_for_move(pid_t pid, int* status, std::string* why);
  // move.cpp: asks the job for a version (reason: its checkpoint's why), waits until it is
  // committed (--move-timeout-s), tells pcmd that the run ends for its restart reshape (it then
  // expects the losses and lets the relaunch take the name over at once) and ends the run of
  // launcher pid. kMoved: stopped (*id, *checkpointed); kStayed: the run goes on (*why); kEnded:
  // the launcher ended meanwhile (its wait status in *status, *why).
  MoveStep checkpoint_and_stop(pid_t pid, const std::string& reason, int* status, std::string* why,
                               std::int64_t* id, Clock::time_point* checkpointed);
  // move.cpp: the job (status j) has a command pending for a restart reshape of the running run
  // (not one that hung: that run is ending, reshape_after_hang takes it).
  static bool reshape_asked(const proto::json& j);
  // Whether the runs go on hosts pcmctl run names (--on-inventory, srun), or where the launcher
  // puts them.
  bool places_hosts() const;
  // A pending command (its status) as the reshape that carries it out; nullopt (*why) when its
  // world cannot be launched.
  std::optional<Reshaping> reshaping_of(const proto::json& c, std::string* why);
  // The next run goes on reshaping_'s world, as its relaunch.
  void place_reshaped();
  // Carries the pending command out: checkpoint, stop, place the next run on the command's world
  // (kMoved); kStayed: the job goes on as it was (pcmd told why); kEnded: as move's.
  MoveStep restart_reshape(pid_t pid, const proto::json& j, int* status);
  void reshape_resumed(const proto::json& j);
  // After a run was lost: its job (status j) left a command to a restart reshape because the
  // command hung (PCM_RESHAPE=auto): the next run is placed on the command's world.
  bool reshape_after_hang(const proto::json& j);
  void reshape_failed(std::int64_t command, const std::string& why);
  // The move's run iterates (done), or was lost before it did (failed: back to the old site).
  void move_resumed(const proto::json& j);
  void move_lost();
  void move_failed(const std::string& why);
  // Tells pcmd that this run is supervised (a move may be asked of it); false: not told.
  bool supervising();
  // A stop signal (TERM, USR1, USR2): asks pcmd to have the job write a last version and end
  // (once); false when pcmd does not take it (the run is then ended at once).
  bool ask_stop(int sig);
  // The run ended stopped (its status j): --requeue's requeue, the exit status PCM_EXIT_STOPPED.
  int stopped(const proto::json& j);
  // Before the first run: a job pcmd shows stopped (or, with --requeue, any in a batch script
  // Slurm runs again: SLURM_RESTART_COUNT > 0) resumes from its newest valid version.
  void resume_if_stopped();
  static bool moved_asked(const proto::json& j) {
    const auto m = j.find("move");
    return m != j.end() && m->is_object() && m->value("state", "") == "asked";
  }

  Connection& pcmd_;
  const RunOptions& o_;
  std::string site_;  // the site the runs go to ("" : every host of the inventory)
  int restarts_ = 0;
  bool restart_ = false;  // the next run restarts from a version
  int np_ = 0;
  int target_np_ = 0;  // how many processes a run is placed for: --np, then the last reshape's
  long long reshaped_command_ = 0;  // the next launch is the relaunch of this restart reshape
  bool restart_looks_ = false;      // the job may reshape by restart: looks come more often
  std::string hosts_;               // the next run's hosts ("" without on_inventory)
  std::optional<Clock::time_point> detected_;  // the last run's failure, while recovering
  std::string why_;
  bool broken_ = false;
  bool resumed_ = false;
  bool moved_ = false;
  bool give_up_ = false;  // a move found no site to run in
  bool stop_asked_ = false;
  std::optional<Moving> moving_;
  std::optional<Reshaping> reshaping_;
};

}  // namespace pcm::ctl
