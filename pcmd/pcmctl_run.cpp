// pcmctl_run.cpp — `pcmctl run`: a supervised launch. It starts the job through the MPI's
// launcher (its own process group), watches it and pcmd's view of it, and when the run fails
// (the launcher exits non-zero, or pcmd sees the job fail while the launcher is still there) it
// ends what is left and relaunches the job from its newest valid version (PCM_RESTART=1; from
// the start when there is none), up to --max-restarts times. Each recovery is a line of the
// job's events with its timings. Its exit code is the job's.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include "error.h"
#include "ops.h"
#include "pcm_types.h"
#include "pcmctl.h"

namespace pcm::detail {

using proto::json;
using Clock = std::chrono::steady_clock;

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void pause_ms(long ms) {
  const timespec t{ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, nullptr);
}

// The launcher on np processes, in a process group of its own; PCM_JOB set, PCM_RESTART as asked.
pid_t launch(const RunOptions& o, int np, bool restart) {
  std::vector<std::string> args{o.mpiexec, "-n", std::to_string(np)};
  args.insert(args.end(), o.command.begin(), o.command.end());
  const pid_t pid = ::fork();
  if (pid < 0) fail(PCM_ERR_INTERNAL, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::setenv("PCM_JOB", o.job.c_str(), 1);
    if (restart) {
      ::setenv("PCM_RESTART", "1", 1);
    } else {
      ::unsetenv("PCM_RESTART");
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "pcmctl run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  ::setpgid(pid, pid);  // also here: the group exists before anything signals it
  return pid;
}

// Ends the launcher's whole group: TERM, then KILL after grace_s; returns its wait status.
int end_group(pid_t pid, double grace_s) {
  ::kill(-pid, SIGTERM);
  const auto until = Clock::now() + std::chrono::duration<double>(grace_s);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > until) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    pause_ms(50);
  }
  ::kill(-pid, SIGKILL);  // whatever of the group outlived the launcher
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "ended";
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The job in pcmd's status (null: pcmd does not answer or does not know it).
json job_status(Connection& pcmd, const std::string& job) {
  try {
    const json r = pcmd.request(req_status(job));
    return r.at("jobs").at(0);
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool has_valid_version(Connection& pcmd, const std::string& job) {
  try {
    const json versions = pcmd.request(req_checkpoints(job)).at("versions");
    for (const json& v : versions)
      if (v.value("valid", false)) return true;
    for (const json& v : versions)
      std::cerr << "pcmctl run: version " << v.value("iteration", 0L)
                << " is not valid: " << v.value("why", std::string("?")) << "\n";
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: the job's versions cannot be listed: " << e.what() << "\n";
  }
  return false;
}

void event(Connection& pcmd, const std::string& job, const std::string& text) {
  std::cerr << "pcmctl run: " << text << "\n";
  try {
    ops::JobEvent e{job, text};
    pcmd.request(ops::request(e));
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: pcmd did not take the event: " << e.what() << "\n";
  }
}

}  // namespace

int run_supervised(Connection& pcmd, const RunOptions& o) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  int restarts = 0;
  bool restart = false;
  std::optional<Clock::time_point> detected;  // the last run's failure, while recovering
  std::string why;
  for (;;) {
    const auto started = Clock::now();
    const pid_t pid = launch(o, o.np, restart);
    bool seen_running = false, resumed = false;
    auto next_look = started;
    int status = 0;
    bool broken = false;  // pcmd saw the job fail while the launcher stayed
    for (;;) {
      if (::waitpid(pid, &status, WNOHANG) == pid) break;
      if (g_signal) {
        const int sig = g_signal;
        std::cerr << "pcmctl run: signal " << sig << ": ending the job, no restart\n";
        end_group(pid, 10);
        return 128 + sig;
      }
      if (Clock::now() >= next_look) {
        next_look = Clock::now() + std::chrono::milliseconds(250);
        const json j = job_status(pcmd, o.job);
        const std::string state = j.is_object() ? j.value("state", "") : "";
        if (state == "running") seen_running = true;
        // Iterating again: the recovery is over.
        if (detected && !resumed && state == "running" && j.value("iteration", 0L) > 0) {
          resumed = true;
          event(pcmd, o.job,
                fmt::format("recovery {} of {}: iterating again {:.2f} s after the loss was seen "
                            "({}; relaunched {:.2f} s after it, {} processes, {})",
                            restarts, o.max_restarts, seconds(*detected, Clock::now()), why,
                            seconds(*detected, started), o.np,
                            restart ? "from the newest version" : "from the start"));
        }
        if (seen_running && state == "failed") {
          why = fmt::format("pcmd: {}", j.value("last_event", "failed"));
          broken = true;
          detected = Clock::now();
          status = end_group(pid, 10);
          break;
        }
      }
      pause_ms(50);
    }
    if (!broken && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (!broken) {
      detected = Clock::now();
      why = "the launcher " + describe(status);
    }
    if (restarts >= o.max_restarts) {
      event(pcmd, o.job,
            fmt::format("run failed ({}) after {} recoveries: no more (--max-restarts {})", why,
                        restarts, o.max_restarts));
      return broken ? 1 : std::max(1, exit_code(status));
    }
    ++restarts;
    // pcmd must have seen the run end before the relaunch takes the name over (bounded).
    for (int i = 0; i < 200; ++i) {
      const json j = job_status(pcmd, o.job);
      if (!j.is_object() || j.value("state", "") != "running") break;
      pause_ms(50);
    }
    restart = has_valid_version(pcmd, o.job);
    event(pcmd, o.job,
          fmt::format("recovery {} of {}: the run was lost ({}); relaunching on {} processes {}",
                      restarts, o.max_restarts, why, o.np,
                      restart ? "from the newest valid version" : "from the start (no version)"));
  }
}

}  // namespace pcm::detail
