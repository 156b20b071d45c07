// slurm_growth.cpp — second allocations for commands that do not fit, and extra allocations
// given back (slurm_growth.h).
#include "slurm/slurm_growth.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <regex>

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;

namespace {

constexpr std::chrono::seconds kGiveBackPeriod{2};
constexpr std::chrono::milliseconds kStatePeriod{250};  // a submitted allocation's state, read
// How often a second allocation's batch script asks whether pcmd's job still runs.
constexpr int kWatchPeriodS = 3;
constexpr std::chrono::seconds kWatchPeriod{3};  // how often Slurm is read (slurm_watch.h)

// The job id `sbatch --parsable` prints ("N" or "N;CLUSTER").
std::string allocation_id(const std::string& output) {
  static const std::regex id("^([0-9]+)(;|\\s|$)");
  std::smatch m;
  return std::regex_search(output, m, id) ? m[1].str() : std::string();
}

std::string seconds_since(SlurmGrowth::Clock::time_point t) {
  return fmt::format("{:.1f} s",
                     std::chrono::duration<double>(SlurmGrowth::Clock::now() - t).count());
}

}  // namespace

SlurmGrowth::SlurmGrowth(SlurmAllocation parent, std::chrono::seconds timeout, std::string my_host,
                         bool watch_queue, JobTable& jobs, Inventory& inventory, CommandDesk& desk,
                         Changes& changes, std::shared_ptr<spdlog::logger> log)
    : parent_(std::move(parent)),
      timeout_(timeout),
      my_host_(std::move(my_host)),
      jobs_(jobs),
      inventory_(inventory),
      desk_(desk),
      changes_(changes),
      log_(std::move(log)),
      watch_queue_(watch_queue),
      watch_(parent_.job_id, watch_queue, kWatchPeriod) {
  for (const auto& h : inventory_.hosts())
    if (!h.slurm_job.empty() && h.slurm_job != parent_.job_id)
      extras_[h.slurm_job].push_back(h.name);
}

SlurmGrowth::~SlurmGrowth() {
  for (auto& r : requests_) {
    r->sbatch.poll();
    r->sbatch.stop();
    const std::string id = r->slurm_job.empty() ? allocation_id(r->sbatch.output()) : r->slurm_job;
    if (!id.empty()) run_command({"scancel", id}, kSlurmTimeout);
  }
  // Nothing held that no running job uses (with the jobs finished: every extra allocation). Their
  // batch scripts would end them with pcmd's job anyway; pcmd may stop long before that.
  for (const auto& [id, hosts] : extras_) {
    if (std::any_of(hosts.begin(), hosts.end(),
                    [&](const std::string& h) { return inventory_.find(h) && in_use(h); }))
      continue;
    const CommandResult c = run_command({"scancel", id}, kSlurmTimeout);
    log_->info("pcmd stops: Slurm job {} ({}) {}", id, fmt::join(hosts, ", "),
               c.exit_code == 0 ? "given back" : "not given back: " + one_line(c.output));
  }
}

std::string SlurmGrowth::watcher_script(const std::string& parent) {
  // Ends when squeue says the job has ended (a state other than these, nothing, or an id Slurm
  // has forgotten); a squeue that fails otherwise (the controller away) is asked again.
  return fmt::format(
      "while :; do s=$(squeue -h -j {0} -o %T 2>&1) && case $s in "
      "PENDING|RUNNING|SUSPENDED|CONFIGURING|RESIZING) ;; *) break ;; esac; "
      "case $s in *'Invalid job id'*) break ;; esac; sleep {1}; done",
      parent, kWatchPeriodS);
}

