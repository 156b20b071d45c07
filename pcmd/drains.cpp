// drains.cpp — drains of hosts, step by step through the command desk (drains.h).
#include "drains.h"

#include <algorithm>

#include "error.h"
#include "pcm_types.h"
#include "site_moves.h"

namespace pcm::daemon {

using proto::json;

Drains::Drains(Inventory& inventory, JobTable& jobs, CommandDesk& desk, Changes& changes,
               std::chrono::milliseconds agent_timeout, std::shared_ptr<spdlog::logger> log)
    : inventory_(inventory),
      jobs_(jobs),
      desk_(desk),
      changes_(changes),
      agent_timeout_(agent_timeout),
      log_(std::move(log)) {}

json Drains::drain(const ops::HostDrain& r) {
  InventoryHost* host = inventory_.find(r.host);
  if (!host) fail(PCM_ERR_REFUSED, "host '{}' is not in pcmd's inventory", r.host);
  if (!host->draining) start(*host);
  return json{{"ok", true}, {"host", r.host}, {"draining", true}};
}

// agent_leave: the host is drained, then leaves the inventory.
json Drains::leave(const ops::AgentLeave& r) {
  InventoryHost* host = inventory_.find(r.host);
  if (!host || !host->agent) fail(PCM_ERR_REFUSED, "host '{}' has no agent in pcmd", r.host);
  if (!host->draining) {
    start(*host);
    log_->info("host {}: its agent leaves; the host is drained first", r.host);
    changes_.bump();
  }
  return json{{"ok", true}, {"host", r.host}, {"draining", true}};
}

// Every job on the host must have somewhere to go.
void Drains::start(InventoryHost& target) {
  const std::string name = target.name;
  int room = 0, others = 0;
  for (const auto& h : inventory_.hosts()) {
    if (h.name == name || h.draining) continue;
    ++others;
    room += std::max(inventory_.free_slots(h.name, nullptr), 0);
  }
  if (others == 0)
    fail(PCM_ERR_REFUSED, "host '{}' is the only host left: there is nowhere to drain it to", name);
  for (const auto& [jname, job] : jobs_.all()) {
    if (job.state != JobState::kRunning) continue;
    bool all_here = std::all_of(job.hosts.begin(), job.hosts.end(),
                                [&](const std::string& h) { return h == name; });
    if (all_here && room == 0)
      fail(PCM_ERR_REFUSED,
           "job '{}' runs only on host '{}' and no other host has a free slot: nowhere to go "
           "(add slots or a host with pcmctl host add)",
           jname, name);
  }
  target.draining = true;
  log_->info("host {}: drain started ({} processes)", name, inventory_.used_slots(name, nullptr));
  progress();
}

void Drains::check_agents() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> lost;
  for (auto& h : inventory_.hosts()) {
    if (!h.agent || h.lost || now - h.last_report < agent_timeout_) continue;
    h.lost = true;
    lost.push_back(h.name);
  }
  for (const auto& name : lost) {
    log_->warn("host {} lost: its agent has not reported for {} ms; draining it", name,
               agent_timeout_.count());
    InventoryHost* h = inventory_.find(name);
    if (!h || h->draining) continue;
    try {
      start(*h);
    } catch (const Error& e) {
      // Nowhere to go: no new process goes there, and the host stays until its jobs end.
      h->draining = true;
      log_->warn("host {}: {}", name, e.what());
      progress();
    }
    changes_.bump();
  }
}

void Drains::progress() {
  auto& hosts = inventory_.hosts();
  for (std::size_t i = 0; i < hosts.size();) {
    if (!hosts[i].draining) {
      ++i;
      continue;
    }
    const InventoryHost host = hosts[i];
    for (auto& [name, job] : jobs_.all()) {
      if (job.state != JobState::kRunning || job.pending.command || !job.drain_stalled.empty())
        continue;
      if (std::count(job.hosts.begin(), job.hosts.end(), host.name) == 0) continue;
      try {
        step(job, host);
      } catch (const Error& e) {
        job.drain_stalled = e.what();
        jobs_.note(job, fmt::format("drain of {} stopped for this job: {}", host.name, e.what()));
        log_->warn("job {}: {}", name, job.last_event);
        // Nowhere in its own sites: a job under pcmctl run may go whole to another site.
        const std::string moved = move_off_drain(
            jobs_, inventory_, job, fmt::format("drain of {} ({})", host.name, e.what()));
        if (!moved.empty()) log_->info("job {}: {}", name, moved);
      }
    }
    if (inventory_.used_slots(host.name, nullptr) == 0) {
      log_->info("host {}: drained, it leaves the inventory", host.name);
      // Drained while its agent runs (pcmctl host drain, or the agent leaving): its reports are
      // refused from now on. A lost host's agent that comes back joins again.
      if (host.agent && !host.lost) inventory_.left_agent(host.name, true);
      inventory_.erase(i);
      continue;
    }
    ++i;
  }
}

// One step off `host` for job: migrate its lowest rank there to another host with room; with no
// room anywhere, merge all its ranks there with its lowest rank elsewhere (the merged process is
// the lowest listed rank; if that one is on the host, the next step migrates it into the slot
// the merge freed). Returns whether a command was queued.
bool Drains::step(Job& job, const InventoryHost& host) {
  std::vector<int> here;
  int elsewhere = -1;
  for (int r = 0; r < job.size; ++r) {
    if (job.hosts[r] == host.name)
      here.push_back(r);
    else if (elsewhere < 0)
      elsewhere = r;
  }
  if (here.empty()) return false;
  proto::Command c;
  CommandDesk::Where where;
  bool room = false;
  for (const auto& h : inventory_.hosts())
    if (!h.draining && inventory_.free_slots(h.name, nullptr) > 0) room = true;
  if (room) {
    c.kind = proto::Command::Kind::kMigrate;
    c.rank = here.front();
    c.host = inventory_.migration_target(job, c.rank,
                                         job.placement.value_or(inventory_.default_placement()));
    c.size = job.size;
    where.host = c.host;
  } else if (elsewhere >= 0) {
    c.kind = proto::Command::Kind::kMerge;
    c.ranks = here;
    c.ranks.push_back(elsewhere);
    std::sort(c.ranks.begin(), c.ranks.end());
    c.size = job.size - static_cast<int>(here.size());
  } else {
    fail(PCM_ERR_REFUSED, "every process is on {} and no other host has a free slot", host.name);
  }
  c.why = fmt::format("drain of {}{}", host.name, host.lost ? " (its agent fell silent)" : "");
  desk_.request(job, c, where, CommandDesk::From::kDrain);
  jobs_.note(job, fmt::format("drain of {}: {} requested", host.name, c.describe()));
  return true;
}

}  // namespace pcm::daemon
