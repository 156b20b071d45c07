// commands.cpp — the command desk (commands.h) and the policy's round, which goes through it.
#include "commands.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;
using Kind = proto::Command::Kind;

CommandDesk::CommandDesk(JobTable& jobs, Inventory& inventory, Policy* policy,
                         std::shared_ptr<spdlog::logger> log)
    : jobs_(jobs), inventory_(inventory), policy_(policy), log_(std::move(log)) {}

json CommandDesk::request(Job& job, proto::Command c, const Where& where, From from) {
  if (job.state != JobState::kRunning)
    fail(PCM_ERR_REFUSED, "job '{}' is {}", job.name, state_name(job.state));
  if (job.pending.command)
    fail(PCM_ERR_REFUSED, "job '{}' already has a reconfiguration in flight: {} (command {})",
         job.name, job.pending.command->describe(), job.pending.command->id);
  if (job.allocating)
    fail(PCM_ERR_REFUSED, "job '{}' waits for a Slurm allocation for {}", job.name,
         job.allocating->text);
  const proto::Command asked = c;
  const int missing =
      c.kind == Kind::kMigrate ? place_migration(job, c, where) : place_reshape(job, c, where);
  if (missing > 0) return growth_->grow(job, asked, where, from, missing);
  fill_world_after(job, c);
  if (where.avoid && std::find(c.hosts.begin(), c.hosts.end(), *where.avoid) != c.hosts.end()) {
    std::vector<Host> hosts;
    for (const Host& h : inventory_.placement_hosts(&job))
      if (h.name != *where.avoid) hosts.push_back(h);
    c.hosts = place(hosts, c.size, inventory_.placement_for(job, where.placement));
    c.respawn = true;
  }
  return queue(job, std::move(c), from);
}

int CommandDesk::place_migration(Job& job, proto::Command& c, const Where& where) {
  if (c.rank < 0 || c.rank >= job.size)
    fail(PCM_ERR_REFUSED, "job '{}' has no rank {} (it has {} processes)", job.name, c.rank,
         job.size);
  std::string host = inventory_.requested_host(where.host);
  if (host.empty() && growth_) {
    bool room = false;
    for (const auto& h : inventory_.hosts())
      room = room || (!h.draining && h.name != job.hosts[c.rank] &&
                      inventory_.free_slots(h.name, nullptr) > 0);
    if (!room) return 1;
  }
  if (host.empty())
    host = inventory_.migration_target(job, c.rank, inventory_.placement_for(job, where.placement));
  if (host != job.hosts[c.rank] && inventory_.free_slots(host, nullptr) <= 0)
    fail(PCM_ERR_REFUSED, "host '{}' has no free slot", host);
  c.host = host;
  c.size = job.size;
  return 0;
}

int CommandDesk::place_reshape(Job& job, proto::Command& c, const Where& where) {
  const std::string preferred_host = inventory_.requested_host(where.host);
  std::vector<int> source;  // old rank whose host each new rank prefers
  int preferred_new = INT32_MAX;
  if (c.kind == Kind::kSplit) {
    if (c.rank < 0 || c.rank >= job.size)
      fail(PCM_ERR_REFUSED, "job '{}' has no rank {} (it has {} processes)", job.name, c.rank,
           job.size);
    if (c.into < 2) fail(PCM_ERR_REFUSED, "a split needs --into 2 or more (got {})", c.into);
    c.size = job.size + c.into - 1;
    for (int i = 0; i < c.size; ++i)
      source.push_back(i < c.rank ? i : i < c.rank + c.into ? c.rank : i - c.into + 1);
    if (!preferred_host.empty()) preferred_new = c.rank;
  } else if (c.kind == Kind::kMerge) {
    std::set<int> seen;
    for (int v : c.ranks) {
      if (v < 0 || v >= job.size)
        fail(PCM_ERR_REFUSED, "job '{}' has no rank {} (it has {} processes)", job.name, v,
             job.size);
      if (!seen.insert(v).second) fail(PCM_ERR_REFUSED, "rank {} is listed twice", v);
    }
    if (c.ranks.size() < 2) fail(PCM_ERR_REFUSED, "a merge needs at least two ranks");
    c.size = job.size - static_cast<int>(c.ranks.size()) + 1;
  } else {  // resize
    if (c.size < 1)
      fail(PCM_ERR_REFUSED, "cannot resize job '{}' to {} processes", job.name, c.size);
    if (c.size == job.size)
      fail(PCM_ERR_REFUSED, "job '{}' already has {} processes", job.name, c.size);
    if (c.size > job.size) {
      for (int i = 0; i < c.size; ++i) source.push_back(i < job.size ? i : -1);
      if (!preferred_host.empty()) preferred_new = job.size;
    }
  }
  if (!source.empty() && preferred_host.empty() && growth_) {
    int free = 0;
    for (const Host& h : inventory_.placement_hosts(&job)) free += std::max(h.slots - h.used, 0);
    if (free < c.size) return c.size - free;
  }
  if (!source.empty()) {
    // Named host: the new processes go there, the others stay near their old ranks. Otherwise
    // the whole new world is placed by the strategy, host by host (it is spawned as one group).
    c.hosts = !preferred_host.empty()
                  ? inventory_.place_near(job, source, preferred_new, preferred_host)
                  : place(inventory_.placement_hosts(&job), c.size,
                          inventory_.placement_for(job, where.placement));
  }
  return 0;
}