std::vector<std::string> SlurmGrowth::sbatch_argv(int missing) const {
  std::vector<std::string> argv{"sbatch",
                                "--parsable",
                                "--job-name=" + grow_name(),
                                fmt::format("--ntasks={}", missing),
                                "--output=/dev/null",
                                "--chdir=/"};
  std::vector<std::string> held;  // onto other nodes than those already held
  for (const auto& h : inventory_.hosts())
    if (!h.slurm_job.empty()) held.push_back(h.name);
  if (!held.empty()) argv.push_back(fmt::format("--exclude={}", fmt::join(held, ",")));
  if (!parent_.partition.empty()) argv.push_back("--partition=" + parent_.partition);
  if (!parent_.account.empty()) argv.push_back("--account=" + parent_.account);
  if (!parent_.qos.empty()) argv.push_back("--qos=" + parent_.qos);
  if (parent_.end_time) {
    const double left = std::difftime(*parent_.end_time, std::time(nullptr));
    argv.push_back(
        fmt::format("--time={}", std::max(1L, static_cast<long>(std::floor(left / 60)))));
  }
  argv.push_back("--wrap=" + watcher_script(parent_.job_id));
  return argv;
}

json SlurmGrowth::grow(Job& job, const proto::Command& c, const CommandDesk::Where& where,
                       CommandDesk::From from, int missing) {
  // A step belongs to one Slurm job: a world srun launches cannot span a second allocation.
  if (job.launcher == "srun") {
    const std::string why = fmt::format(
        "{} needs {} more slot(s), and job '{}' is launched by srun, whose world (a step of "
        "Slurm job {}) cannot span a second allocation: free slots in this allocation, or launch "
        "with mpiexec (hydra, mpirun), whose worlds can",
        c.describe(), missing, job.name, parent_.job_id);
    jobs_.note(job, why);
    fail(PCM_ERR_REFUSED, "{}", why);
  }
  if (parent_.end_time && std::difftime(*parent_.end_time, std::time(nullptr)) < 60)
    fail(PCM_ERR_REFUSED,
         "{} needs {} more slot(s) and Slurm job {} ends within a minute: no second allocation",
         c.describe(), missing, parent_.job_id);
  auto r = std::make_unique<Request>();
  r->job = job.name;
  r->command = c;
  r->where = where;
  r->from = from;
  r->text = fmt::format("{} ({} more slot(s))", c.describe(), missing);
  r->started = Clock::now();
  r->deadline = r->started + timeout_;
  const std::vector<std::string> argv = sbatch_argv(missing);
  if (!r->sbatch.start(argv, environment_outside_slurm()))
    fail(PCM_ERR_REFUSED,
         "{} needs {} more slot(s) and sbatch cannot be run (not on PATH?): install Slurm's "
         "client commands (Debian: slurm-client)",
         c.describe(), missing);
  job.allocating = Job::Allocating{r->text, "", r->started};
  jobs_.note(job, fmt::format("{} waits for a Slurm allocation: {}", r->text,
                              fmt::join(argv.begin(), argv.end() - 1, " ")));
  log_->info("job {}: {}", job.name, job.last_event);
  requests_.push_back(std::move(r));
  return json{{"ok", true},
              {"allocating", true},
              {"command", 0},
              {"size", job.size},
              {"hosts", json::array()},
              {"text", fmt::format("{}: waits for a Slurm allocation (at most {} s)",
                                   requests_.back()->text, timeout_.count())}};
}

void SlurmGrowth::before_queue(const Job& job, proto::Command& c) {
  if (c.respawn || c.kind == proto::Command::Kind::kSplit ||
      c.hosts.size() != static_cast<std::size_t>(c.size))
    return;
  for (const auto& h : job.hosts) {
    if (std::find(c.hosts.begin(), c.hosts.end(), h) != c.hosts.end() || !releasable(h)) continue;
    if (inventory_.used_slots(h, &job) > 0) continue;  // another job stays there
    c.respawn = true;
    log_->info(
        "job {}: {} leaves host {}, which goes back to Slurm: carried out by respawning "
        "the world, so that nothing of the job stays there",
        job.name, c.describe(), h);
    return;
  }
}

bool SlurmGrowth::releasable(const std::string& host) const {
  for (const auto& [id, hosts] : extras_)
    if (std::find(hosts.begin(), hosts.end(), host) != hosts.end()) return true;
  const bool mine = std::any_of(parent_.hosts.begin(), parent_.hosts.end(),
                                [&](const HostSlots& h) { return h.name == host; });
  return mine && host != parent_.batch_host && host != my_host_;
}

