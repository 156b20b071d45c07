// jobs.cpp — pcmd's table of jobs: registration, history, the requests of a job's rank 0, and
// liveness (jobs.h). Its form on disk is in table_snapshot.cpp.
#include "jobs.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "distribution.h"
#include "error.h"
#include "pcm_types.h"
#include "profile.h"

namespace pcm::daemon {

using proto::json;

namespace {
// How long a report of a command in flight may follow the end of the old rank 0 (check_alive).
constexpr auto kRank0Grace = std::chrono::seconds(5);
// How long the relaunch of a restart reshape has to register after pcmctl run said it ends the
// run (MPI start-up and a restart's verification of the version on a loaded machine).
constexpr auto kReshapeRelaunch = std::chrono::seconds(120);

using Clock = std::chrono::steady_clock;

}  // namespace

const char* state_name(JobState state) {
  switch (state) {
    case JobState::kRunning:
      return "running";
    case JobState::kFinished:
      return "finished";
    case JobState::kFailed:
      return "failed";
    case JobState::kStopped:
      return "stopped";
  }
  return "unknown";
}

double Job::rate(std::chrono::steady_clock::time_point now) const {
  // Over the polls of the last 4 s (at least 2 s of them); a job that stopped reporting has none.
  const auto window = std::chrono::seconds(4);
  auto first = std::find_if(progress.begin(), progress.end(),
                            [&](const auto& p) { return now - p.first <= window; });
  if (first == progress.end() || now - progress.back().first > std::chrono::seconds(2)) return -1;
  const double span = std::chrono::duration<double>(progress.back().first - first->first).count();
  if (span < 2) return -1;
  return static_cast<double>(progress.back().second - first->second) / span;
}

void Job::put_events(json& j) const {
  json texts = json::array(), times = json::array();
  for (const JobEvent& e : events) {
    texts.push_back(e.text);
    times.push_back(e.time);
  }
  j["events"] = std::move(texts);
  j["event_times"] = std::move(times);
}

JobTable::JobTable(Changes& changes, std::shared_ptr<spdlog::logger> log, std::string my_host)
    : changes_(changes), log_(std::move(log)), my_host_(std::move(my_host)) {}

Job* JobTable::get(const std::string& name) {
  auto it = jobs_.find(name);
  return it == jobs_.end() ? nullptr : &it->second;
}

Job& JobTable::find(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) fail(PCM_ERR_REFUSED, "unknown job '{}'", name);
  return it->second;
}

void JobTable::fence(const std::string& name, long long run, bool writes, const char* op) const {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;  // the request's handler says so
  const Job& job = it->second;
  if (run != job.incarnation)
    fail(PCM_ERR_REFUSED,
         "job '{}': '{}' comes from a process of run {} of the job, and run {} is the job's now "
         "(a process that outlived its run)",
         name, op, run, job.incarnation);
  if (writes && job.state != JobState::kRunning)
    fail(PCM_ERR_REFUSED,
         "job '{}': run {} has {}; its processes may no longer write the job's data ('{}')", name,
         run, state_name(job.state), op);
}

// A job's latest event, also appended to its history (the last kMaxEvents).
void JobTable::note(Job& job, std::string event) {
  constexpr std::size_t kMaxEvents = 32;
  changes_.bump();
  // Events quote what processes and files said: kept as valid UTF-8 (status is JSON).
  event = proto::clean_text(event);
  if (job.events.size() == kMaxEvents) job.events.erase(job.events.begin());
  job.events.push_back(JobEvent{
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      event});
  job.last_event = std::move(event);
}

void JobTable::fail_job(Job& job, std::string why) {
  job.state = JobState::kFailed;
  if (job.restart_pending() && job.supervised) {
    // pcmctl run ended the run to carry the command out by a restart: the relaunch says so.
    why += fmt::format("; {} (command {}) is left to pcmctl run's restart reshape",
                       job.pending.command->describe(), job.pending.command->id);
  } else if (job.pending.command) {
    why += fmt::format("; {} (command {}) did not complete", job.pending.command->describe(),
                       job.pending.command->id);
    job.pending.command.reset();
  }
  note(job, std::move(why));
  log_->warn("job {}: {}", job.name, job.last_event);
}

// ---- liveness ------------------------------------------------------------------------------

