// slurm_nodes.cpp — SlurmGrowth's nodes (slurm_growth.h): those given back once no job uses them
// (scancel of an extra allocation, `scontrol update NodeList=` for pcmd's own), in the background;
// those Slurm takes away (drain, fail), drained; those an operator dropped, forgotten; and the
// time limit followed, from SlurmWatch's readings.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ctime>

#include "error.h"
#include "slurm/slurm_growth.h"

namespace pcm::daemon {

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
  for (auto& entry : jobs_.all()) {
    Job& job = entry.second;  // not a structured binding: a lambda captures it
    if (job.state == JobState::kRunning &&
        std::any_of(dropped.begin(), dropped.end(), [&](const std::string& h) {
          return std::count(job.hosts.begin(), job.hosts.end(), h) > 0;
        }))
      jobs_.note(job, text);
  }
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

namespace {
// The nodes where a step of the job runs (`squeue -h -s -j ID -o "%i %N"`): nothing when squeue
// did not answer or is not understood (then nothing is given back).
std::optional<std::set<std::string>> step_nodes(const CommandResult& st) {
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
      return std::nullopt;
    }
  }
  return nodes;
}
}  // namespace

std::vector<std::string> SlurmGrowth::free_extras() const {
  std::vector<std::string> free;
  for (const auto& [id, hosts] : extras_)
    if (std::none_of(hosts.begin(), hosts.end(),
                     [&](const std::string& h) { return inventory_.find(h) && in_use(h); }))
      free.push_back(id);
  return free;
}

std::vector<std::string> SlurmGrowth::free_nodes() const {
  // Nodes a job left (or out of the inventory), never the batch host or pcmd's. With the policy
  // watching the queue, a node no job ever used goes back too while a job waits.
  const bool someone_waits = watch_queue_ && queue_ && !queue_->waiting.empty();
  std::vector<std::string> free;
  for (const HostSlots& h : parent_.hosts)
    if (releasable(h.name) && (!inventory_.find(h.name) ||
                               ((occupied_.count(h.name) || someone_waits) && !in_use(h.name))))
      free.push_back(h.name);
  return free;
}

void SlurmGrowth::give_back_unused() {
  // Extra allocations whose hosts are all unused, then nodes of pcmd's allocation; none while a
  // command waits for an allocation (a grant too small for it waits for the next). One at a time
  // and in the background (pcmd's loop never waits for Slurm): the steps there (squeue), then
  // scancel or scontrol update, each looked at again when its answer comes.
  if (!requests_.empty() || giving_back_ > 0) return;
  const std::vector<std::string> extras = free_extras();
  const std::vector<std::string> nodes = free_nodes();
  if (extras.empty() && nodes.empty()) return;
  const std::string id = extras.empty() ? parent_.job_id : extras.front();
  ++giving_back_;
  background_.run(
      {"squeue", "-h", "-s", "-j", id, "-o", "%i %N"}, kSlurmTimeout,
      [this, id, extra = !extras.empty()](const CommandResult& st) {
        --giving_back_;
        const auto busy = step_nodes(st);
        if (!busy) return;
        if (extra) {
          const std::vector<std::string> now = free_extras();
          if (std::find(now.begin(), now.end(), id) == now.end()) return;  // used again
          if (!busy->empty()) {
            if (waiting_logged_.insert(id).second)
              log_->info(
                  "Slurm job {}: no process of a job is placed there; waiting for its steps "
                  "on {} (retired processes) to end before giving it back",
                  id, fmt::join(*busy, ", "));
            return;
          }
          // Told to the job it was asked for, else (pcmd restarted since) the last that ran there.
          std::string owner = grown_for_.count(id) ? grown_for_[id] : "";
          for (const auto& h : extras_[id])
            if (owner.empty() && occupied_.count(h)) owner = occupied_[h];
          for (const auto& h : extras_[id]) occupied_.erase(h);
          grown_for_.erase(id);
          give_back(id, owner);
          return;
        }
        std::vector<std::string> now;
        for (const auto& h : free_nodes()) {
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
      });
}

std::vector<std::string> SlurmGrowth::take_no_process(const std::vector<std::string>& hosts) {
  std::vector<std::string> marked;
  for (const auto& h : hosts)
    if (InventoryHost* host = inventory_.find(h); host && !host->draining) {
      host->draining = true;
      marked.push_back(h);
    }
  changes_.bump();
  return marked;
}

void SlurmGrowth::give_back(const std::string& id, const std::string& owner) {
  const std::vector<std::string> hosts = extras_[id];
  take_no_process(hosts);  // while scancel runs
  ++giving_back_;
  background_.run({"scancel", id}, kSlurmTimeout, [this, id, owner, hosts](const CommandResult& c) {
    --giving_back_;
    forget_hosts(hosts, id);
    extras_.erase(id);
    waiting_logged_.erase(id);
    const std::string text =
        c.exit_code != 0 || c.timed_out
            ? fmt::format("gave up Slurm job {} ({}): scancel failed: {}", id,
                          fmt::join(hosts, ", "),
                          c.timed_out ? std::string("no answer") : one_line(c.output))
            : fmt::format("gave Slurm job {} back ({})", id, fmt::join(hosts, ", "));
    if (Job* job = owner.empty() ? nullptr : jobs_.get(owner)) jobs_.note(*job, text);
    log_->info("{}", text);
  });
}

void SlurmGrowth::give_back_nodes(const std::vector<std::string>& hosts) {
  std::vector<std::string> rest;
  for (const HostSlots& h : parent_.hosts)
    if (std::find(hosts.begin(), hosts.end(), h.name) == hosts.end()) rest.push_back(h.name);
  if (rest.empty()) return;  // the batch host stays: never happens
  const std::string list = fmt::format("{}", fmt::join(rest, ","));
  const std::vector<std::string> marked = take_no_process(hosts);  // while scontrol runs
  ++giving_back_;
  background_.run(
      {"scontrol", "update", "JobId=" + parent_.job_id, "NodeList=" + list}, kSlurmTimeout,
      [this, hosts, marked, list](const CommandResult& c) {
        --giving_back_;
        if (c.exit_code != 0 || c.timed_out) {
          // Said once per node; tried again at the next check, the nodes usable meanwhile.
          for (const auto& h : marked)  // not those drained for another reason
            if (InventoryHost* host = inventory_.find(h)) host->draining = false;
          for (const auto& h : hosts) {
            if (waiting_logged_.insert("update " + h).second)
              log_->warn(
                  "giving node {} of Slurm job {} back failed (scontrol update NodeList={}): "
                  "{}",
                  h, parent_.job_id, list, c.timed_out ? "no answer" : one_line(c.output));
          }
          changes_.bump();
          return;
        }
        drop_nodes(hosts);
        for (const auto& h : hosts) {
          const std::string text =
              fmt::format("gave node {} of Slurm job {} back (scontrol update NodeList={})", h,
                          parent_.job_id, list);
          const auto last = occupied_.find(h);
          if (last != occupied_.end()) {
            if (Job* job = jobs_.get(last->second)) jobs_.note(*job, text);
            occupied_.erase(last);
          }
          waiting_logged_.erase(h);
          log_->info("{}", text);
        }
      });
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

}  // namespace pcm::daemon
