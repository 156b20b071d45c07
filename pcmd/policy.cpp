// policy.cpp — pcmd's autonomous policy (policy.h).
#include "policy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

namespace pcm::daemon {

using Kind = proto::Command::Kind;

double Policy::competing(const PolicyHost& h) {
  return std::max(0.0, h.runnable - static_cast<double>(h.used));
}

void Policy::failed(const std::string& job, double now) {
  JobState& s = jobs_[job];
  s.failed = now;
  s.trial = false;
}

void Policy::operator_command(const std::string& job, double now) {
  JobState& s = jobs_[job];
  s.last = now;
  s.trial = false;  // the operator's command changes what a trial would measure
}

std::vector<std::pair<std::string, std::string>> Policy::take_notes() {
  auto out = std::move(notes_);
  notes_.clear();
  return out;
}

double Policy::wanted_gain(int from, int to) const {
  const double share = from > 0 ? static_cast<double>(to) / from - 1 : 1;
  return std::min(config_.min_gain, config_.min_efficiency * share);
}

int Policy::min_size(const PolicyJob& job) const {
  return std::max(1, job.min_size > 0 ? job.min_size : config_.min_procs);
}

double Policy::next_wake(double now) const {
  double t = std::numeric_limits<double>::infinity();
  auto after = [&](double at) {
    if (at > now) t = std::min(t, at);
  };
  for (const auto& [name, s] : jobs_) {
    after(s.last + config_.min_interval_s);
    after(s.failed + config_.retry_after_s);
    after(s.cap_until);
    // A trial not started yet starts at the first snapshot with the grown world running.
    if (s.trial && s.trial_started) after(s.trial_since + config_.measure_s);
  }
  for (const auto& [name, since] : idle_since_) after(since + config_.idle_s);
  for (const auto& [name, since] : high_since_) after(since + config_.load_sustain_s);
  return t;
}

bool Policy::loaded(const std::string& host, double now) const {
  auto it = high_since_.find(host);
  return it != high_since_.end() && now - it->second >= config_.load_sustain_s;
}

bool Policy::quiet(const PolicyHost& h, double now) const {
  return !h.draining && !h.silent && (!h.agent || competing(h) < config_.load_low) &&
         !loaded(h.name, now);
}

std::string Policy::quiet_target(const Snapshot& snap, const std::string* except) const {
  for (const PolicyHost& h : snap.hosts)
    if ((!except || h.name != *except) && snap.room.at(h.name) > 0 && quiet(h, snap.now))
      return h.name;
  return "";
}

// Hosts above load_high, and since when (hysteresis: a host is "loaded" once above high for
// load_sustain_s, and counts as free for new processes only below low).
void Policy::track_loads(const Snapshot& snap) {
  // Hosts that left the inventory are forgotten.
  for (auto it = high_since_.begin(); it != high_since_.end();)
    it = snap.by_name.count(it->first) ? std::next(it) : high_since_.erase(it);
  for (const PolicyHost& h : snap.hosts) {
    const double c = competing(h);
    if (h.agent && c > config_.load_high) {
      high_since_.emplace(h.name, snap.now);
    } else if (!h.agent || c < config_.load_low) {
      high_since_.erase(h.name);
    }
  }
}

std::optional<PolicyDecision> Policy::judge_trial(double now, const PolicyJob& job, JobState& s) {
  // Measured once the grown world has run for measure_s.
  if (!s.trial_started) {
    s.trial_started = true;
    s.trial_since = now;
  }
  if (now - s.trial_since < config_.measure_s || job.rate < 0) return std::nullopt;
  s.trial = false;
  if (job.size <= s.trial_size) {  // it did not grow (an allocation given up, a split refused)
    notes_.emplace_back(job.name, fmt::format("policy: the growth from {} processes did not "
                                              "happen (now {}): nothing to judge or undo",
                                              s.trial_size, job.size));
    s.last = now;
    return std::nullopt;
  }
  const double gain = s.trial_rate > 0 ? job.rate / s.trial_rate - 1 : 0;
  const double wanted = wanted_gain(s.trial_size, job.size);
  if (gain >= wanted) {
    notes_.emplace_back(job.name,
                        fmt::format("policy: growth to {} kept: {:.1f} -> {:.1f} "
                                    "iterations/s ({:+.1f} %, at least {:+.1f} % wanted)",
                                    job.size, s.trial_rate, job.rate, 100 * gain, 100 * wanted));
    s.last = now;
    return std::nullopt;
  }
  PolicyDecision d;
  d.job = job.name;
  d.kind = Kind::kResize;
  d.size = s.trial_size;
  d.reason = fmt::format(
      "undo the growth to {}: {:.1f} -> {:.1f} iterations/s ({:+.1f} %, at least {:+.1f} % "
      "wanted); not grown past {} for {:.0f} s",
      job.size, s.trial_rate, job.rate, 100 * gain, 100 * wanted, s.trial_size, config_.cap_s);
  s.cap = s.trial_size;
  s.cap_until = now + config_.cap_s;
  s.last = now;
  return d;
}

// The job's highest rank on from goes to a quiet host with room, or merges into a rank on
// another host.
std::optional<PolicyDecision> Policy::leave_host(Snapshot& snap, const PolicyJob& job,
                                                 const std::string& from) {
  int rank = -1;
  for (int r = 0; r < job.size; ++r)
    if (job.hosts[static_cast<std::size_t>(r)] == from) rank = r;
  const PolicyHost& src = *snap.by_name.at(from);
  const std::string target = quiet_target(snap, &from);
  PolicyDecision d;
  d.job = job.name;
  const std::string why = fmt::format(
      "host {} is loaded: {:.1f} runnable tasks beyond its {} PCM processes for {:.0f} s "
      "(leave above {:.1f})",
      from, competing(src), src.used, snap.now - high_since_.at(from), config_.load_high);
  if (!target.empty()) {
    d.kind = Kind::kMigrate;
    d.rank = rank;
    d.host = target;
    d.reason = fmt::format("{}; {} has a free slot and a competing load of {:.1f}", why, target,
                           competing(*snap.by_name.at(target)));
    --snap.room[target];
    return d;
  }
  int other = -1;
  for (int r = 0; r < job.size; ++r)
    if (job.hosts[static_cast<std::size_t>(r)] != from && !loaded(job.hosts[r], snap.now) &&
        other < 0)
      other = r;
  if (other < 0) return std::nullopt;  // nowhere to go: stay
  d.kind = Kind::kMerge;
  d.ranks = {std::min(rank, other), std::max(rank, other)};
  d.reason = fmt::format("{}; no quiet host has a free slot: rank {} merges into rank {}", why,
                         rank, other);
  return d;
}

// One more process onto a free slot of a quiet host, measured afterwards (judge_trial); not
// while a host of the job is above load_high (the measurement would be the load's).
std::optional<PolicyDecision> Policy::grow(Snapshot& snap, const PolicyJob& job, JobState& s) {
  if (job.rate <= 0) return std::nullopt;
  if (std::any_of(job.hosts.begin(), job.hosts.end(),
                  [&](const std::string& h) { return high_since_.count(h) > 0; }))
    return std::nullopt;
  if (snap.now < s.cap_until && job.size + 1 > s.cap) return std::nullopt;
  if (job.max_size > 0 && job.size + 1 > job.max_size) return std::nullopt;
  const std::string target = quiet_target(snap, nullptr);
  if (target.empty()) return std::nullopt;
  PolicyDecision d;
  d.job = job.name;
  d.kind = Kind::kResize;
  d.size = job.size + 1;
  d.host = target;
  d.reason = fmt::format(
      "{} has a free slot (competing load {:.1f}): try {} processes, keep them if the rate "
      "({:.1f} iterations/s now) rises by {:.1f} % within {:.0f} s",
      target, competing(*snap.by_name.at(target)), job.size + 1, job.rate,
      100 * wanted_gain(job.size, job.size + 1), config_.measure_s);
  --snap.room[target];
  start_trial(s, job, snap.now);
  return d;
}

void Policy::start_trial(JobState& s, const PolicyJob& job, double now) {
  s.last = now;
  s.trial = true;
  s.trial_started = false;
  s.trial_size = job.size;
  s.trial_rate = job.rate;
}

// The first job waiting for more nodes than are idle or being given back: this job leaves the
// releasable node where it has the fewest processes (alone there, and not its only node), if it
// stays at min_size(job) or more and the rest of the inventory holds its smaller world.
std::optional<PolicyDecision> Policy::shrink_for_queue(Snapshot& snap, const PolicyJob& job) {
  if (!snap.queue || snap.queue->waiting.empty()) return std::nullopt;
  const PolicyQueue::Waiting& w = snap.queue->waiting.front();
  const int idle = static_cast<int>(snap.queue->idle.size());
  if (w.nodes <= idle + snap.leaving) return std::nullopt;  // it starts without more
  if (config_.shrink_if_enough && w.nodes > idle + snap.leaving + snap.can_leave)
    return std::nullopt;  // not even then
  std::map<std::string, int> mine;
  for (const auto& h : job.hosts) ++mine[h];
  std::string best;
  for (const auto& [name, count] : mine) {
    auto it = snap.by_name.find(name);
    if (it == snap.by_name.end() || !it->second->releasable) continue;
    if (it->second->used != count || count >= job.size) continue;  // others there, or all ours
    if (job.size - count < min_size(job)) continue;
    int room = 0;  // the other hosts' slots for the new world (the job's own count as free)
    for (const PolicyHost& h : snap.hosts)
      if (h.name != name && !h.draining) room += std::max(0, h.slots - h.used) + mine[h.name];
    if (room < job.size - count) continue;
    if (best.empty() || count < mine[best]) best = name;
  }
  if (best.empty()) return std::nullopt;
  ++snap.leaving;
  --snap.can_leave;
  jobs_[job.name].leaving = 1;
  PolicyDecision d;
  d.job = job.name;
  d.kind = Kind::kResize;
  d.size = job.size - mine[best];
  d.avoid = best;
  d.reason = fmt::format(
      "Slurm job {} waits for {} node(s) and {} are idle: the job leaves {} ({} -> {} processes, "
      "at least {}) so that the node goes back to Slurm ({} other node(s) being given back)",
      w.id, w.nodes, idle, best, job.size, d.size, min_size(job), snap.leaving - 1);
  return d;
}

// Nobody waits: nodes idle for idle_s are grown onto (as many processes as they have CPUs),
// which makes pcmd ask Slurm for them; measured like any growth. At most as many processes as
// the job has (it at most doubles: a wide job grows in steps to its size, not one node at a
// time), at least one node, never beyond its max_size.
std::optional<PolicyDecision> Policy::grow_onto_idle(Snapshot& snap, const PolicyJob& job,
                                                     JobState& s) {
  if (!snap.queue || snap.queue_used || !snap.queue->waiting.empty() || job.rate <= 0)
    return std::nullopt;
  if (snap.now < s.cap_until && job.size + 1 > s.cap) return std::nullopt;
  std::vector<std::string> names;
  int add = 0;
  for (const PolicyQueue::Idle& n : snap.queue->idle) {
    auto it = idle_since_.find(n.name);
    if (it == idle_since_.end() || snap.now - it->second < config_.idle_s) continue;
    const int cpus = std::max(1, n.cpus);
    if (job.max_size > 0 && job.size + add + cpus > job.max_size) break;
    if (snap.now < s.cap_until && job.size + add + cpus > s.cap) break;
    if (!names.empty() && add + cpus > job.size) break;
    names.push_back(n.name);
    add += cpus;
  }
  if (names.empty()) return std::nullopt;
  snap.queue_used = true;
  for (const std::string& n : names) idle_since_.erase(n);  // idle_s again before it counts
  PolicyDecision d;
  d.job = job.name;
  d.kind = Kind::kResize;
  d.size = job.size + add;
  const std::string which = names.size() == 1 ? fmt::format("Slurm node {} has", names[0])
                            : names.size() <= 3
                                ? fmt::format("Slurm nodes {} have", fmt::join(names, ", "))
                                : fmt::format("Slurm nodes {}, {} and {} more have", names[0],
                                              names[1], names.size() - 2);
  d.reason = fmt::format(
      "{} been idle for {:.0f} s and no job waits: try {} processes on {}, keep them if the rate "
      "({:.1f} iterations/s now) rises by {:.1f} % within {:.0f} s",
      which, config_.idle_s, d.size, names.size() == 1 ? "it" : "them", job.rate,
      100 * wanted_gain(job.size, d.size), config_.measure_s);
  start_trial(s, job, snap.now);
  return d;
}

bool Policy::near_time_limit(const Snapshot& snap, double margin) const {
  return snap.queue && snap.queue->seconds_left >= 0 && snap.queue->seconds_left <= margin;
}

double Policy::checkpoint_margin(const std::vector<PolicyJob>& jobs, std::string* how) const {
  if (config_.checkpoint_margin_s > 0) {
    *how = "--policy-checkpoint-margin-s";
    return config_.checkpoint_margin_s;
  }
  const PolicyJob* slowest = nullptr;
  for (const PolicyJob& j : jobs)
    if (j.version_s >= 0 && (!slowest || j.version_s > slowest->version_s)) slowest = &j;
  if (!slowest) {
    *how = "no version measured yet";
    return PolicyConfig::kUnmeasuredMarginS;
  }
  *how = fmt::format("{:.0f} s + {:.0f} x {:.2f} s, job {}'s last version",
                     PolicyConfig::kMarginFloorS, PolicyConfig::kMarginCostFactor,
                     slowest->version_s, slowest->name);
  return PolicyConfig::kMarginFloorS + PolicyConfig::kMarginCostFactor * slowest->version_s;
}

std::vector<PolicyDecision> Policy::decide(double now, const std::vector<PolicyJob>& jobs,
                                           const std::vector<PolicyHost>& hosts,
                                           const PolicyQueue* queue) {
  Snapshot snap{now, hosts, {}, {}, queue};
  for (const PolicyHost& h : hosts) snap.by_name[h.name] = &h;
  track_loads(snap);
  // Free slots as decisions use them up in this snapshot; a node going back to Slurm while a
  // job waits for nodes takes no new process.
  const bool waiting = queue && !queue->waiting.empty();
  for (const PolicyHost& h : hosts)
    snap.room[h.name] = h.draining || (waiting && h.releasable) ? 0 : std::max(0, h.slots - h.used);
  if (queue) {  // idle nodes: since when
    for (auto it = idle_since_.begin(); it != idle_since_.end();)
      it = std::any_of(queue->idle.begin(), queue->idle.end(),
                       [&](const PolicyQueue::Idle& n) { return n.name == it->first; })
               ? std::next(it)
               : idle_since_.erase(it);
    for (const PolicyQueue::Idle& n : queue->idle) idle_since_.emplace(n.name, now);
  }

  for (const PolicyJob& job : jobs) {  // shrinks for the queue still under way, and possible
    JobState& s = jobs_[job.name];
    if (!job.pending) s.leaving = 0;
    snap.leaving += s.leaving;
    if (job.pending) continue;
    std::map<std::string, int> mine;
    for (const auto& h : job.hosts) ++mine[h];
    int left = job.size;
    for (const auto& [name, count] : mine) {
      auto it = snap.by_name.find(name);
      if (it == snap.by_name.end() || !it->second->releasable || it->second->used != count ||
          left - count < min_size(job))
        continue;
      left -= count;
      ++snap.can_leave;
    }
  }

  // A job that is not in the snapshot any more has ended: its state goes (pcmd runs for months,
  // and next_wake looks at every state).
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const bool live = std::any_of(jobs.begin(), jobs.end(),
                                  [&](const PolicyJob& j) { return j.name == it->first; });
    it = live ? std::next(it) : jobs_.erase(it);
  }