// What the watch port saw: processes arriving, leaving normally, and lost.
bool JobTable::take_watch_events(Watcher& watcher) {
  constexpr std::size_t kMaxLost = 64;  // a job's status stays small whatever its size
  const auto now = std::chrono::steady_clock::now();
  bool failed = false;
  for (auto& e : watcher.take_events()) {
    auto it = jobs_.find(e.job);
    if (it == jobs_.end()) continue;
    Job& job = it->second;
    if (e.incarnation != job.incarnation) continue;  // a process of another run of the name
    auto key = std::make_pair(e.host, e.pid);
    if (e.kind == WatchEvent::Kind::kHello) {
      if (job.state != JobState::kRunning) continue;
      if (job.pending.command && job.pending.delivered) job.liveness.joining.insert(key);
      ++job.liveness.watched[key];
      job.liveness.ever_watched = true;
      job.liveness.unwatched_since.reset();
      continue;
    }
    // Only this job's own processes count: a process of an earlier job of the same name (a
    // restart took the name over) says nothing about this one.
    auto w = job.liveness.watched.find(key);
    if (w == job.liveness.watched.end()) continue;
    if (--w->second <= 0) job.liveness.watched.erase(w);
    if (job.liveness.watched.empty()) job.liveness.unwatched_since = now;
    if (e.kind == WatchEvent::Kind::kLost && job.state != JobState::kFinished &&
        job.state != JobState::kStopped && job.liveness.lost.size() < kMaxLost)
      job.liveness.lost.push_back(fmt::format("{} on {}", e.pid, e.host));
    if (job.state != JobState::kRunning) continue;
    if (job.stopping) continue;  // pcmctl run ends the run for a restart reshape
    // The first loss of a running job: its host may be gone (the losses that follow are the
    // launcher tearing the rest down, or pcmctl run ending it).
    if (e.kind == WatchEvent::Kind::kLost && lost_hosts_.size() < 64) lost_hosts_.push_back(e.host);
    if (e.kind == WatchEvent::Kind::kLost && job.liveness.abandoned.erase(key)) continue;
    if (e.kind == WatchEvent::Kind::kLost && job.pending.command && job.pending.delivered &&
        job.liveness.joining.count(key)) {
      if (job.liveness.lost_joining.empty()) {
        job.liveness.lost_joining = fmt::format("{} on {}", e.pid, e.host);
        note(job, fmt::format("new process {} of command {} lost ({}): the old world gives the "
                              "command up",
                              job.liveness.lost_joining, job.pending.command->id, e.why));
      }
      continue;
    }
    if (e.kind == WatchEvent::Kind::kLost) {
      fail_job(job, fmt::format("process {} on host {} was lost (killed, or its host is gone: {})",
                                e.pid, e.host, e.why));
      failed = true;
    }
  }
  return failed;
}

// A job whose rank 0 ran on this host and is gone without saying "finished" has failed (killed,
// crashed, or aborted by hydra when a spawned process died); so has a job whose processes all
// left the watch port without it finishing. Jobs on several hosts are watched through the watch
// port (take_watch_events, called first).
bool JobTable::check_alive(Watcher& watcher) {
  bool failed = false;
  const auto now = std::chrono::steady_clock::now();
  for (auto& [name, job] : jobs_) {
    if (job.state != JobState::kRunning) continue;
    // A run pcmctl run ends for a restart reshape: its relaunch takes the name over, in time.
    if (job.stopping) {
      if (now - job.stopping->since > kReshapeRelaunch) {
        fail_job(job, fmt::format("the relaunch of the restart reshape of command {} did not "
                                  "register within {} s",
                                  job.stopping->command, kReshapeRelaunch.count()));
        failed = true;
      }
      continue;
    }
    // Every process said bye (or was lost) and rank 0 never said "finished": allow the
    // "finished" request, which travels on another connection, a few seconds to arrive.
    if (job.liveness.ever_watched && job.liveness.watched.empty() && job.liveness.unwatched_since &&
        now - *job.liveness.unwatched_since > std::chrono::seconds(5)) {
      fail_job(job, "every process left without the job finishing");
      failed = true;
      continue;
    }
    if (!rank0_gone(job)) {
      job.liveness.rank0_missing_since.reset();
      continue;
    }
    // A split whose old world leaves the job: its rank 0 may end before the new rank 0's report,
    // which names the new pid, has arrived (measured: 5 ms apart on a loaded machine). While a
    // delivered command is in flight, that report has kRank0Grace to come.
    if (job.pending.command && job.pending.delivered) {
      if (!job.liveness.rank0_missing_since) job.liveness.rank0_missing_since = now;
      if (now - *job.liveness.rank0_missing_since < kRank0Grace) continue;
    }
    // Losses the watch port reports name the host: let them come first.
    take_watch_events(watcher);
    failed = true;
    if (job.state != JobState::kRunning) continue;
    fail_job(job, fmt::format("rank 0 (pid {}) ended without finishing", job.liveness.rank0_pid));
  }
  return failed;
}