void CommandDesk::fill_world_after(const Job& job, proto::Command& c) const {
  if (!c.hosts.empty() || job.hosts.size() != static_cast<std::size_t>(job.size)) return;
  if (c.kind == Kind::kMigrate) {
    c.hosts = job.hosts;
    c.hosts[static_cast<std::size_t>(c.rank)] = c.host;
  } else {
    const std::vector<int> new_of = proto::merged_ranks(c, job.size);
    c.hosts.resize(static_cast<std::size_t>(c.size));
    for (int r = 0; r < job.size; ++r)
      if (new_of[r] >= 0) c.hosts[static_cast<std::size_t>(new_of[r])] = job.hosts[r];
  }
}

json CommandDesk::queue(Job& job, proto::Command c, From from) {
  fill_world_after(job, c);
  // MPI between sites goes only where their firewalls open a port range (issue 26), during the
  // reconfiguration too: the old processes talk to the new ones (a migration's mover to its
  // replacement), so the hosts before and after count together. A job that already spans such
  // sites (started so) is not the broker's to refuse.
  std::vector<std::string> during = job.hosts;
  during.insert(during.end(), c.hosts.begin(), c.hosts.end());
  if (const std::string why = inventory_.site_conflict(during);
      !why.empty() && inventory_.site_conflict(job.hosts).empty())
    fail(PCM_ERR_REFUSED, "job '{}': {} would {}", job.name, c.describe(), why);
  if (job.reshapes_by_restart() && !job.supervised)
    fail(PCM_ERR_REFUSED,
         "job '{}' reshapes by restart (PCM_RESHAPE=restart: its MPI cannot spawn), and no "
         "`pcmctl run` supervises it to stop and relaunch it: start it with pcmctl run",
         job.name);
  if (growth_) growth_->before_queue(job, c);
  // A spawn of a missing program makes MPICH's hydra abort the whole job: refuse it here.
  const bool spawns =
      c.respawn || (c.kind != Kind::kMerge && !(c.kind == Kind::kResize && c.size < job.size));
  if (spawns && !job.executable.empty() && job.executable[0] == '/' &&
      ::access(job.executable.c_str(), X_OK) != 0)
    fail(PCM_ERR_REFUSED, "job '{}': its program {} is no longer executable", job.name,
         job.executable);
  c.id = next_command_++;
  if (policy_ && from != From::kPolicy)
    policy_->operator_command(
        job.name,
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  jobs_.note(job, c.describe() + " requested");
  log_->info("job {}: command {}: {}", job.name, c.id, job.last_event);
  job.pending.command = c;
  job.pending.delivered = false;
  job.pending.drain = from == From::kDrain;
  return json{{"ok", true},       {"command", c.id}, {"host", c.host},
              {"hosts", c.hosts}, {"size", c.size},  {"text", c.describe()}};
}

// ---- the operators' requests ---------------------------------------------------------------

json CommandDesk::from_operator(const ops::CommandFields& f, proto::Command c) {
  c.why = f.why.value_or("operator command");
  return request(jobs_.find(f.job), std::move(c), Where{f.host, f.placement, std::nullopt},
                 From::kOperator);
}

json CommandDesk::migrate(const ops::Migrate& r) {
  proto::Command c;
  c.kind = Kind::kMigrate;
  c.rank = r.rank;
  return from_operator(r, std::move(c));
}

json CommandDesk::split(const ops::Split& r) {
  proto::Command c;
  c.kind = Kind::kSplit;
  c.rank = r.rank;
  c.into = r.into;
  return from_operator(r, std::move(c));
}

json CommandDesk::merge(const ops::Merge& r) {
  proto::Command c;
  c.kind = Kind::kMerge;
  c.ranks = r.ranks;
  return from_operator(r, std::move(c));
}

json CommandDesk::resize(const ops::Resize& r) {
  proto::Command c;
  c.kind = Kind::kResize;
  c.size = r.size;
  return from_operator(r, std::move(c));
}

// ---- the policy ----------------------------------------------------------------------------

void CommandDesk::policy_round() {
  if (!policy_) return;
  const auto tnow = std::chrono::steady_clock::now();
  const double now = std::chrono::duration<double>(tnow.time_since_epoch()).count();
  std::vector<PolicyJob> jobs;
  for (const auto& [name, job] : jobs_.all()) {
    if (job.state != JobState::kRunning) continue;
    // A command waiting for a Slurm allocation is in flight too: a growth trial is measured
    // once it has been carried out.
    jobs.push_back(PolicyJob{name, job.size, job.hosts, job.rate(tnow),
                             job.pending.command.has_value() || job.allocating.has_value(),
                             job.version_s});
  }
  std::vector<PolicyHost> hosts;
  for (const auto& h : inventory_.hosts())
    hosts.push_back(PolicyHost{h.name, h.slots, inventory_.used_slots(h.name, nullptr), h.draining,
                               h.agent, h.cores, h.busy, h.runnable,
                               growth_ && growth_->releasable(h.name), h.silent});
  const std::optional<PolicyQueue> queue = growth_ ? growth_->queue() : std::nullopt;
  const std::vector<PolicyDecision> decisions =
      policy_->decide(now, jobs, hosts, queue ? &*queue : nullptr);
  for (const auto& [name, text] : policy_->take_notes()) {
    if (Job* job = jobs_.get(name)) jobs_.note(*job, text);
    log_->info("job {}: {}", name, text);
  }
  for (const PolicyDecision& d : decisions) {
    Job* job = jobs_.get(d.job);
    if (!job) continue;
    if (d.checkpoint) {
      try {
        jobs_.want_checkpoint(*job, "policy: " + d.reason);
      } catch (const Error& e) {
        log_->warn("job {}: policy: no checkpoint asked: {}", d.job, e.what());
      }
      continue;
    }
    const std::string op = proto::kind_name(d.kind);
    proto::Command c;
    c.kind = d.kind;
    c.why = proto::Command::clean_why("policy: " + d.reason);
    Where where;
    if (d.kind == Kind::kMigrate) {
      c.rank = d.rank;
      where.host = d.host;
    } else if (d.kind == Kind::kMerge) {
      c.ranks = d.ranks;
    } else {
      c.size = d.size;
      if (!d.host.empty()) where.host = d.host;
      if (!d.avoid.empty()) where.avoid = d.avoid;
    }
    try {
      const json r = request(*job, std::move(c), where, From::kPolicy);
      jobs_.note(*job, r.value("allocating", false)
                           ? fmt::format("policy: {} because {}", r.value("text", op), d.reason)
                           : fmt::format("policy: {} (command {}) because {}", r.value("text", op),
                                         r.value("command", 0), d.reason));
    } catch (const Error& e) {
      policy_->failed(d.job, now);
      jobs_.note(*job, fmt::format("policy: {} refused: {} (it wanted to because {})", op, e.what(),
                                   d.reason));
    }
    log_->info("job {}: {}", d.job, job->last_event);
  }
}

}  // namespace pcm::daemon
