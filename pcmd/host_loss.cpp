// host_loss.cpp — a host that stops answering while one of its jobs reconfigures (host_loss.h).
#include "host_loss.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace pcm::daemon {

namespace {

// The hosts of a job's delivered command: its old world's and its new world's.
std::set<std::string> hosts_of(const Job& job) {
  std::set<std::string> out(job.hosts.begin(), job.hosts.end());
  const proto::Command& c = *job.pending.command;
  out.insert(c.hosts.begin(), c.hosts.end());
  if (!c.host.empty()) out.insert(c.host);
  return out;
}

bool reconfiguring(const Job& job) {
  return job.state == JobState::kRunning && job.pending.command && job.pending.delivered &&
         !job.restart_pending();
}

}  // namespace

bool HostLoss::check(std::chrono::steady_clock::time_point now) {
  // The jobs whose command is delivered, with their hosts; the others have nothing lost.
  std::vector<std::pair<Job*, std::set<std::string>>> busy;
  std::set<std::string> followed;
  for (auto& [name, job] : jobs_.all()) {
    if (!reconfiguring(job)) {
      lost_.erase(name);
      continue;
    }
    busy.emplace_back(&job, hosts_of(job));
    followed.insert(busy.back().second.begin(), busy.back().second.end());
  }
  for (auto it = answered_.begin(); it != answered_.end();)
    it = followed.count(it->first) ? std::next(it) : answered_.erase(it);
  std::set<std::string> gone;
  for (const auto& h : followed) {
    const auto known = answered_.find(h);
    const std::optional<bool> answer = inventory_.answered(h);
    if (known == answered_.end()) {  // followed from now on: a first measure
      answered_[h] = answer.value_or(false);
      inventory_.probe_again(h);
      continue;
    }
    if (!answer) continue;  // being measured
    if (*answer)
      known->second = true;
    else if (known->second)
      gone.insert(h);
    inventory_.probe_again(h);
  }
  bool failed = false;
  for (auto& [job, hosts] : busy) {
    for (const auto& h : hosts)
      if (gone.count(h) && job->state == JobState::kRunning)
        failed = host_gone(*job, h, now) || failed;
    if (job->state == JobState::kRunning) failed = check_stuck(*job, now) || failed;
  }
  for (const auto& h : gone) answered_.erase(h);  // silent now: the inventory follows it
  return failed;
}

bool HostLoss::host_gone(Job& job, const std::string& host,
                         std::chrono::steady_clock::time_point now) {
  const std::int64_t id = job.pending.command->id;
  jobs_.note_lost_host(host);
  const bool old_there = std::find(job.hosts.begin(), job.hosts.end(), host) != job.hosts.end();
  if (old_there) {
    jobs_.fail_job(job, fmt::format("host {} stopped answering pcmd's probes during command {} "
                                    "(powered off, or its link cut): its processes are lost",
                                    host, id));
    return true;
  }
  if (lost_.count(job.name)) return false;  // one lost new process gives the command up
  lost_[job.name] = Lost{id, host, now, false};
  // As a lost process's loss: pcmctl run ends a launcher stuck in MPI_Finalize sooner.
  if (job.liveness.lost.size() < 16)
    job.liveness.lost.push_back(
        fmt::format("a new process on {} (its host stopped answering)", host));
  if (job.liveness.lost_joining.empty())
    job.liveness.lost_joining = fmt::format("on {} (its host stopped answering)", host);
  jobs_.note(job, fmt::format("host {} stopped answering pcmd's probes during command {} "
                              "(powered off, or its link cut): its new process is lost, and the "
                              "old world gives the command up",
                              host, id));
  return false;
}

bool HostLoss::check_stuck(Job& job, std::chrono::steady_clock::time_point now) {
  auto it = lost_.find(job.name);
  if (it == lost_.end()) return false;
  Lost& l = it->second;
  if (l.command != job.pending.command->id) {
    lost_.erase(it);
    return false;
  }
  if (now - l.since < kStuckAfter || l.told) return false;
  const std::string why = fmt::format(
      "command {} has not ended {} s after its new process's host {} stopped "
      "answering: the old world is stuck (in MPI_Comm_spawn toward {}?)",
      l.command, kStuckAfter.count(), l.host, l.host);
  if (job.supervised) {
    lost_.erase(it);
    jobs_.fail_job(job, why + "; pcmctl run relaunches the job");
    return true;
  }
  l.told = true;
  jobs_.note(job, why + "; its watchdog ends it (PCM_RECONFIG_TIMEOUT_S)");
  return false;
}

}  // namespace pcm::daemon