  std::vector<PolicyDecision> out;
  std::string margin_how;
  const double margin = checkpoint_margin(jobs, &margin_how);
  const bool ending = near_time_limit(snap, margin);
  for (const PolicyJob& job : jobs) {
    JobState& s = jobs_[job.name];
    if (ending && !s.checkpoint_asked && job.size > 0) {
      s.checkpoint_asked = true;
      PolicyDecision d;
      d.job = job.name;
      d.checkpoint = true;
      d.reason = fmt::format(
          "the allocation's time limit is {:.0f} s away (margin {:.0f} s: {}): a version to "
          "restart from",
          queue->seconds_left, margin, margin_how);
      out.push_back(std::move(d));
    }
    if (job.pending || job.size <= 0 || job.hosts.size() != static_cast<std::size_t>(job.size))
      continue;
    if (s.trial) {
      if (auto d = judge_trial(now, job, s)) out.push_back(std::move(*d));
      continue;
    }
    if (now - s.last < config_.min_interval_s || now - s.failed < config_.retry_after_s) continue;
    // 1. Leave a loaded host (the last of the job's hosts that is).
    std::string from;
    for (const std::string& h : job.hosts)
      if (loaded(h, now)) from = h;
    if (!from.empty()) {
      if (auto d = leave_host(snap, job, from)) {
        s.last = now;
        out.push_back(std::move(*d));
      }
      continue;
    }
    // 2. Leave a node for a job waiting in Slurm's queue.
    if (auto d = shrink_for_queue(snap, job)) {
      s.last = now;
      out.push_back(std::move(*d));
      continue;
    }
    // 3. Grow, then measure: onto a free slot, else onto a node Slurm has idle (not with the
    // time limit near: the job is about to end).
    if (ending) continue;
    if (auto d = grow(snap, job, s)) {
      out.push_back(std::move(*d));
    } else if (auto e = grow_onto_idle(snap, job, s)) {
      out.push_back(std::move(*e));
    }
  }
  return out;
}

}  // namespace pcm::daemon
