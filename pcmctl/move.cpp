// move.cpp — `pcmctl run` stops a whole job and relaunches it elsewhere or otherwise:
// - A move to another site (issue 26): `pcmctl move JOB --site B` asks pcmd, which records it;
//   `pcmctl run`, which launches the job, sees it in the job's status, asks the job for a
//   checkpoint, waits until that version is committed, ends the run's launcher (its process
//   group) and relaunches the job from that version (PCM_RESTART=1) on the site's hosts, through
//   the site's launcher prefix and with its configuration file. A move that cannot be carried
//   out leaves the job where it was (before the stop) or relaunches it there (after).
//   docs/ops/sites.md.
// - A restart reshape (issue 36): a job whose processes said PCM_RESHAPE=restart is never handed
//   its commands by pcmd; `pcmctl run` sees the pending command in the job's status and carries
//   it out the same way, relaunching on the command's world (its size, and with --on-inventory
//   its hosts) with PCM_RESHAPED_COMMAND set: pcmd counts the command done when the new run
//   registers, and the new run's first PCM_Adapt returns PCM_RESHAPED.
//   docs/user/restart-reshape.md.
// Each step is timed in the job's events.
#include <fmt/format.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>

#include "error.h"
#include "ops.h"
#include "pcm_types.h"
#include "pcmctl.h"
#include "supervisor.h"

