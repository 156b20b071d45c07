// watchdog.h — the bound on a reconfiguration's blocking part (PCM_RECONFIG_TIMEOUT_S): a
// background thread that ends a process stuck in a spawn or a data exchange, so that the job ends
// (and pcmctl run relaunches it) instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace pcm::lib {

// The exit code of a process the watchdog ended (EX_TEMPFAIL of sysexits.h: try again; pcmctl run
// relaunches the job from its newest version), where it ends by exiting (Deadline::kill_self).
constexpr int kExitReconfigTimeout = 75;
// The processes that do not tell pcmd wait this much longer than the one that does, so that its
// report goes out before the launcher, seeing one of them end, tears the job down.
constexpr int kQuietGraceS = 3;

class Watchdog {
 public:
  // What a process is doing while armed, and who it is (for the message).
  struct Deadline {
    std::string what;        // "the split", "the migration", ...
    int seconds = 0;         // <= 0: no bound, nothing is armed
    int rank = -1;           // this process's rank in the world it is leaving or joining
    std::string job;         // "" while a spawned process does not know it yet
    bool tell_pcmd = false;  // this process (the lowest rank involved) tells pcmd
    // End by SIGKILL instead of exit code kExitReconfigTimeout: MPICH's hydra (4.0.2, measured)
    // ends the job's other process groups, such as a spawned one stuck before MPI_Init, only when
    // a process dies by a signal; after an exit with any code it waits for them.
    bool kill_self = false;
    std::string stage;         // set at expiry: the Stage it happened in ("" if none)
    std::int64_t command = 0;  // the command whose reconfiguration this is (0: none known)
  };
  // Called in the watchdog's thread when a deadline passes (never MPI). The default,
  // end_stuck_process, does not return; a test's may, and then the watchdog stays quiet until the
  // scope that armed it ends.
  using Expiry = std::function<void(const Deadline&)>;

  explicit Watchdog(Expiry on_expiry);
  ~Watchdog();  // stops and joins the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Armed while it lives. Scopes nest: only the outermost arms and disarms (an inner one, with
  // its own what and seconds, changes nothing). Returned by value (copy elision), never moved.
  class Scope {
   public:
    Scope(Watchdog& w, Deadline d);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog& w_;
    bool armed_;  // this scope armed it (depth went from 0 to 1 with a bound)
  };

  // Names the call a reconfiguration is in while it lives ("MPI_Comm_spawn"), for the line a
  // stuck process prints; the previous stage comes back at its end. Cheap: one lock.
  class Stage {
   public:
    Stage(Watchdog& w, std::string name);
    ~Stage();
    Stage(const Stage&) = delete;
    Stage& operator=(const Stage&) = delete;

   private:
    Watchdog& w_;
    std::string previous_;
  };

  // When the armed deadline passes (nullopt: nothing is armed).
  std::optional<std::chrono::steady_clock::time_point> deadline() const;
  // For tests: what is armed now (nullopt: nothing), and whether the thread was ever started.
  std::optional<std::string> armed_what() const;
  bool started() const;

 private:
  void run();

  Expiry on_expiry_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;  // started at the first arm
  int depth_ = 0;       // open scopes, armed or not
  bool stop_ = false;
  std::optional<Deadline> armed_;
  std::string stage_;  // Stage's name, "" outside one
  std::chrono::steady_clock::time_point deadline_{};
};

// The line a stuck process prints: "pcm: rank R of job J: the split did not finish within N s
// (PCM_RECONFIG_TIMEOUT_S); ending this process ...".
std::string expiry_line(const Watchdog::Deadline& d);

// The default expiry: writes expiry_line to stderr (libpcm's log), tells pcmd with a job_event
// when d.tell_pcmd (its own connection, at most 2 s), then ends the process: SIGKILL if
// d.kill_self, else _exit(kExitReconfigTimeout).
[[noreturn]] void end_stuck_process(const Watchdog::Deadline& d);

}  // namespace pcm::lib
