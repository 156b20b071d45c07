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

constexpr std::chrono::milliseconds kSlurmTimeout{20000};  // scontrol, squeue, scancel
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
  if (r.state.poll()) return Stage::kWaiting;
  if (r.state.exit_code()) {  // a reading has ended: "STATE REASON"
    const std::string said = one_line(r.state.output());
    const std::string state = said.substr(0, said.find(' '));
    if (state == "RUNNING") return Stage::kGranted;
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

void SlurmGrowth::look_at_slurm() {
  const bool was_readable = watch_.readable();
  const std::optional<SlurmWatch::Reading> r = watch_.poll();
  if (was_readable && !watch_.readable())
    log_->warn(
        "Slurm cannot be read (scontrol, sinfo, squeue): pcmd does without its time limit, "
        "its nodes' drains and the queue");
  if (!r) return;
  if (r->own) {
    follow_end_time(r->own->end_time);
    follow_node_list(*r->own);
  }
  if (r->leaving) leave_nodes(*r->leaving);
  if (r->queue) queue_ = std::move(r->queue);  // else the last reading stays
}

void SlurmGrowth::follow_end_time(std::optional<std::time_t> end) {
  if (end == parent_.end_time) return;
  const auto left = [](std::optional<std::time_t> t) {
    return t ? fmt::format("{:.0f} s left", std::difftime(*t, std::time(nullptr)))
             : std::string("none");
  };
  log_->info("the allocation's time limit moved (scontrol update TimeLimit=?): {} -> {}",
             left(parent_.end_time), left(end));
  parent_.end_time = end;
}

void SlurmGrowth::follow_node_list(const SlurmAllocation& own) {
  if (own.hosts.empty()) return;  // not shown: nothing to compare
  std::vector<std::string> dropped;
  for (const HostSlots& h : parent_.hosts)
    if (std::none_of(own.hosts.begin(), own.hosts.end(),
                     [&](const HostSlots& o) { return o.name == h.name; }))
      dropped.push_back(h.name);
  if (dropped.empty()) return;
  // Not pcmd's doing (give_back_nodes forgets its own first): Slurm killed the job's steps there.
  const std::string text = fmt::format(
      "Slurm job {} no longer holds {} (scontrol update NodeList=?): the processes there are "
      "gone, and no process goes there any more",
      parent_.job_id, fmt::join(dropped, ", "));
  log_->warn("{}", text);
  for (auto& [name, job] : jobs_.all())
    if (job.state == JobState::kRunning &&
        std::any_of(dropped.begin(), dropped.end(), [&](const std::string& h) {
          return std::count(job.hosts.begin(), job.hosts.end(), h) > 0;
        }))
      jobs_.note(job, text);
  for (const auto& h : dropped) occupied_.erase(h);
  drop_nodes(dropped);
}

void SlurmGrowth::leave_nodes(const std::map<std::string, std::string>& leaving) {
  // A node that came back (State=RESUME) may be taken away again later.
  for (auto it = leaving_.begin(); it != leaving_.end();)
    it = leaving.count(*it) ? std::next(it) : leaving_.erase(it);
  for (const auto& [node, state] : leaving) {
    InventoryHost* host = inventory_.find(node);
    if (!host || host->slurm_job.empty() || !leaving_.insert(node).second) continue;
    std::vector<Job*> there;
    for (auto& [name, job] : jobs_.all())
      if (job.state == JobState::kRunning &&
          std::count(job.hosts.begin(), job.hosts.end(), node) > 0)
        there.push_back(&job);
    std::string text;
    if (!releasable(node)) {
      // The batch host, or pcmd's: it leaves the job only when the Slurm job ends.
      text = fmt::format(
          "Slurm takes node {} away: {}; it holds {} of Slurm job {}, which it leaves only when "
          "that job ends (a version at the time limit or a stop keeps the work)",
          node, state, node == my_host_ ? "pcmd" : "the batch script", parent_.job_id);
      log_->warn("{}", text);
    } else if (host->draining) {
      continue;
    } else {
      text = fmt::format("Slurm takes node {} away: {}; the job is moved off it", node, state);
      log_->info("{}", text);
      if (drains_) {
        try {
          drains_->start(*host);
        } catch (const Error& e) {
          // Nowhere to go now: no new process goes there, and the drain goes on when room comes.
          host->draining = true;
          text = fmt::format("Slurm takes node {} away: {}; {}", node, state, e.what());
          log_->warn("{}", text);
        }
      }
      changes_.bump();
    }
    for (Job* job : there) jobs_.note(*job, text);
  }
}

void SlurmGrowth::finish(Request& r) {
  Job* job = jobs_.get(r.job);
  if (!job || job->state != JobState::kRunning) {
    refuse(r, "the job ended");
    return;
  }
  const CommandResult shown =
      run_command({"scontrol", "show", "job", "-o", "-d", r.slurm_job}, kSlurmTimeout);
  SlurmAllocation a;
  try {
    if (shown.exit_code != 0) fail(PCM_ERR_ARG, "{}", one_line(shown.output));
    a = parse_scontrol_job(shown.output);
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
    jobs_.note(*job, fmt::format("Slurm granted job {} after {}, but {} was refused: {}; {}",
                                 a.job_id, waited, r.text, e.what(), give_back(a.job_id)));
  }
  log_->info("job {}: {}", job->name, job->last_event);
}

void SlurmGrowth::refuse(Request& r, const std::string& why) {
  std::string cancelled;
  const std::string id = r.slurm_job.empty() ? allocation_id(r.sbatch.output()) : r.slurm_job;
  if (!id.empty()) {
    // A grant that came too late, or a request still pending: never left behind.
    const CommandResult c = run_command({"scancel", id}, kSlurmTimeout);
    cancelled = c.exit_code == 0 ? fmt::format("; Slurm job {} cancelled", id)
                                 : fmt::format("; scancel {} failed: {}", id, one_line(c.output));
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

bool SlurmGrowth::in_use(const std::string& host) const {
  if (inventory_.used_slots(host, nullptr) > 0) return true;
  for (const auto& [name, job] : jobs_.all())
    if (job.state == JobState::kRunning && job.pending.command &&
        (job.pending.command->host == host ||
         std::find(job.pending.command->hosts.begin(), job.pending.command->hosts.end(), host) !=
             job.pending.command->hosts.end()))
      return true;
  return false;
}

std::optional<std::set<std::string>> SlurmGrowth::step_nodes(const std::string& id) const {
  const CommandResult st =
      run_command({"squeue", "-h", "-s", "-j", id, "-o", "%i %N"}, kSlurmTimeout);
  if (st.timed_out || !st.found) return std::nullopt;
  std::set<std::string> nodes;
  for (const std::string& line : lines_of(st.output)) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos) continue;  // not a step line (an error: the job is gone)
    const std::string step = line.substr(0, space), list = one_line(line.substr(space + 1));
    if (step.find(".extern") != std::string::npos || step.find(".batch") != std::string::npos ||
        list.empty())
      continue;
    try {
      for (const auto& n : expand_slurm_nodelist(list)) nodes.insert(n);
    } catch (const Error&) {
      return std::nullopt;  // not understood: nothing is given back
    }
  }
  return nodes;
}

void SlurmGrowth::give_back_unused() {
  // Extra allocations: all their hosts unused (or out of the inventory: drained, removed); none
  // while a command waits for another (a grant too small for it waits for the next).
  if (!requests_.empty()) return;
  std::vector<std::string> extras_free;
  for (const auto& [id, hosts] : extras_)
    if (std::none_of(hosts.begin(), hosts.end(),
                     [&](const std::string& h) { return inventory_.find(h) && in_use(h); }))
      extras_free.push_back(id);
  // pcmd's allocation: nodes a job left (or out of the inventory), never the batch host or pcmd's.
  // With the policy watching the queue, a node no job ever used goes back too while a job waits.
  const bool someone_waits = watch_queue_ && queue_ && !queue_->waiting.empty();
  std::vector<std::string> nodes_free;
  for (const HostSlots& h : parent_.hosts)
    if (releasable(h.name) && (!inventory_.find(h.name) ||
                               ((occupied_.count(h.name) || someone_waits) && !in_use(h.name))))
      nodes_free.push_back(h.name);
  for (const auto& id : extras_free) {
    const auto busy = step_nodes(id);
    if (!busy) continue;
    if (!busy->empty()) {
      if (waiting_logged_.insert(id).second)
        log_->info(
            "Slurm job {}: no process of a job is placed there; waiting for its steps "
            "on {} (retired processes) to end before giving it back",
            id, fmt::join(*busy, ", "));
      continue;
    }
    // Told to the job it was asked for, else (pcmd restarted since) the last that ran there.
    std::string owner = grown_for_.count(id) ? grown_for_[id] : "";
    for (const auto& h : extras_[id])
      if (owner.empty() && occupied_.count(h)) owner = occupied_[h];
    for (const auto& h : extras_[id]) occupied_.erase(h);
    grown_for_.erase(id);
    const std::string text = give_back(id);
    if (Job* job = owner.empty() ? nullptr : jobs_.get(owner)) jobs_.note(*job, text);
    log_->info("{}", text);
  }
  if (nodes_free.empty()) return;
  const auto busy = step_nodes(parent_.job_id);
  if (!busy) return;
  std::vector<std::string> now;
  for (const auto& h : nodes_free) {
    if (!busy->count(h)) {
      now.push_back(h);
    } else if (waiting_logged_.insert(h).second) {
      log_->info(
          "node {} of Slurm job {}: no process of a job is placed there; waiting for the "
          "steps there (retired processes) to end before giving it back",
          h, parent_.job_id);
    }
  }
  if (!now.empty()) give_back_nodes(now);
}

std::string SlurmGrowth::give_back(const std::string& id) {
  const CommandResult c = run_command({"scancel", id}, kSlurmTimeout);
  const std::vector<std::string> hosts = extras_[id];
  forget_hosts(hosts, id);
  extras_.erase(id);
  waiting_logged_.erase(id);
  if (c.exit_code != 0)
    return fmt::format("gave up Slurm job {} ({}): scancel failed: {}", id, fmt::join(hosts, ", "),
                       one_line(c.output));
  return fmt::format("gave Slurm job {} back ({})", id, fmt::join(hosts, ", "));
}

void SlurmGrowth::give_back_nodes(const std::vector<std::string>& hosts) {
  std::vector<std::string> rest;
  for (const HostSlots& h : parent_.hosts)
    if (std::find(hosts.begin(), hosts.end(), h.name) == hosts.end()) rest.push_back(h.name);
  if (rest.empty()) return;  // the batch host stays: never happens
  const std::string list = fmt::format("{}", fmt::join(rest, ","));
  const CommandResult c = run_command(
      {"scontrol", "update", "JobId=" + parent_.job_id, "NodeList=" + list}, kSlurmTimeout);
  if (c.exit_code != 0) {
    // Said once per node; tried again at the next check.
    for (const auto& h : hosts)
      if (waiting_logged_.insert("update " + h).second)
        log_->warn(
            "giving node {} of Slurm job {} back failed (scontrol update NodeList={}): "
            "{}",
            h, parent_.job_id, list, one_line(c.output));
    return;
  }
  drop_nodes(hosts);
  for (const auto& h : hosts) {
    const std::string text = fmt::format(
        "gave node {} of Slurm job {} back (scontrol update NodeList={})", h, parent_.job_id, list);
    const auto last = occupied_.find(h);
    if (last != occupied_.end()) {
      if (Job* job = jobs_.get(last->second)) jobs_.note(*job, text);
      occupied_.erase(last);
    }
    waiting_logged_.erase(h);
    log_->info("{}", text);
  }
}

void SlurmGrowth::drop_nodes(const std::vector<std::string>& hosts) {
  forget_hosts(hosts, parent_.job_id);
  parent_.hosts.erase(std::remove_if(parent_.hosts.begin(), parent_.hosts.end(),
                                     [&](const HostSlots& h) {
                                       return std::find(hosts.begin(), hosts.end(), h.name) !=
                                              hosts.end();
                                     }),
                      parent_.hosts.end());
}

void SlurmGrowth::forget_hosts(const std::vector<std::string>& hosts, const std::string& id) {
  for (const auto& h : hosts)
    for (std::size_t i = 0; i < inventory_.hosts().size(); ++i)
      if (inventory_.hosts()[i].name == h && inventory_.hosts()[i].slurm_job == id) {
        inventory_.erase(i);
        break;
      }
  changes_.bump();
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