bool JobTable::rank0_gone(const Job& job) const {
  if (job.liveness.rank0_pid <= 0) return false;
  if (job.liveness.rank0_host != my_host_ && job.liveness.rank0_host != "localhost") return false;
  if (::kill(static_cast<pid_t>(job.liveness.rank0_pid), 0) != 0) return errno == ESRCH;
  // A zombie is gone too (where nothing reaps orphans at once, as in some containers).
  std::ifstream stat("/proc/" + std::to_string(job.liveness.rank0_pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// ---- registration --------------------------------------------------------------------------

// The same registration sent again (its reply was lost with a pcmd that died): the same answer.
const Job* JobTable::registered(const ops::Register& r) const {
  if (!r.nonce || r.nonce->empty()) return nullptr;
  for (const auto& [name, job] : jobs_)
    if (job.nonce == *r.nonce && job.state == JobState::kRunning) return &job;
  return nullptr;
}

// The name a registration takes; refused while a running job holds it.
std::string JobTable::registration_name(const ops::Register& r) {
  if (r.job && !r.job->empty()) {
    const std::string& wanted = *r.job;
    if (!proto::valid_name(wanted)) fail(PCM_ERR_ARG, "invalid job name '{}'", wanted);
    auto it = jobs_.find(wanted);
    // A job whose rank 0 died here has failed, whether pcmd has looked yet or not.
    if (it != jobs_.end() && it->second.state == JobState::kRunning && !it->second.stopping &&
        rank0_gone(it->second))
      fail_job(it->second, fmt::format("rank 0 (pid {}) ended without finishing",
                                       it->second.liveness.rank0_pid));
    // A restart may take over a name whose job is gone: finished, failed, or silent for 10 s
    // (its rank 0 ran where pcmd cannot watch it).
    bool silent = it != jobs_.end() && std::chrono::steady_clock::now() - it->second.last_seen >
                                           std::chrono::seconds(10);
    // The relaunch of a restart reshape takes over the run pcmctl run ended for it.
    const bool reshaped = it != jobs_.end() && it->second.stopping && r.reshaped_command;
    if (it != jobs_.end() && it->second.state == JobState::kRunning && !(r.restart && silent) &&
        !reshaped)
      fail(PCM_ERR_REFUSED,
           "job name '{}' is in use by a running job (if it has just died, pcmd notices within "
           "seconds: start again then; `pcmctl status {}` shows its state; or use another PCM_JOB)",
           wanted, wanted);
    return wanted;
  }
  std::string name;
  do name = "job-" + std::to_string(next_job_++);
  while (jobs_.count(name));
  return name;
}

json JobTable::register_job(const ops::Register& r, const std::string& name,
                            std::optional<Manifest> restarted_from) {
  Job job;
  job.name = name;
  if (restarted_from) {
    job.layout = restarted_from->layout;
    job.restarted_from = std::move(restarted_from);
  }
  job.state = JobState::kRunning;
  job.incarnation = next_incarnation_++;
  job.size = r.size;
  job.hosts = r.hosts;
  job.executable = r.executable.value_or("");
  job.liveness.rank0_pid = r.pid.value_or(0);
  job.liveness.rank0_host = job.hosts[0];
  if (r.placement && !r.placement->empty()) {
    job.placement = parse_placement(*r.placement);
    if (!job.placement)
      fail(PCM_ERR_REFUSED, "unknown placement '{}' (PCM_PLACEMENT): spread or concentrate",
           *r.placement);
  }
  job.nonce = r.nonce.value_or("");
  job.reshape = r.reshape.value_or("spawn");
  job.supervised = r.supervised;
  job.launcher = r.launcher.value_or("");
  // A restart, or a new run of a job whose last run failed (pcmctl run relaunching from the
  // start), goes on with the history of the run it replaces (its failure, a recovery).
  if (auto old = jobs_.find(name);
      old != jobs_.end() && (restarted_from || old->second.state == JobState::kFailed ||
                             old->second.state == JobState::kStopped)) {
    job.events = old->second.events;
    job.move = old->second.move;
  }
  forget_ended_jobs();
  note(job, "started");
  if (auto old = jobs_.find(name); r.reshaped_command && old != jobs_.end())
    reshaped_by_restart(job, old->second, *r.reshaped_command);
  job.last_seen = std::chrono::steady_clock::now();
  jobs_[name] = std::move(job);
  json reply = registration_reply(jobs_[name]);
  if (const auto& m = jobs_[name].restarted_from)
    note(jobs_[name], fmt::format("restarted from iteration {} ({} processes then, {} now)",
                                  m->iteration, m->nprocs, r.size));
  log_->info("job {} registered with {} processes{}", name, r.size,
             reply.contains("restart") ? " (restart)" : "");
  return reply;
}

// A process's watchdog ended a reconfiguration that hung (JobEvent's stuck_command): with
// PCM_RESHAPE=auto and pcmctl run supervising, the run's end leaves that command to a restart
// reshape of pcmctl run's (fail_job keeps it), from the newest version.
void JobTable::stuck(Job& job, std::int64_t command) {
  if (job.reshape != "auto" || !job.supervised || !job.pending.command ||
      job.pending.command->id != command || job.pending.by_restart)
    return;
  job.pending.by_restart = true;
  job.pending.hung = true;
  note(job, fmt::format("{} hung; PCM_RESHAPE=auto: pcmctl run carries it out by a restart "
                        "reshape from the newest version",
                        job.pending.command->describe()));
}

// The relaunch of a restart reshape (pcmctl run) registers: the command the old run had pending is
// done, and the job's count of reconfigurations goes on from the old run's.
void JobTable::reshaped_by_restart(Job& job, const Job& old, std::int64_t command) {
  job.reconfigurations = old.reconfigurations + 1;
  job.last_done_command = std::max(old.last_done_command, command);
  const std::string what = old.pending.command && old.pending.command->id == command
                               ? old.pending.command->describe()
                               : fmt::format("command {}", command);
  note(job, fmt::format("{} done by a restart reshape ({} processes then, {} now)", what, old.size,
                        job.size));
}

// pcmd remembers the last kMaxEndedJobs jobs that finished or failed (for pcmctl status), not
// every job it ever served: the table, written after every change, stays small.
void JobTable::forget_ended_jobs() {
  constexpr std::size_t kMaxEndedJobs = 64;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> ended;
  for (const auto& [name, job] : jobs_)
    if (job.state != JobState::kRunning) ended.emplace_back(job.last_seen, name);
  if (ended.size() <= kMaxEndedJobs) return;
  std::sort(ended.begin(), ended.end());
  for (std::size_t i = 0; i + kMaxEndedJobs < ended.size(); ++i) jobs_.erase(ended[i].second);
  changes_.bump();
}

json JobTable::registration_reply(const Job& job) const {
  json reply{{"ok", true}, {"job", job.name}, {"incarnation", job.incarnation}};
  if (const auto& m = job.restarted_from)
    reply["restart"] = json{{"iteration", m->iteration}, {"nprocs", m->nprocs}};
  return reply;
}

// ---- rank 0's requests ---------------------------------------------------------------------

json JobTable::poll(const ops::Poll& r, LogLimiter& refusals) {
  Job& job = find(r.job);
  job.iteration = r.iteration;
  {
    const auto now = std::chrono::steady_clock::now();
    if (job.progress.empty() || job.progress.back().second != job.iteration)
      job.progress.emplace_back(now, job.iteration);
    while (!job.progress.empty() && now - job.progress.front().first > std::chrono::seconds(30))
      job.progress.pop_front();
  }
  job.last_seen = std::chrono::steady_clock::now();
  if (r.profile) {
    // A bad profile costs the job its profile, never its commands.
    try {
      job.profile = pcm::common::JobProfile::from_json(*r.profile, job.size).to_json();
      job.profile_at = job.last_seen;
    } catch (const Error& e) {
      if (refusals.allow(*log_)) log_->warn("job {}: profile refused: {}", job.name, e.what());
    }
  }
  if (r.checkpoint_mtbf_s)
    job.checkpoint_schedule = {
        {"cost_s", r.checkpoint_cost_s ? json(*r.checkpoint_cost_s) : json()},
        {"interval_s", r.checkpoint_interval_s ? json(*r.checkpoint_interval_s) : json()},
        {"mtbf_s", *r.checkpoint_mtbf_s}};
  json reply{{"ok", true}, {"command", nullptr}};
  // A job that reshapes by restart is never handed a command: pcmctl run carries it out.
  if (job.pending.command && !job.restart_pending()) {
    reply["command"] = job.pending.command->to_json();
    if (!job.pending.delivered)
      log_->info("job {}: command {} delivered", job.name, job.pending.command->id);
    job.pending.delivered = true;
  }
  if (job.checkpoint_wanted) {
    reply["checkpoint"] = job.checkpoint_wanted->id;
    if (job.checkpoint_wanted->at_once) reply["checkpoint_at_once"] = true;
    if (job.checkpoint_wanted->stop) {
      reply["stop"] = true;
      reply["stop_why"] = job.checkpoint_wanted->why.substr(0, 500);
    }
  }
  if (!job.liveness.lost_joining.empty()) reply["lost"] = job.liveness.lost_joining;
  return reply;
}

JobTable::Outcome JobTable::reconfigured(
    const ops::Reconfigured& r,
    const std::function<void(const std::string&, std::string, std::int64_t)>& keep_layout) {
  Job& job = find(r.job);
  // Sent again after a pcmd restart, once it had been taken: nothing to do twice.
  if (r.retry && r.command <= job.last_done_command) return Outcome::kAgain;
  if (!job.pending.command || job.pending.command->id != r.command)
    fail(PCM_ERR_REFUSED, "job '{}' has no pending command {}", job.name, r.command);
  job.last_done_command = r.command;
  const std::string lost_new = std::exchange(job.liveness.lost_joining, std::string());
  if (r.success) {
    job.liveness.joining.clear();
    if (!lost_new.empty()) {  // the new world goes on without one of its processes: it cannot
      job.pending.command.reset();
      fail_job(job, fmt::format("process {} of the new world was lost", lost_new));
      return Outcome::kFailed;
    }
    job.hosts = r.hosts;
    job.size = r.size;
    job.reconfigurations++;
    job.liveness.rank0_pid = r.pid.value_or(0);
    job.liveness.rank0_host = job.hosts[0];
    job.liveness.rank0_missing_since.reset();
    note(job, job.pending.command->describe() +
                  (r.respawned ? " done by respawning the whole world (its parked processes left)"
                               : " done"));
    if (r.layout) {
      // Validated like any map from the network, then kept where a restart will look for it.
      Distribution d = Distribution::from_json(*r.layout);
      if (d.size() != r.size)
        fail(PCM_ERR_ARG, "the layout describes {} ranks, not {}", d.size(), r.size);
      keep_layout(job.name, proto::encode(d.to_json()), job.pending.command->id);
      job.layout_command = job.pending.command->id;
      job.layout = d.to_json();
    }
  } else {
    // PCM_RESHAPE=auto under pcmctl run: the job went on as it was, and pcmctl run carries the
    // same command out by a restart (pending again, never handed to rank 0 again).
    job.pending.by_restart = job.reshape == "auto" && job.supervised && !job.pending.by_restart;
    job.pending.delivered = false;
    note(job, job.pending.by_restart
                  ? fmt::format("{} failed live ({}); PCM_RESHAPE=auto: left to pcmctl run's "
                                "restart reshape",
                                job.pending.command->describe(), r.error.value_or("?"))
                  : fmt::format("{} failed: {}", job.pending.command->describe(),
                                r.error.value_or("?")));
    job.liveness.abandoned.insert(job.liveness.joining.begin(), job.liveness.joining.end());
    job.liveness.joining.clear();
  }
  job.iteration = r.iteration.value_or(job.iteration);
  job.last_seen = std::chrono::steady_clock::now();
  log_->info("job {}: {}", job.name, job.last_event);
  if (job.pending.by_restart) return Outcome::kDone;  // still pending, for pcmctl run
  if (!r.success && job.pending.drain) {
    job.drain_stalled = job.last_event;
    note(job, "drain stopped for this job: " + job.drain_stalled);
  }
  job.pending.command.reset();
  return r.success ? Outcome::kDone : Outcome::kFailed;
}

void JobTable::finished(const ops::Finished& r) {
  Job& job = find(r.job);
  job.iteration = r.iteration.value_or(job.iteration);
  if (r.error && job.stopping) {
    // pcmctl run ends this run itself for a restart reshape (its version is written): the ranks
    // that outlive the first killed one see MPI fail. That is the run's end, not the job's.
    log_->info("job {}: a process of the run pcmctl run is ending saw MPI fail ({}): expected",
               job.name, proto::printable(*r.error).substr(0, 200));
    return;
  }
  if (r.error) {
    fail_job(job, "ended after an MPI failure: " + proto::printable(*r.error));
    return;
  }
  job.state = r.stopped ? JobState::kStopped : JobState::kFinished;
  job.last_seen = std::chrono::steady_clock::now();
  std::string text = "finished";
  if (r.stopped)
    text =
        fmt::format("stopped at iteration {} ({}): {}", job.iteration, proto::printable(*r.stopped),
                    r.stopped_version ? fmt::format("the last version is of iteration {}; "
                                                    "PCM_RESTART=1 resumes from it",
                                                    *r.stopped_version)
                                      : std::string("no last version written; PCM_RESTART=1 "
                                                    "resumes from the newest valid one"));
  if (job.pending.command) {
    note(job, fmt::format("{} before command {} ran", text, job.pending.command->id));
    job.pending.command.reset();
  } else {
    note(job, text);
  }
  if (r.stopped) job.checkpoint_wanted.reset();
  log_->info("job {} {}", job.name,
             r.stopped ? text : fmt::format("finished at iteration {}", job.iteration));
}

json JobTable::profile(const ops::Profile& r) {
  const Job& job = find(r.job);
  json reply{{"ok", true}, {"job", job.name}, {"profile", job.profile}};
  if (!job.profile.is_null())
    reply["age_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - job.profile_at).count();
  return reply;
}

json JobTable::want_checkpoint(Job& job, std::string why, bool at_once, bool stop, bool by_move) {
  if (job.state != JobState::kRunning)
    fail(PCM_ERR_REFUSED, "job '{}' is {}: no checkpoint to ask of it", job.name,
         state_name(job.state));
  // pcmctl run ends this run itself for a restart reshape (its version is written): the signal
  // that ends it is not a stop, and the processes that ask take the signal's default action
  // (libpcm). A move stops its run through PCM: a stop asked meanwhile is that one.
  if (stop && job.stopping)
    fail(PCM_ERR_REFUSED, "job '{}': pcmctl run is ending this run for a restart reshape: no stop",
         job.name);
  const auto now = std::chrono::steady_clock::now();
  if (!job.checkpoint_wanted) {
    const std::int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    job.checkpoint_wanted = Job::CheckpointWanted{std::max(ms, last_checkpoint_id_ + 1), "", now};
    last_checkpoint_id_ = job.checkpoint_wanted->id;
  }
  // A move's stop merged into a stop asked before is not withdrawn with the move.
  if (by_move && !job.checkpoint_wanted->stop) job.checkpoint_wanted->by_move = true;
  if (!job.checkpoint_wanted->by_move || by_move) job.checkpoint_wanted->why = std::move(why);
  job.checkpoint_wanted->at_once = job.checkpoint_wanted->at_once || at_once || stop;
  job.checkpoint_wanted->stop = job.checkpoint_wanted->stop || stop;
  const std::string text =
      fmt::format("{} {} asked: {}", job.checkpoint_wanted->stop ? "stop" : "checkpoint",
                  job.checkpoint_wanted->id, job.checkpoint_wanted->why);
  note(job, text);
  log_->info("job {}: {}", job.name, text);
  return json{{"ok", true}, {"id", job.checkpoint_wanted->id}, {"text", text}};
}

void JobTable::checkpoint_written(Job& job) {
  // A stop stays asked until the job has stopped (its last version is the one written then).
  if (!job.checkpoint_wanted || job.checkpoint_wanted->stop) return;
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job.checkpoint_wanted->since)
          .count();
  note(job, fmt::format("checkpoint {} written {:.1f} s after it was asked ({})",
                        job.checkpoint_wanted->id, waited, job.checkpoint_wanted->why));
  job.checkpoint_wanted.reset();
}

}  // namespace pcm::daemon