SlurmGrowth::Stage SlurmGrowth::look_at(Request& r, std::string* why) {
  if (r.slurm_job.empty()) {
    if (r.sbatch.poll()) return Stage::kWaiting;
    r.slurm_job = allocation_id(r.sbatch.output());
    if (r.sbatch.exit_code() != 0 || r.slurm_job.empty()) {
      const std::string& out = r.sbatch.output();
      *why = fmt::format("sbatch exited {}: {}", r.sbatch.exit_code().value_or(-1),
                         one_line(out.empty() ? std::string("no output") : out));
      return Stage::kRefused;
    }
    if (Job* job = jobs_.get(r.job); job && job->allocating)
      job->allocating->slurm_job = r.slurm_job;
  }
  if (r.running) return r.show.poll() ? Stage::kWaiting : Stage::kGranted;
  if (r.state.poll()) return Stage::kWaiting;
  if (r.state.exit_code()) {  // a reading has ended: "STATE REASON"
    const std::string said = one_line(r.state.output());
    const std::string state = said.substr(0, said.find(' '));
    if (state == "RUNNING") {
      // Granted: its hosts and CPUs are read (scontrol show job -d) before it is used.
      r.running = true;
      r.show.start({"scontrol", "show", "job", "-o", "-d", r.slurm_job},
                   environment_outside_slurm());
      return Stage::kWaiting;
    }
    if (!state.empty() && state != "PENDING" && state != "CONFIGURING" &&
        said.find("error") == std::string::npos) {
      *why = fmt::format("Slurm job {} is {}", r.slurm_job, said);
      return Stage::kRefused;
    }
    *why = said;  // what the last reading said, should the bound come
  }
  if (Clock::now() >= r.next_state) {
    r.next_state = Clock::now() + kStatePeriod;
    r.state.start({"squeue", "-h", "-j", r.slurm_job, "-o", "%T %r"}, environment_outside_slurm());
  }
  return Stage::kWaiting;
}

void SlurmGrowth::tick() {
  background_.poll();
  for (std::size_t i = 0; i < requests_.size();) {
    Request& r = *requests_[i];
    std::string why;
    const Stage stage = look_at(r, &why);
    Job* job = jobs_.get(r.job);
    const bool job_gone = !job || job->state != JobState::kRunning;
    if (stage == Stage::kWaiting && !job_gone && Clock::now() < r.deadline) {
      ++i;
      continue;
    }
    // Out of the list before it is finished: the command placed on a grant too small for it
    // asks for another allocation (grow), which adds a request to the list.
    const std::unique_ptr<Request> done = std::move(requests_[i]);
    requests_.erase(requests_.begin() + static_cast<std::ptrdiff_t>(i));
    if (stage == Stage::kGranted && !job_gone) {
      finish(r);
      continue;
    }
    r.sbatch.stop();
    r.state.stop();
    r.show.stop();
    if (stage == Stage::kWaiting)
      why = job_gone ? "the job ended"
                     : fmt::format("Slurm job {} did not run within {} s{}",
                                   r.slurm_job.empty() ? "(not submitted)" : r.slurm_job,
                                   timeout_.count(), why.empty() ? "" : " (" + why + ")");
    refuse(r, why);
  }
  note_occupied();
  if (Clock::now() >= next_check_) {
    next_check_ = Clock::now() + kGiveBackPeriod;
    give_back_unused();
  }
  look_at_slurm();
}

void SlurmGrowth::note_occupied() {
  // Every tick, and the hosts of a command in flight too: a job that stays on a node for less
  // than kGiveBackPeriod (a migration there and back) has still left it.
  const auto note = [&](const std::string& h, const std::string& name) {
    if (!h.empty() && releasable(h)) occupied_[h] = name;
  };
  for (const auto& [name, job] : jobs_.all()) {
    if (job.state != JobState::kRunning) continue;
    for (const auto& h : job.hosts) note(h, name);
    if (job.pending.command) {
      note(job.pending.command->host, name);
      for (const auto& h : job.pending.command->hosts) note(h, name);
    }
  }
}

std::optional<PolicyQueue> SlurmGrowth::queue() const {
  if (!parent_.end_time) return queue_;
  PolicyQueue q = queue_.value_or(PolicyQueue{});
  q.seconds_left = std::max(0.0, std::difftime(*parent_.end_time, std::time(nullptr)));
  return q;
}