namespace pcm::ctl {

using proto::json;

namespace {

// Tells pcmd how the move goes (job_move's begin, done, failed: a line of the job's events).
void tell(Connection& pcmd, const std::string& job, const std::string& action,
          const std::string& site, const std::string& text) {
  std::cerr << "pcmctl run: " << text << "\n";
  try {
    ops::JobMove m{job, action, site, text.substr(0, 1900)};  // pcmd takes 2000 at most
    pcmd.request(ops::request(m));
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: pcmd did not take the move's news: " << e.what() << "\n";
  }
}

// The run a move or a restart reshape relaunched iterates (or the job finished meanwhile).
bool iterating_again(const json& j) {
  const std::string state = j.value("state", "");
  return state == "finished" || (state == "running" && j.value("iteration", 0L) > 0);
}

bool has_event(const json& j, const std::string& text) {
  for (const json& e : j.value("events", json::array()))
    if (e.is_string() && e.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

// "SITE=VALUE" options into a map; refused (as a usage error) without the '='.
std::map<std::string, std::string> by_site(const std::vector<std::string>& items,
                                           const char* option) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size() ||
        !proto::valid_name(item.substr(0, eq)))
      fail(PCM_ERR_ARG, "{} takes SITE=VALUE, not '{}'", option, item);
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

}  // namespace

SiteLaunch site_launch(const RunOptions& o, const std::string& site) {
  SiteLaunch s;
  if (auto it = o.site_launchers.find(site); it != o.site_launchers.end()) {
    std::istringstream words(it->second);
    for (std::string w; words >> w;) s.prefix.push_back(w);
  }
  if (auto it = o.site_configs.find(site); it != o.site_configs.end()) s.config = it->second;
  return s;
}

void Supervisor::move_failed(const std::string& why) {
  const std::string to = moving_ ? moving_->to : "?";
  tell(pcmd_, o_.job, "failed", to, fmt::format("move to site {} failed: {}", to, why));
  moving_.reset();
}

Supervisor::MoveStep Supervisor::checkpoint_and_stop(pid_t pid, const std::string& reason,
                                                     int* status, std::string* why,
                                                     std::int64_t* id,
                                                     Clock::time_point* checkpointed) {
  try {
    *id = pcmd_.request(req_checkpoint(o_.job, reason, true)).at("id").get<std::int64_t>();
  } catch (const std::exception& e) {
    *why = fmt::format("the checkpoint could not be asked ({})", e.what());
    return MoveStep::kStayed;
  }
  // The version must be committed before the run is stopped: until then the job goes on.
  const auto until = Clock::now() + std::chrono::seconds(o_.move_timeout_s);
  for (;;) {
    if (::waitpid(pid, status, WNOHANG) == pid) {
      *why = "the run ended before its checkpoint was written";
      return MoveStep::kEnded;
    }
    if (pending_signal()) {
      *why = "pcmctl run was interrupted";
      return MoveStep::kStayed;
    }
    const json s = job_status(pcmd_, o_.job);
    if (s.is_object() && s.value("state", "") != "running") {
      *why =
          fmt::format("the run became {} before its checkpoint was written", s.value("state", "?"));
      return MoveStep::kStayed;
    }
    if (s.is_object() && has_event(s, fmt::format("checkpoint {} written", *id))) break;
    if (Clock::now() > until) {
      *why = fmt::format("checkpoint {} was not written within {} s (--move-timeout-s)", *id,
                         o_.move_timeout_s);
      return MoveStep::kStayed;
    }
    pause_ms(20);
  }
  *checkpointed = Clock::now();
  try {
    pcmd_.request(ops::request(ops::JobMove{o_.job, "reshape_stop", std::nullopt, std::nullopt}));
  } catch (const std::exception& e) {
    *why = fmt::format("pcmd did not take the stop ({})", e.what());
    return MoveStep::kStayed;
  }
  end_group(pid, 3);
  return MoveStep::kMoved;
}

Supervisor::MoveStep Supervisor::stop_for_move(pid_t pid, int* status, std::string* why) {
  Moving& v = *moving_;
  std::int64_t id = 0;
  try {
    id = pcmd_.request(ops::request(ops::JobMove{o_.job, "stop", v.to, std::nullopt}))
             .at("id")
             .get<std::int64_t>();
  } catch (const std::exception& e) {
    *why = fmt::format("the stop could not be asked ({})", e.what());
    return MoveStep::kStayed;
  }
  // The run writes its last version and stops (pcmd's state "stopped"); until then it goes on,
  // and a move that fails withdraws the stop.
  const auto until = Clock::now() + std::chrono::seconds(o_.move_timeout_s);
  bool ended = false;
  for (;;) {
    if (!ended && ::waitpid(pid, status, WNOHANG) == pid) ended = true;
    if (pending_signal()) {
      *why = "pcmctl run was interrupted";
      return ended ? MoveStep::kEnded : MoveStep::kStayed;
    }
    const json s = job_status(pcmd_, o_.job);
    const std::string state = s.is_object() ? s.value("state", "") : "";
    if (state == "stopped") break;
    if (ended) {
      *why = fmt::format("the run ended before it stopped for the move (pcmd: {})",
                         state.empty() ? "no answer" : state);
      return MoveStep::kEnded;
    }
    if (s.is_object() && state != "running") {
      *why = fmt::format("the run became {} before it stopped", state);
      return MoveStep::kStayed;
    }
    if (Clock::now() > until) {
      *why = fmt::format("the run did not stop within {} s of stop {} (--move-timeout-s)",
                         o_.move_timeout_s, id);
      return MoveStep::kStayed;
    }
    pause_ms(20);
  }
  v.checkpointed = Clock::now();
  // Its processes leave by themselves; the launcher is ended only when they have not within the
  // finish grace (stuck in MPI_Finalize: a host lost after the last reconfiguration).
  ended = ended || wait_within(pid, o_.finish_grace_s, status);
  v.stopped = Clock::now();
  if (!ended) {
    event(pcmd_, o_.job,
          fmt::format("move to site {}: the job stopped, but its launcher was still there {} s "
                      "later: ended it",
                      v.to, o_.finish_grace_s));
    end_group(pid, 3);
  }
  v.launcher_ended = ended ? describe(*status) : "ended by pcmctl run";
  return MoveStep::kMoved;
}

Supervisor::MoveStep Supervisor::move(pid_t pid, const json& j, int* status) {
  const json& m = j.at("move");
  Moving mv;
  mv.from = site_;
  mv.to = m.value("site", "");
  mv.from_hosts = hosts_;
  mv.from_np = np_;
  mv.asked = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(m.value("seconds", 0.0)));
  moving_ = mv;
  Moving& v = *moving_;
  tell(pcmd_, o_.job, "begin", v.to,
       fmt::format("move to site {}: taken by pcmctl run (a last version, the run's end, a "
                   "relaunch there)",
                   v.to));
  std::string why;
  const MoveStep step = stop_for_move(pid, status, &why);
  if (step != MoveStep::kMoved) {
    move_failed(step == MoveStep::kEnded
                    ? why
                    : fmt::format("{}; the job goes on in {}", why,
                                  v.from.empty() ? "place" : "site " + v.from));
    return step;
  }
  v.stopped = Clock::now();
  detected_.reset();  // the next run is no recovery
  restart_ = true;
  site_ = v.to;
  if (!place()) {
    site_ = v.from;
    const std::string where = v.from.empty() ? "where it was" : "in site " + v.from;
    move_failed(fmt::format("site {} holds fewer processes than --min {} now: relaunching {}", v.to,
                            o_.min_np, where));
    give_up_ = !place();
    return MoveStep::kMoved;
  }
  event(pcmd_, o_.job,
        fmt::format("move to site {}: the run on {} stopped after its last version {:.2f} s "
                    "after the move was asked; its launcher {} {:.2f} s later; relaunching on {} "
                    "processes ({})",
                    v.to, v.from_hosts, seconds_between(v.asked, v.checkpointed), v.launcher_ended,
                    seconds_between(v.checkpointed, v.stopped), np_, hosts_));
  return MoveStep::kMoved;
}

void Supervisor::move_resumed(const json& j) {
  if (!moving_ || !iterating_again(j)) return;
  const Moving& v = *moving_;
  const auto now = Clock::now();
  tell(pcmd_, o_.job, "done", v.to,
       fmt::format("move to site {} done: iterating again {:.2f} s after it was asked "
                   "(last version and stop {:.2f} s, processes' end {:.2f} s, relaunch until "
                   "iterating {:.2f} s; "
                   "{} processes on {}{} then, {} on {} in site {} now)",
                   v.to, seconds_between(v.asked, now), seconds_between(v.asked, v.checkpointed),
                   seconds_between(v.checkpointed, v.stopped), seconds_between(v.stopped, now),
                   v.from_np, v.from_hosts, v.from.empty() ? "" : " in site " + v.from, np_, hosts_,
                   v.to));
  moving_.reset();
}

void Supervisor::move_lost() {
  const std::string from = moving_->from;
  move_failed(fmt::format("the run in site {} was lost before it iterated ({}); back to {}",
                          moving_->to, why_, from.empty() ? "every host" : "site " + from));
  site_ = from;
}

void add_run_site_options(CLI::App* sub, RunOptions& o) {
  sub->add_option("--site", o.site,
                  "with --on-inventory: the site whose hosts the job starts on (default: any)");
  sub->add_option("--site-launcher", o.site_launcher_specs,
                  "SITE=COMMAND: the job's launcher runs after COMMAND in that site (e.g. "
                  "b='ssh frontend-b'; its hosts are not probed); repeat per site")
      ->allow_extra_args(false);
  sub->add_option("--site-config", o.site_config_specs,
                  "SITE=FILE: PCM_CONFIG of the job's processes in that site (its relay's "
                  "address); repeat per site")
      ->allow_extra_args(false);
  sub->add_option("--move-timeout-s", o.move_timeout_s,
                  "a move gives up (the job goes on) when its checkpoint takes longer")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
}

void finish_run_site_options(RunOptions& o) {
  o.site_launchers = by_site(o.site_launcher_specs, "--site-launcher");
  o.site_configs = by_site(o.site_config_specs, "--site-config");
}

namespace {

// Waits (bounded by --start-wait, with a line every 10 s) while the job is not running: not
// registered yet (its pcmctl run is launching it) or between two runs (a recovery, a resumed
// stop). A finished job does not come back.
void wait_for_run(Connection& pcmd, const MoveOptions& o) {
  const auto start = SupervisorClock::now();
  auto next_line = start;
  for (;;) {
    const json j = job_status(pcmd, o.job);
    const std::string state = j.is_object() ? j.value("state", "") : "";
    const double waited = seconds_between(start, SupervisorClock::now());
    if (state == "running" || state == "finished" || waited >= o.start_wait_s) return;
    if (SupervisorClock::now() >= next_line) {
      std::cerr << fmt::format(
          "pcmctl: job '{}' {}: waiting for its run to register ({:.0f} s "
          "of --start-wait {:.0f} s)\n",
          o.job, state.empty() ? "is not known to pcmd yet" : "is " + state, waited,
          o.start_wait_s);
      next_line += std::chrono::seconds(10);
    }
    pause_ms(100);
  }
}

}  // namespace

int move_job(Connection& pcmd, const MoveOptions& o) {
  wait_for_run(pcmd, o);
  const json r = pcmd.request(ops::request(ops::JobMove{o.job, "ask", o.site, std::nullopt}));
  std::cout << r.at("text").get<std::string>() << "\n";
  if (o.wait_s <= 0) return 0;
  const auto until = SupervisorClock::now() + std::chrono::duration<double>(o.wait_s);
  while (SupervisorClock::now() < until) {
    pause_ms(100);
    const json j = job_status(pcmd, o.job);
    const json m = j.is_object() ? j.value("move", json(nullptr)) : json(nullptr);
    const std::string state = m.is_object() ? m.value("state", "") : "";
    if (state == "done" || state == "failed") {
      std::cout << m.value("text", state) << "\n";
      return state == "done" ? 0 : 1;
    }
  }
  std::cerr << "pcmctl: the move of job '" << o.job << "' did not end within " << o.wait_s
            << " s\n";
  return 1;
}

// ---- restart reshapes ------------------------------------------------------------------------

namespace {

// Ranks' hosts in order ("a","a","b") as hydra's and mpirun's host list ("a:2,b:1").
std::string host_slots(const std::vector<std::string>& by_rank) {
  std::string out;
  for (std::size_t i = 0; i < by_rank.size();) {
    std::size_t k = i;
    while (k < by_rank.size() && by_rank[k] == by_rank[i]) ++k;
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", by_rank[i], k - i);
    i = k;
  }
  return out;
}

}  // namespace

namespace {

// The job's pending command, left to pcmctl run's restart reshape (null: none). hung: it hung
// (the watchdog ends the run: no version is asked of it) or not.
const json* restart_pending(const json& j, bool hung) {
  if (!j.is_object()) return nullptr;
  const auto p = j.find("pending");
  if (p == j.end() || !p->is_object() || p->value("id", 0L) <= 0 ||
      !p->value("by_restart", false) || p->value("hung", false) != hung)
    return nullptr;
  return &*p;
}

}  // namespace

bool Supervisor::reshape_asked(const json& j) { return restart_pending(j, false) != nullptr; }

bool Supervisor::places_hosts() const { return o_.on_inventory || o_.launcher == "srun"; }

std::optional<Supervisor::Reshaping> Supervisor::reshaping_of(const json& c, std::string* why) {
  Reshaping r;
  r.command = c.value("id", 0L);
  r.what = c.value("text", "command");
  r.from_np = np_;
  r.asked = Clock::now();
  r.size = c.value("size", 0);
  r.hosts = c.value("hosts", std::vector<std::string>());
  if (r.size < 1 || (places_hosts() && r.hosts.size() != static_cast<std::size_t>(r.size))) {
    *why = fmt::format("the command's world ({} processes, {} hosts) cannot be launched", r.size,
                       r.hosts.size());
    return std::nullopt;
  }
  return r;
}

void Supervisor::place_reshaped() {
  detected_.reset();  // the next run is no recovery
  np_ = target_np_ = reshaping_->size;
  if (places_hosts()) hosts_ = host_slots(reshaping_->hosts);
  reshaped_command_ = reshaping_->command;
}

bool Supervisor::reshape_after_hang(const json& j) {
  if (!j.is_object() || j.value("state", "") != "failed") return false;
  const json* c = restart_pending(j, true);
  std::string why;
  if (!c || !(reshaping_ = reshaping_of(*c, &why))) return false;
  Reshaping& r = *reshaping_;
  r.checkpointed = r.stopped = r.asked;
  place_reshaped();
  event(pcmd_, o_.job,
        fmt::format("{} (command {}) hung and ended the run (PCM_RESHAPE=auto): carried out by a "
                    "restart reshape from {}, on {} processes{}",
                    r.what, r.command,
                    restart_ ? "the newest valid version" : "the start (no version)", np_,
                    hosts_.empty() ? "" : " (" + hosts_ + ")"));
  return true;
}

void Supervisor::reshape_failed(std::int64_t command, const std::string& why) {
  std::cerr << "pcmctl run: restart reshape of command " << command << ": " << why << "\n";
  try {
    pcmd_.request(
        ops::request(ops::JobMove{o_.job, "reshape_failed", std::nullopt, why.substr(0, 1900)}));
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: pcmd did not take the reshape's failure: " << e.what() << "\n";
  }
  reshaping_.reset();
}

Supervisor::MoveStep Supervisor::restart_reshape(pid_t pid, const json& j, int* status) {
  const json& c = j.at("pending");
  std::string why;
  reshaping_ = reshaping_of(c, &why);
  if (!reshaping_) {
    reshape_failed(c.value("id", 0L), why);
    return MoveStep::kStayed;
  }
  Reshaping& r = *reshaping_;
  event(pcmd_, o_.job,
        fmt::format("{} (command {}): a restart reshape: checkpoint, stop, "
                    "relaunch on {} processes",
                    r.what, r.command, r.size));
  std::int64_t id = 0;
  const MoveStep step = checkpoint_and_stop(pid, r.what + " by a restart reshape", status, &why,
                                            &id, &r.checkpointed);
  if (step != MoveStep::kMoved) {
    reshape_failed(r.command, step == MoveStep::kEnded ? why : why + "; the job goes on as it was");
    return step;
  }
  r.stopped = Clock::now();
  restart_ = true;
  place_reshaped();
  event(pcmd_, o_.job,
        fmt::format("{} (command {}): checkpoint {} written {:.2f} s after it was taken; the run "
                    "on {} processes stopped {:.2f} s later; relaunching on {}{}",
                    r.what, r.command, id, seconds_between(r.asked, r.checkpointed), r.from_np,
                    seconds_between(r.checkpointed, r.stopped), np_,
                    hosts_.empty() ? "" : " (" + hosts_ + ")"));
  return MoveStep::kMoved;
}

void Supervisor::reshape_resumed(const json& j) {
  if (!reshaping_ || !iterating_again(j)) return;
  const Reshaping& r = *reshaping_;
  event(pcmd_, o_.job,
        fmt::format("restart reshape of command {} done: iterating again {:.2f} s after it was "
                    "taken (checkpoint {:.2f} s, stop {:.2f} s, relaunch until iterating {:.2f} s; "
                    "{} processes then, {} now)",
                    r.command, seconds_between(r.asked, Clock::now()),
                    seconds_between(r.asked, r.checkpointed),
                    seconds_between(r.checkpointed, r.stopped),
                    seconds_between(r.stopped, Clock::now()), r.from_np, np_));
  reshaping_.reset();
}

}  // namespace pcm::ctl
