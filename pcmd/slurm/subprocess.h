// subprocess.h — pcmd runs other programs (Slurm's commands): to the end with a bound
// (run_command), or in the background while its loop goes on (Child).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pcm::daemon {

// What running a command gave.
struct CommandResult {
  bool found = true;       // false: not on PATH (or not executable)
  bool timed_out = false;  // killed after the timeout
  int exit_code = 0;       // its exit status (128 + signal when killed by one)
  std::string output;      // stdout and stderr together (at most 64 KiB)
};

// Runs argv[0] (searched on PATH) with argv, stdin /dev/null, capturing stdout and stderr;
// killed (SIGKILL) after timeout. Never throws for the command's failures (see CommandResult).
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

// This process's environment without the variables a Slurm job or step sets (SLURM_*, SALLOC_*,
// SBATCH_*, SRUN_*), which Slurm's commands would read as options; SLURM_CONF is kept.
std::vector<std::string> environment_outside_slurm();

// A program running in the background: started, then looked at (poll) without waiting, killed
// at the latest by its destructor. Its stdout and stderr are read as they come (at most 64 KiB).
class Child {
 public:
  Child() = default;
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Starts argv[0] (searched on PATH) with env (KEY=VALUE each), stdin /dev/null. False (and
  // exit_code 127) when it cannot be started.
  bool start(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  // Reads what it wrote since and reaps it if it ended. True while it runs.
  bool poll();
  bool running() const { return pid_ > 0; }
  // Ends it (SIGTERM, then SIGKILL after grace) and reaps it.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  const std::string& output() const { return output_; }
  // Its exit status once ended (128 + signal when killed by one); nothing while it runs.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  void drain();
  pid_t pid_ = 0;
  int out_ = -1;
  std::string output_;
  std::optional<int> exit_code_;
};

// Commands run in the background, each with what to do with its result once it has ended (or
// was killed at its bound: timed_out): pcmd's loop starts them and polls, never waits for one.
class Background {
 public:
  using Then = std::function<void(const CommandResult&)>;
  // Starts argv (environment_outside_slurm()); one that cannot start is done at the next poll,
  // with found false.
  void run(const std::vector<std::string>& argv, std::chrono::milliseconds bound, Then then);
  // Calls `then` of each command that has ended (in the order they ended); those may run more.
  void poll();
  std::size_t running() const { return items_.size(); }

 private:
  struct Item {
    Child child;
    std::chrono::steady_clock::time_point deadline;
    Then then;
    bool started = false;
  };
  std::vector<std::unique_ptr<Item>> items_;
};

}  // namespace pcm::daemon
