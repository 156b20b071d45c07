// run.cpp — `pcmctl run`: a supervised launch. It starts the job through the MPI's
// launcher (its own process group), watches it and pcmd's view of it, and when the run fails
// (the launcher exits non-zero, or pcmd sees the job fail while the launcher is still there) it
// ends what is left and relaunches the job from its newest valid version (PCM_RESTART=1; from
// the start when there is none), up to --max-restarts times. Each recovery is a line of the
// job's events with its timings. Its exit code is the job's. A whole job's move to another site
// (pcmctl move) is move.cpp's.
#include <fmt/format.h>
#include <fmt/ranges.h>
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
#include <utility>

#include "error.h"
#include "ops.h"
#include "pcm_types.h"
#include "pcmctl.h"
#include "probe.h"
#include "supervisor.h"

namespace pcm::ctl {

using proto::json;
using Clock = SupervisorClock;

namespace {

// The run of the job a status shows (pcmd's incarnation; 0 where there is none, or an older pcmd).
long long incarnation_of(const json& j) {
  return j.is_object() ? j.value("incarnation", 0LL) : 0LL;
}

volatile sig_atomic_t g_signal = 0;
// A signal ended the job: run_supervised returns exit_code.
struct Interrupted {
  int exit_code;
};
void on_signal(int s) { g_signal = s; }

}  // namespace

int pending_signal() { return g_signal; }

namespace {

// The hosts a run goes on (on_inventory): "h1:n1,h2:n2", np processes in all; np 0: none.
struct Placement {
  int np = 0;
  std::string hosts;
  std::vector<std::string> left_out;  // the inventory's hosts not used, and why
};

// A Placement's hosts ("a:2,b:1") as srun's node list for -m arbitrary ("a,a,b").
std::string srun_nodes(const std::string& hosts) {
  std::string out;
  std::size_t from = 0;
  while (from < hosts.size()) {
    std::size_t comma = hosts.find(',', from);
    if (comma == std::string::npos) comma = hosts.size();
    const std::string item = hosts.substr(from, comma - from);
    const auto colon = item.rfind(':');
    const std::string name = item.substr(0, colon);
    const int n = colon == std::string::npos ? 1 : std::max(1, std::atoi(item.c_str() + colon + 1));
    for (int i = 0; i < n; ++i) out += (out.empty() ? "" : ",") + name;
    from = comma + 1;
  }
  return out;
}

// The launcher on np processes (hosts: "" or a Placement's), in a process group of its own;
// PCM_JOB set, PCM_RESTART as asked; in a site, after its prefix and with its PCM_CONFIG (given
// through env(1), which a prefix such as ssh passes on).
pid_t launch(const RunOptions& o, int np, const std::string& hosts, bool restart,
             long long reshaped_command, const SiteLaunch& site) {
  const std::string reshaped = std::to_string(reshaped_command);
  std::vector<std::string> args = site.prefix;
  if (!site.prefix.empty()) {
    args.insert(args.end(), {"env", "PCM_JOB=" + o.job, "PCM_SUPERVISED=1"});
    args.push_back(restart ? "PCM_RESTART=1" : "-u");
    if (!restart) args.push_back("PCM_RESTART");
    if (reshaped_command > 0) args.push_back("PCM_RESHAPED_COMMAND=" + reshaped);
    if (!site.config.empty()) args.push_back("PCM_CONFIG=" + site.config);
  }
  args.push_back(o.mpiexec);
  const bool srun = o.launcher == "srun";
  const std::string where = srun ? srun_nodes(hosts) : hosts;
  bool placed = false;
  for (std::string a : o.mpiexec_args) {
    const auto at = a.find("{hosts}");
    if (at != std::string::npos) {
      a.replace(at, 7, where);
      placed = true;
    }
    args.push_back(std::move(a));
  }
  if (!hosts.empty() && !placed) {
    if (srun) {
      args.insert(args.end(), {"-w", where, "-m", "arbitrary"});  // a node per rank, in order
    } else {
      args.insert(args.end(), {"-hosts", hosts});
    }
  }
  args.insert(args.end(), {"-n", std::to_string(np)});
  // A step whose task fails ends whole, as mpiexec ends a run (pcmctl run then recovers it).
  if (srun) args.push_back("--kill-on-bad-exit=1");
  args.insert(args.end(), o.command.begin(), o.command.end());
  const pid_t pid = ::fork();
  if (pid < 0) fail(PCM_ERR_INTERNAL, "fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::setenv("PCM_JOB", o.job.c_str(), 1);
    ::setenv("PCM_SUPERVISED", "1", 1);
    if (srun) {
      ::setenv("PCM_LAUNCHER", "srun", 1);
      ::setenv("PCM_RESHAPE", "restart", 0);  // unless the user said otherwise
    }
    if (!site.config.empty()) ::setenv("PCM_CONFIG", site.config.c_str(), 1);
    if (restart) {
      ::setenv("PCM_RESTART", "1", 1);
    } else {
      ::unsetenv("PCM_RESTART");
    }
    if (reshaped_command > 0) {
      ::setenv("PCM_RESHAPED_COMMAND", reshaped.c_str(), 1);
    } else {
      ::unsetenv("PCM_RESHAPED_COMMAND");
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

}  // namespace

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void pause_ms(long ms) {
  const timespec t{ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&t, nullptr);
}

bool wait_within(pid_t pid, double seconds, int* status) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (::waitpid(pid, status, WNOHANG) == 0) {
    if (Clock::now() > until) return false;
    pause_ms(50);
  }
  return true;
}

namespace {
// Waits for child pid up to seconds, then sends SIGKILL to target (pid, or -pid: its group) and
// waits for it; its wait status, *late saying whether it had to be killed.
int wait_bounded(pid_t pid, double seconds, pid_t target, bool* late) {
  int status = 0;
  *late = !wait_within(pid, seconds, &status);
  if (*late) {
    ::kill(target, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  return status;
}
}  // namespace

// Ends the launcher's whole group: TERM, then KILL after grace_s; returns its wait status.
int end_group(pid_t pid, double grace_s) {
  ::kill(-pid, SIGTERM);
  bool late = false;
  const int status = wait_bounded(pid, grace_s, -pid, &late);
  ::kill(-pid, SIGKILL);  // whatever of the group outlived the launcher
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return "ended";
}

namespace {

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

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

std::string requeue_job() {
  const char* id = std::getenv("SLURM_JOB_ID");
  const std::string job = id ? id : "";
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
    return "--requeue outside a Slurm job (no SLURM_JOB_ID): not requeued";
  const pid_t pid = ::fork();
  if (pid < 0) return fmt::format("scontrol requeue {}: fork: {}", job, std::strerror(errno));
  if (pid == 0) {
    ::execlp("scontrol", "scontrol", "requeue", job.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Requeuing a running job ends it, this process with it: what follows may never run.
  bool late = false;
  const int status = wait_bounded(pid, 30, pid, &late);
  if (late) return fmt::format("scontrol requeue {} did not answer within 30 s", job);
  return fmt::format("scontrol requeue {} {}", job, describe(status));
}

void event(Connection& pcmd, const std::string& job, const std::string& text) {
  std::cerr << "pcmctl run: " << text << "\n";
  try {
    ops::JobEvent e{job, text, std::nullopt};
    pcmd.request(ops::request(e));
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: pcmd did not take the event: " << e.what() << "\n";
  }
}

namespace {

// The inventory's hosts (of the site, unless "") that are up (not lost, not draining; silent
// ones too: a process there was lost, and this probe tells whether the host is back) and answer a
// TCP probe (unless behind a site launcher: not reachable from here), with their free slots, in
// the inventory's order, filled until o.np processes.
Placement place_on_inventory(Connection& pcmd, const RunOptions& o, const std::string& site,
                             int np) {
  Placement p;
  const bool probe = o.site_launchers.count(site) == 0;
  const json reply = pcmd.request(req_host_list());
  for (const json& h : reply.at("hosts")) {
    if (!site.empty() && h.value("site", "") != site) continue;
    const std::string name = h.value("host", "");
    const std::string state = h.value("state", "");
    const int free = h.value("free", 0);
    std::string why;
    if (state != "up" && state != "silent")
      why = state;
    else if (free <= 0)
      why = "no free slot";
    else if (p.np >= np)
      why = "not needed";  // not probed: a dead host costs the probe's timeout
    else if (probe && !tcp_round_trip_ms(name, o.probe_port, 500))
      why = "does not answer";
    if (!why.empty()) {
      p.left_out.push_back(fmt::format("{} ({})", name, why));
      continue;
    }
    const int take = std::min(free, np - p.np);
    p.hosts += fmt::format("{}{}:{}", p.hosts.empty() ? "" : ",", name, take);
    p.np += take;
  }
  return p;
}

}  // namespace

bool Supervisor::place() {
  np_ = target_np_;
  if (!o_.on_inventory) return true;
  Placement p;
  try {
    p = place_on_inventory(pcmd_, o_, site_, target_np_);
  } catch (const std::exception& e) {
    event(pcmd_, o_.job, fmt::format("cannot read pcmd's inventory: {}", e.what()));
    return false;
  }
  const std::string left_out = fmt::format("{}", fmt::join(p.left_out, ", "));
  if (p.np < o_.min_np) {
    event(pcmd_, o_.job,
          fmt::format("cannot start: the hosts that answer{} hold {} processes ({}), --min is {}{}",
                      site_.empty() ? "" : " in site " + site_, p.np,
                      p.hosts.empty() ? "none" : p.hosts, o_.min_np,
                      p.left_out.empty() ? "" : "; left out: " + left_out));
    return false;
  }
  np_ = p.np;
  hosts_ = p.hosts;
  if (!p.left_out.empty())
    std::cerr << "pcmctl run: " << p.np << " processes on " << p.hosts << "; left out: " << left_out
              << "\n";
  return true;
}

void Supervisor::note_resumed(const json& j, Clock::time_point started) {
  if (!detected_ || resumed_ || j.value("state", "") != "running" || j.value("iteration", 0L) <= 0)
    return;
  resumed_ = true;  // iterating again: the recovery is over
  event(
      pcmd_, o_.job,
      fmt::format("recovery {} of {}: iterating again {:.2f} s after the loss was seen "
                  "({}; relaunched {:.2f} s after it, {} processes{}, {})",
                  restarts_, o_.max_restarts, seconds_between(*detected_, Clock::now()), why_,
                  seconds_between(*detected_, started), np_, hosts_.empty() ? "" : " on " + hosts_,
                  restart_ ? "from the newest version" : "from the start"));
}

int Supervisor::follow_run() {
  const auto started = Clock::now();
  // The run before this one (its state lingers, `stopped` after a move, until this one
  // registers): its end is not this run's.
  const long long before = incarnation_of(job_status(pcmd_, o_.job));
  const pid_t pid = launch(o_, np_, hosts_, restart_, std::exchange(reshaped_command_, 0),
                           site_launch(o_, site_));
  bool seen_running = false;
  bool told = false;  // pcmd knows this run is supervised (it may be moved)
  moved_ = false;
  std::optional<Clock::time_point> finished_at;  // when pcmd saw the job finish
  resumed_ = false;
  broken_ = false;
  auto next_look = started;
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (const int sig = g_signal) {
      g_signal = 0;
      // TERM, USR1, USR2 (a preemption, a warning, the batch script's forward): the job writes a
      // last version and ends by itself (docs/user/preemption.md); INT, or a job pcmd cannot ask:
      // ended at once, as before.
      if (sig == SIGINT || !ask_stop(sig)) {
        std::cerr << "pcmctl run: signal " << sig << ": ending the job, no restart\n";
        end_group(pid, 10);
        throw Interrupted{128 + sig};
      }
    }
    if (Clock::now() >= next_look) {
      // Every 0.25 s; every 0.05 s for a job that may reshape by restart (a command waits for
      // this look) and while a move or a reshape waits for its run to iterate (its timings).
      next_look = Clock::now() +
                  std::chrono::milliseconds(moving_ || reshaping_ || restart_looks_ ? 50 : 250);
      json j = job_status(pcmd_, o_.job);
      if (j.is_object()) restart_looks_ = j.value("reshape", "spawn") != "spawn";
      // The run a restart reshape ended, until this one takes the name over: not this run's.
      if (j.is_object() && j.contains("reshaping") && !j.at("reshaping").is_null()) j = json();
      const std::string state = j.is_object() ? j.value("state", "") : "";
      if (state == "running") seen_running = true;
      if (state == "running" && !told) told = supervising();
      if (j.is_object()) note_resumed(j, started);
      if (j.is_object() && moving_) move_resumed(j);
      if (j.is_object() && reshaping_) reshape_resumed(j);
      if (state == "running" && moved_asked(j)) {
        const MoveStep step = move(pid, j, &status);
        if (step == MoveStep::kMoved) {
          moved_ = true;
          return 0;
        }
        if (step == MoveStep::kEnded) break;  // status: the launcher's end
        continue;
      }
      if (state == "running" && reshape_asked(j)) {
        const MoveStep step = restart_reshape(pid, j, &status);
        if (step == MoveStep::kMoved) {
          moved_ = true;  // the reshape placed the next run
          return 0;
        }
        if (step == MoveStep::kEnded) break;
        continue;
      }
      // (An older pcmd shows no incarnation: any end counts, as before.)
      const bool this_run = !j.contains("incarnation") || incarnation_of(j) != before;
      if ((state == "finished" || state == "stopped") && !finished_at && this_run)
        finished_at = Clock::now();
      // A run that lost a process (a split's new one given up, its host gone) may never leave
      // MPI_Finalize: its launcher gets 2 s, not the whole grace.
      const bool lost_some = j.is_object() && !j.value("lost", json::array()).empty();
      const double grace =
          lost_some ? std::min(2.0, double(o_.finish_grace_s)) : double(o_.finish_grace_s);
      if (finished_at && seconds_between(*finished_at, Clock::now()) > grace) {
        // The job ended well, but its launcher stays: processes stuck after the end (in
        // MPI_Finalize, with a peer on a host that died after the last reconfiguration).
        event(pcmd_, o_.job,
              fmt::format("the job finished, but its launcher was still there {:g} s later: "
                          "ended it (processes stuck in MPI_Finalize? {})",
                          grace,
                          lost_some ? "a process of the run was lost: " +
                                          j.at("lost").at(0).get<std::string>()
                                    : std::string("a host lost after the last reconfiguration")));
        end_group(pid, 2);
        return 0;
      }
      if (seen_running && state == "failed") {
        why_ = fmt::format("pcmd: {}", j.value("last_event", "failed"));
        broken_ = true;
      } else if (!seen_running && seconds_between(started, Clock::now()) > o_.start_timeout_s) {
        why_ = fmt::format("the run did not register with pcmd within {} s", o_.start_timeout_s);
        broken_ = true;
      }
      if (broken_) {
        detected_ = Clock::now();
        return end_group(pid, 1);  // its processes are lost already
      }
    }
    pause_ms(50);
  }
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    detected_ = Clock::now();
    why_ = "the launcher " + describe(status);
  }
  return status;
}

bool Supervisor::supervising() {
  try {
    pcmd_.request(ops::request(ops::JobMove{o_.job, "supervise", std::nullopt, std::nullopt}));
    return true;
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: pcmd did not take the run as supervised: " << e.what() << "\n";
    return false;  // told again at the next look
  }
}

bool Supervisor::ask_stop(int sig) {
  if (stop_asked_) return true;  // once: the copies of one signal come together
  try {
    pcmd_.request(req_checkpoint(
        o_.job, fmt::format("pcmctl run received signal {} ({})", sig, strsignal(sig)), true,
        true));
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: pcmd did not take the stop (" << e.what() << ")\n";
    return false;
  }
  stop_asked_ = true;
  std::cerr << "pcmctl run: signal " << sig
            << ": the job writes a last version and ends (SIGINT ends it at once)\n";
  return true;
}

int Supervisor::stopped(const json& j) {
  event(pcmd_, o_.job,
        fmt::format("the job stopped ({}); pcmctl run {}exits {}", j.value("last_event", "?"),
                    o_.requeue ? "requeues its Slurm job and " : "", PCM_EXIT_STOPPED));
  // Requeuing a running Slurm job ends it, this process too: told first.
  if (o_.requeue) event(pcmd_, o_.job, requeue_job());
  return PCM_EXIT_STOPPED;
}

void Supervisor::resume_if_stopped() {
  const json j = job_status(pcmd_, o_.job);
  if (!j.is_object()) return;  // a job pcmd does not know: its first run
  const bool was_stopped = j.value("state", "") == "stopped";
  // A batch script Slurm runs again (requeued: by pcmctl run, a preemption, a node's failure).
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  const bool requeued = o_.requeue && restarts && std::atoi(restarts) > 0;
  if (!was_stopped && !requeued) return;
  restart_ = has_valid_version(pcmd_, o_.job);
  if (restart_)
    event(
        pcmd_, o_.job,
        fmt::format("pcmctl run: the job {}; this run resumes from its newest valid version",
                    was_stopped ? "stopped before"
                                : fmt::format("was requeued (SLURM_RESTART_COUNT={})", restarts)));
}

int Supervisor::run() {
  resume_if_stopped();
  if (!place()) return 1;
  for (;;) {
    const int status = follow_run();
    if (give_up_) return 1;
    if (moved_) continue;  // the move placed the next run
    if (const json j = job_status(pcmd_, o_.job);
        j.is_object() && j.value("state", "") == "stopped")
      return stopped(j);
    if (!broken_ && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      if (moving_) move_resumed(job_status(pcmd_, o_.job));
      if (reshaping_) reshape_resumed(job_status(pcmd_, o_.job));
      return 0;
    }
    if (moving_) move_lost();
    if (restarts_ >= o_.max_restarts) {
      event(pcmd_, o_.job,
            fmt::format("run failed ({}) after {} recoveries: no more (--max-restarts {})", why_,
                        restarts_, o_.max_restarts));
      return broken_ ? 1 : std::max(1, exit_code(status));
    }
    ++restarts_;
    // pcmd must have seen the run end before the relaunch takes the name over (bounded).
    for (int i = 0; i < 200; ++i) {
      const json j = job_status(pcmd_, o_.job);
      if (!j.is_object() || j.value("state", "") != "running") break;
      pause_ms(50);
    }
    restart_ = has_valid_version(pcmd_, o_.job);
    if (reshape_after_hang(job_status(pcmd_, o_.job))) continue;
    if (!place()) return 1;
    event(pcmd_, o_.job,
          fmt::format("recovery {} of {}: the run was lost ({}); relaunching on {} processes{} {}",
                      restarts_, o_.max_restarts, why_, np_,
                      hosts_.empty() ? "" : " (" + hosts_ + ")",
                      restart_ ? "from the newest valid version" : "from the start (no version)"));
  }
}

int run_supervised(Connection& pcmd, const RunOptions& o) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
  set_site_port_range(pcmd);  // MPI inside the sites' open port range (site_env.cpp)
  try {
    return Supervisor(pcmd, o).run();
  } catch (const Interrupted& i) {
    return i.exit_code;
  }
}

}  // namespace pcm::ctl