void SlurmGrowth::finish(Request& r) {
  Job* job = jobs_.get(r.job);
  if (!job || job->state != JobState::kRunning) {
    refuse(r, "the job ended");
    return;
  }
  SlurmAllocation a;
  try {
    if (r.show.exit_code() != 0)
      fail(PCM_ERR_ARG, "{}",
           r.show.output().empty() ? std::string("no output") : one_line(r.show.output()));
    a = parse_scontrol_job(r.show.output());
  } catch (const Error& e) {
    refuse(r, fmt::format("Slurm granted job {}, but scontrol show job says: {}", r.slurm_job,
                          e.what()));
    return;
  }
  std::vector<std::string> added;
  for (const HostSlots& h : a.hosts) {
    if (inventory_.find(h.name)) {
      log_->warn("Slurm job {}: host {} is in the inventory already; not used", a.job_id, h.name);
      continue;
    }
    inventory_.add(h.name, h.slots, "default", std::nullopt);
    inventory_.find(h.name)->slurm_job = a.job_id;
    added.push_back(fmt::format("{}:{}", h.name, h.slots));
  }
  grown_for_[a.job_id] = r.job;
  for (const HostSlots& h : a.hosts)
    if (inventory_.find(h.name) && inventory_.find(h.name)->slurm_job == a.job_id)
      extras_[a.job_id].push_back(h.name);
  changes_.bump();
  job->allocating.reset();
  const std::string waited = seconds_since(r.started);
  try {
    const json reply = desk_.request(*job, r.command, r.where, r.from);
    jobs_.note(
        *job,
        reply.value("allocating", false)
            ? fmt::format("Slurm granted job {} ({}) after {}: not enough, {}", a.job_id,
                          fmt::join(added, ", "), waited, reply.value("text", std::string("?")))
            : fmt::format("Slurm granted job {} ({}) after {}: {} queued (command {})", a.job_id,
                          fmt::join(added, ", "), waited, reply.value("text", std::string("?")),
                          reply.value("command", 0)));
  } catch (const Error& e) {
    jobs_.note(*job, fmt::format("Slurm granted job {} after {}, but {} was refused: {}; it goes "
                                 "back",
                                 a.job_id, waited, r.text, e.what()));
    grown_for_.erase(a.job_id);
    give_back(a.job_id, job->name);
  }
  log_->info("job {}: {}", job->name, job->last_event);
}

void SlurmGrowth::refuse(Request& r, const std::string& why) {
  std::string cancelled;
  const std::string id = r.slurm_job.empty() ? allocation_id(r.sbatch.output()) : r.slurm_job;
  if (!id.empty()) {
    // A grant that came too late, or a request still pending: never left behind (said again
    // should scancel fail).
    cancelled = fmt::format("; Slurm job {} cancelled", id);
    background_.run({"scancel", id}, kSlurmTimeout, [this, id](const CommandResult& c) {
      if (c.exit_code != 0 || c.timed_out)
        log_->warn("scancel {} failed: {}", id, c.timed_out ? "no answer" : one_line(c.output));
    });
  }
  Job* job = jobs_.get(r.job);
  if (job) job->allocating.reset();
  const std::string text =
      fmt::format("{} refused after {}: no Slurm allocation ({}){}; the job is unchanged", r.text,
                  seconds_since(r.started), why, cancelled);
  if (job) jobs_.note(*job, text);
  changes_.bump();
  log_->warn("job {}: {}", r.job, text);
}

void SlurmGrowth::sweep() {
  const CommandResult q =
      run_command({"squeue", "-h", "-n", grow_name(), "-o", "%i"}, kSlurmTimeout);
  if (q.exit_code != 0) return;
  for (const std::string& line : lines_of(q.output)) {
    const std::string id = one_line(line);
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos || extras_.count(id))
      continue;
    run_command({"scancel", id}, kSlurmTimeout);
    log_->warn(
        "Slurm job {} ({}): asked for by an earlier pcmd and held by no host of the "
        "inventory: cancelled",
        id, grow_name());
  }
}

}  // namespace pcm::daemon
