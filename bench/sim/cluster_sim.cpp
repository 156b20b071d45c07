// cluster_sim.cpp — the cluster simulation (cluster_sim.h): Slurm's part (queue, EASY, nodes),
// the jobs' part (work, speed-up, reconfigurations) and pcmd's part, which is pcmd's Policy.
#include "cluster_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

namespace pcm::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-6;

using Kind = proto::Command::Kind;

struct Running {
  std::size_t job = 0;          // index into the jobs
  std::vector<int> nodes;       // by rank; during a reconfiguration, the old and the new ones
  int size = 0;                 // the size it computes at
  double work = 0;              // left, in seconds on one node
  double busy_until = -1;       // reconfiguring until then (< 0: not)
  std::vector<int> release;     // nodes given back when the reconfiguration ends
  int to = 0;                   // the size after it
  double started = 0;           // s
  std::vector<int> started_on;  // the nodes Slurm allocated it
  std::vector<int> ghosts;      // of those, the ones given back by a shrink (limit_s)
};

class Engine {
 public:
  Engine(const std::vector<Job>& jobs, const Config& config)
      : jobs_(jobs), c_(config), policy_(config.policy), owner_(config.nodes, -1) {
    free_ = c_.nodes;
    for (int n = 0; n < c_.nodes; ++n) names_.push_back(fmt::format("n{}", n));
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].size < 1 || jobs[i].size > c_.nodes || !(jobs[i].run >= 0))
        throw std::invalid_argument(fmt::format("job {}: size {} on {} nodes, run {} s", jobs[i].id,
                                                jobs[i].size, c_.nodes, jobs[i].run));
      order_.push_back(i);
      JobResult jr;
      jr.id = jobs[i].id;
      jr.submit = jobs[i].submit;
      jr.size = jobs[i].size;
      jr.malleable = jobs[i].malleable;
      r_.jobs.push_back(jr);
    }
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return jobs[a].submit < jobs[b].submit; });
  }

  Result run() {
    t_ = order_.empty() ? 0 : jobs_[order_.front()].submit;
    for (;;) {
      end_reconfigs();
      finish();
      arrive();
      maybe_schedule();
      if (c_.backfill_interval_s > 0 && std::fabs(t_ - next_cycle()) < kEps) {
        in_cycle_ = true;
        schedule();
        in_cycle_ = false;
      }
      if (t_ >= next_policy_ - kEps) {
        policy_round();
        maybe_schedule();
      }
      if (c_.check) check_book();
      if (next_ == order_.size() && queue_.empty() && running_.empty()) break;
      const double tn = next_time();
      if (!std::isfinite(tn))
        throw std::logic_error(
            fmt::format("t={}: {} job(s) queued, nothing runs or arrives", t_, queue_.size()));
      advance(tn - t_);
      t_ = std::max(t_, tn);
    }
    return finish_result();
  }

 private:
  // Config::slowdown's factor for a job computing on n nodes (1 when not shared).
  double slow(int n) const {
    if (c_.slowdown.empty()) return 1;
    int busy = 0;
    for (const Running& o : running_) busy += o.size;
    const auto it = c_.slowdown.find({n, busy});
    return it == c_.slowdown.end() ? 1 : it->second;
  }
  double rate(const Running& r) const {
    return speedup(jobs_[r.job].serial, r.size) / slow(r.size);
  }

  // The time it ends if nothing changes (after a reconfiguration under way, at its new size).
  double end_estimate(const Running& r) const {
    if (r.busy_until >= 0)
      return r.busy_until + r.work * slow(r.to) / speedup(jobs_[r.job].serial, r.to);
    return t_ + r.work / rate(r);
  }

  // Something the policy may act on happened: a round soon (its own pcmd's clock decides which
  // round acts, Config::pcmd_per_job; a job that started gets its pcmd now).
  void event() {
    next_policy_ =
        std::min(next_policy_, c_.pcmd_per_job ? t_ : std::max(t_, last_round_ + c_.period_s));
  }

  // Something a queued job may start on happened: Slurm's scheduler runs sched_latency_s later.
  void kick() {
    if (c_.sched_latency_s > 0 && !std::isfinite(sched_due_)) sched_due_ = t_ + c_.sched_latency_s;
  }

  // Slurm's next backfill cycle at or after now.
  double next_cycle() const {
    const double k = std::ceil((t_ - c_.backfill_phase_s) / c_.backfill_interval_s - kEps);
    return c_.backfill_phase_s + k * c_.backfill_interval_s;
  }

  void maybe_schedule() {
    if (c_.sched_latency_s <= 0) return schedule();
    if (t_ < sched_due_ - kEps) return;
    sched_due_ = kInf;
    schedule();
  }

  void arrive() {
    while (next_ < order_.size() && jobs_[order_[next_]].submit <= t_ + kEps) {
      queue_.push_back(order_[next_++]);
      event();
      kick();
    }
  }

  void finish() {
    for (std::size_t i = 0; i < running_.size();) {
      Running& r = running_[i];
      if (r.busy_until >= 0 || r.work > kEps * std::max(1.0, rate(r))) {
        ++i;
        continue;
      }
      for (int n : r.nodes) give_back(n, r.job);
      r_.jobs[r.job].end = t_;
      running_[i] = std::move(running_.back());
      running_.pop_back();
      event();
      kick();
    }
  }

  void end_reconfigs() {
    for (Running& r : running_) {
      if (r.busy_until < 0 || r.busy_until > t_ + kEps) continue;
      for (int n : r.release) {
        give_back(n, r.job);
        r.nodes.erase(std::find(r.nodes.begin(), r.nodes.end(), n));
        if (std::find(r.started_on.begin(), r.started_on.end(), n) != r.started_on.end())
          r.ghosts.push_back(n);
      }
      r.release.clear();
      r.size = r.to;
      r.busy_until = -1;
      event();
      kick();
    }
  }

  void give_back(int node, std::size_t job) {
    if (owner_[static_cast<std::size_t>(node)] != static_cast<long>(job))
      throw std::logic_error(fmt::format("t={}: node {} given back by job {}, held by {}", t_, node,
                                         jobs_[job].id, owner_[static_cast<std::size_t>(node)]));
    owner_[static_cast<std::size_t>(node)] = -1;
    ++free_;
  }

  // count free nodes, lowest first (none of those `avoid` marks), now held by job.
  std::vector<int> take(int count, std::size_t job, const std::vector<bool>* avoid = nullptr) {
    std::vector<int> out;
    for (int n = 0; n < c_.nodes && static_cast<int>(out.size()) < count; ++n)
      if (owner_[static_cast<std::size_t>(n)] < 0 &&
          !(avoid && (*avoid)[static_cast<std::size_t>(n)])) {
        owner_[static_cast<std::size_t>(n)] = static_cast<long>(job);
        out.push_back(n);
      }
    if (static_cast<int>(out.size()) != count)
      throw std::logic_error(fmt::format("t={}: {} nodes wanted, {} free", t_, count, free_));
    free_ -= count;
    return out;
  }

  // The nodes job j would start on now (0: it does not fit).
  int fits(const Job& j) const {
    if (j.size <= free_) return j.size;
    return c_.moldable && j.malleable && j.min_size <= free_ ? free_ : 0;
  }

  void start(std::size_t j, int size, const std::vector<bool>* avoid = nullptr) {
    Running r;
    r.job = j;
    r.size = size;
    r.started = t_;
    r.nodes = take(r.size, j, avoid);
    r.started_on = r.nodes;
    r.work = jobs_[j].run * speedup(jobs_[j].serial, jobs_[j].size);
    r_.jobs[j].start = t_;
    r_.jobs[j].max_size = r.size;
    running_.push_back(std::move(r));
    event();
  }

  // FCFS with EASY backfilling.
  void schedule() {
    while (!queue_.empty() && fits(jobs_[queue_.front()]) > 0) {
      start(queue_.front(), fits(jobs_[queue_.front()]));
      queue_.erase(queue_.begin());
    }
    if (queue_.empty()) return;
    if (c_.limit_s > 0) return backfill_by_limits();
    // The head's reservation: when enough nodes will be free, and how many it leaves spare.
    std::vector<std::pair<double, int>> frees;
    for (const Running& r : running_) {
      if (r.busy_until >= 0 && !r.release.empty())
        frees.emplace_back(r.busy_until, static_cast<int>(r.release.size()));
      frees.emplace_back(end_estimate(r), static_cast<int>(r.nodes.size() - r.release.size()));
    }
    std::sort(frees.begin(), frees.end());
    const Job& head = jobs_[queue_.front()];
    const int need = c_.moldable && head.malleable ? head.min_size : head.size;
    int avail = free_;
    double shadow = kInf;
    for (const auto& [at, n] : frees) {
      avail += n;
      if (avail >= need) {
        shadow = at;
        break;
      }
    }
    int extra = avail - need;
    for (std::size_t i = 1; i < queue_.size() && free_ > 0;) {
      const Job& j = jobs_[queue_[i]];
      const int k = fits(j);
      const double run = j.run * speedup(j.serial, j.size) / speedup(j.serial, std::max(1, k));
      const bool before = t_ + run <= shadow + kEps;
      if (k > 0 && (before || k <= extra)) {
        if (!before) extra -= k;
        start(queue_[i], k);
        queue_.erase(queue_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }

  void backfill_by_limits();
  daemon::PolicyJob policy_job(const Running& r, std::vector<daemon::PolicyHost>& hosts) const;
  daemon::PolicyQueue read_queue() const;
  bool decide(daemon::Policy& policy, const std::vector<daemon::PolicyJob>& jobs,
              const std::vector<daemon::PolicyHost>& hosts, const std::vector<Running*>& by_job,
              daemon::PolicyQueue q);
  void policy_round();
  void pcmd_rounds();
  void apply(daemon::Policy& policy, const daemon::PolicyDecision& d, Running& r);

  double next_time() const {
    double tn = next_ < order_.size() ? jobs_[order_[next_]].submit : kInf;
    bool malleable = false;
    for (const Running& r : running_) {
      tn = std::min(tn, r.busy_until >= 0 ? r.busy_until : end_estimate(r));
      malleable = malleable || jobs_[r.job].malleable;
    }
    if (malleable) tn = std::min(tn, next_policy_);
    tn = std::min(tn, sched_due_);
    if (c_.backfill_interval_s > 0 && queue_.size() > 1 && free_ > 0) {
      const double k = std::floor((t_ - c_.backfill_phase_s) / c_.backfill_interval_s + kEps) + 1;
      tn = std::min(tn, c_.backfill_phase_s + k * c_.backfill_interval_s);
    }
    return std::max(tn, t_);
  }

  void advance(double dt) {
    if (dt <= 0) return;
    for (Running& r : running_) {
      r_.held_node_s += dt * static_cast<double>(r.nodes.size());
      if (r.busy_until < 0) r.work = std::max(0.0, r.work - dt * rate(r));
    }
  }

  void check_book() {
    ++r_.checks;
    std::vector<long> seen(owner_.size(), -1);
    for (const Running& r : running_)
      for (int n : r.nodes) {
        auto& s = seen[static_cast<std::size_t>(n)];
        if (s >= 0 || owner_[static_cast<std::size_t>(n)] != static_cast<long>(r.job))
          throw std::logic_error(
              fmt::format("t={}: node {} double-booked or out of the book", t_, n));
        s = static_cast<long>(r.job);
      }
    const long held = std::count_if(seen.begin(), seen.end(), [](long s) { return s >= 0; });
    if (held + free_ != c_.nodes || std::count(owner_.begin(), owner_.end(), -1) != free_)
      throw std::logic_error(
          fmt::format("t={}: {} held + {} free != {} nodes", t_, held, free_, c_.nodes));
  }

  Result finish_result() {
    double first = kInf, last = 0;
    for (const JobResult& j : r_.jobs) {
      if (j.end < 0) throw std::logic_error(fmt::format("job {} never ended", j.id));
      first = std::min(first, j.submit);
      last = std::max(last, j.end);
    }
    r_.makespan = r_.jobs.empty() ? 0 : last - first;
    r_.utilisation = r_.makespan > 0 ? r_.held_node_s / (c_.nodes * r_.makespan) : 0;
    return std::move(r_);
  }

  const std::vector<Job>& jobs_;
  Config c_;
  daemon::Policy policy_;
  std::vector<long> owner_;  // node: the index of the job holding it, -1 if free
  std::vector<std::string> names_;
  int free_ = 0;
  std::vector<std::size_t> order_;  // by submission
  std::size_t next_ = 0;            // the next to arrive
  std::vector<std::size_t> queue_;  // waiting, in submission order
  std::vector<Running> running_;
  double t_ = 0;
  double next_policy_ = 0;
  double last_round_ = -kInf;
  double sched_due_ = kInf;   // Slurm's scheduler runs then (sched_latency_s)
  bool in_cycle_ = false;     // a backfill cycle runs (backfill_interval_s)
  daemon::PolicyQueue read_;  // the queue as pcmd read it last (queue_read_s)
  double next_read_ = 0;      // and when it reads it next
  // Config::pcmd_per_job: the pcmd of each running malleable job (by its index).
  struct Pcmd {
    Pcmd(const daemon::PolicyConfig& config, double start)
        : policy(config), next_round(start), next_read(start) {}
    daemon::Policy policy;
    double next_round, next_read;
    std::optional<daemon::PolicyQueue> taken;  // read in the last round's pass
    daemon::PolicyQueue seen;                  // what its rounds see
  };
  std::map<std::size_t, Pcmd> pcmds_;
  Result r_;
};

// Slurm's backfill (sched/backfill with select/cons_tres) when every job has a time limit: the
// queue's head gets a reservation at the earliest time enough nodes are free by the running
// jobs' limits, on the lowest of the nodes free then; a later job starts now only on free nodes
// outside it (its own limit, equal for every job, never ends before the reservation begins).
void Engine::backfill_by_limits() {
  if (c_.backfill_interval_s > 0 && !in_cycle_) return;
  std::vector<std::pair<double, std::size_t>> ends;  // (limit's end, index into running_)
  for (std::size_t i = 0; i < running_.size(); ++i)
    ends.emplace_back(running_[i].started + c_.limit_s, i);
  std::sort(ends.begin(), ends.end());
  const Job& head = jobs_[queue_.front()];
  const int need = c_.moldable && head.malleable ? head.min_size : head.size;
  // A node a job gave back by a shrink (scontrol update NodeList) counts, in the plan, as its
  // own until its limit, as Slurm's backfill planned in bench/slurm.py's runs; it is free now.
  std::vector<bool> avail(static_cast<std::size_t>(c_.nodes), false);
  for (int n = 0; n < c_.nodes; ++n)
    avail[static_cast<std::size_t>(n)] = owner_[static_cast<std::size_t>(n)] < 0;
  for (const Running& r : running_)
    for (int n : r.ghosts) avail[static_cast<std::size_t>(n)] = false;
  double shadow = t_;
  auto count = [&] { return static_cast<int>(std::count(avail.begin(), avail.end(), true)); };
  for (std::size_t k = 0; k < ends.size() && count() < need; ++k) {
    shadow = ends[k].first;
    const Running& r = running_[ends[k].second];
    for (int n : r.nodes) avail[static_cast<std::size_t>(n)] = true;
    for (int n : r.ghosts)
      if (owner_[static_cast<std::size_t>(n)] < 0) avail[static_cast<std::size_t>(n)] = true;
  }
  std::vector<bool> reserved(avail.size(), false);
  for (int n = 0, got = 0; n < c_.nodes && got < need; ++n)
    if (avail[static_cast<std::size_t>(n)]) {
      reserved[static_cast<std::size_t>(n)] = true;
      ++got;
    }
  for (std::size_t i = 1; i < queue_.size() && free_ > 0;) {
    const Job& j = jobs_[queue_[i]];
    int spare = 0;
    for (int n = 0; n < c_.nodes; ++n)
      spare += owner_[static_cast<std::size_t>(n)] < 0 && !reserved[static_cast<std::size_t>(n)];
    const bool before = t_ + c_.limit_s <= shadow + kEps;
    const int k = before ? fits(j) : (j.size <= spare ? j.size : 0);
    if (k > 0) {
      start(queue_[i], k, before ? nullptr : &reserved);
      queue_.erase(queue_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

// What a pcmd tells its Policy of r (PolicyJob) and of r's nodes (appended to hosts).
daemon::PolicyJob Engine::policy_job(const Running& r,
                                     std::vector<daemon::PolicyHost>& hosts) const {
  const Job& j = jobs_[r.job];
  daemon::PolicyJob pj;
  pj.name = std::to_string(j.id);
  pj.size = static_cast<int>(r.nodes.size());
  for (int n : r.nodes) {
    pj.hosts.push_back(names_[static_cast<std::size_t>(n)]);
    daemon::PolicyHost h;
    h.name = names_[static_cast<std::size_t>(n)];
    h.slots = h.used = 1;
    // A node Slurm gave: back to Slurm once left; under Slurm (limit_s) not the job's first
    // node, its batch host, where pcmd runs (pcmd/slurm/slurm_growth.cpp: releasable).
    h.releasable = c_.limit_s <= 0 || n != r.started_on.front();
    hosts.push_back(std::move(h));
  }
  pj.rate = 100 * rate(r);  // iterations/s, up to a constant
  pj.pending = r.busy_until >= 0;
  pj.min_size = j.min_size;
  pj.max_size = j.max_size;
  return pj;
}

// Slurm's queue and idle nodes as squeue and sinfo show them now.
daemon::PolicyQueue Engine::read_queue() const {
  daemon::PolicyQueue q;
  for (std::size_t i : queue_) q.waiting.push_back({std::to_string(jobs_[i].id), jobs_[i].size});
  for (int n = 0; n < c_.nodes; ++n)
    if (owner_[static_cast<std::size_t>(n)] < 0)
      q.idle.push_back({names_[static_cast<std::size_t>(n)], 1});
  return q;
}

// One round of `policy` over jobs (by_job: their Running) with the queue as read: the decisions
// carried out, the notes kept. Whether it decided or noted anything.
bool Engine::decide(daemon::Policy& policy, const std::vector<daemon::PolicyJob>& jobs,
                    const std::vector<daemon::PolicyHost>& hosts,
                    const std::vector<Running*>& by_job, daemon::PolicyQueue q) {
  // A pcmd never reads its own job as waiting (it runs inside it): a job the policy now runs is
  // out of the queue read before it started.
  q.waiting.erase(std::remove_if(q.waiting.begin(), q.waiting.end(),
                                 [&](const auto& w) {
                                   return std::any_of(jobs.begin(), jobs.end(), [&](const auto& j) {
                                     return j.name == w.id;
                                   });
                                 }),
                  q.waiting.end());
  const auto decisions = policy.decide(t_, jobs, hosts, &q);
  const auto notes = policy.take_notes();
  for (const auto& [job, text] : notes) {
    ++r_.kept;
    if (c_.keep_log) r_.log.push_back(fmt::format("{:.0f} job {}: {}", t_, job, text));
  }
  for (const daemon::PolicyDecision& d : decisions) {
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (jobs[i].name == d.job) apply(policy, d, *by_job[i]);
  }
  return !decisions.empty() || !notes.empty();
}

// pcmd's round (CommandDesk::policy_round): the snapshot, the decisions, their reasons.
void Engine::policy_round() {
  if (c_.pcmd_per_job) return pcmd_rounds();
  std::vector<daemon::PolicyJob> jobs;
  std::vector<daemon::PolicyHost> hosts;
  std::vector<Running*> by_job;
  double attach = kInf;  // the next job the policy takes on (attach_s)
  for (Running& r : running_) {
    if (!jobs_[r.job].malleable) continue;
    if (t_ < r.started + c_.attach_s - kEps) {
      attach = std::min(attach, r.started + c_.attach_s);
      continue;
    }
    jobs.push_back(policy_job(r, hosts));
    by_job.push_back(&r);
  }
  last_round_ = t_;
  if (jobs.empty()) {
    next_policy_ = attach;  // until an event
    return;
  }
  if (c_.queue_read_s <= 0 || t_ >= next_read_ - kEps) {
    read_ = read_queue();
    if (c_.queue_read_s > 0)
      next_read_ = (std::floor(t_ / c_.queue_read_s + kEps) + 1) * c_.queue_read_s;
  }
  next_policy_ = decide(policy_, jobs, hosts, by_job, read_)
                     ? t_ + c_.period_s
                     : std::max(t_ + c_.period_s, policy_.next_wake(t_));
  if (c_.queue_read_s > 0)
    next_policy_ = std::min(next_policy_, std::max(t_ + c_.period_s, next_read_));
  next_policy_ = std::min(next_policy_, attach);
}

// Config::pcmd_per_job: every malleable job's pcmd whose round is due now has it, on its own
// clock; the reading it starts in the same pass is seen from its next round.
void Engine::pcmd_rounds() {
  for (auto it = pcmds_.begin(); it != pcmds_.end();)
    it = std::any_of(running_.begin(), running_.end(),
                     [&](const Running& r) { return r.job == it->first; })
             ? std::next(it)
             : pcmds_.erase(it);
  next_policy_ = kInf;
  for (Running& r : running_) {
    if (!jobs_[r.job].malleable) continue;
    Pcmd& p = pcmds_.try_emplace(r.job, c_.policy, r.started).first->second;
    if (t_ >= p.next_round - kEps) {
      p.next_round += c_.period_s * (std::floor((t_ - p.next_round) / c_.period_s + kEps) + 1);
      if (p.taken) p.seen = std::move(*std::exchange(p.taken, std::nullopt));
      if (t_ >= r.started + c_.attach_s - kEps) {
        std::vector<daemon::PolicyHost> hosts;
        std::vector<daemon::PolicyJob> jobs{policy_job(r, hosts)};
        decide(p.policy, jobs, hosts, {&r}, c_.queue_read_s > 0 ? p.seen : read_queue());
      }
      if (c_.queue_read_s > 0 && t_ >= p.next_read - kEps) {
        p.taken = read_queue();
        p.next_read +=
            c_.queue_read_s * (std::floor((t_ - p.next_read) / c_.queue_read_s + kEps) + 1);
      }
    }
    next_policy_ = std::min(next_policy_, p.next_round);
  }
  last_round_ = t_;
}

// A decision carried out as pcmd and Slurm would: a growth takes idle nodes now, a shrink gives
// its nodes back when the resize is done; the job stops for the resize's cost.
void Engine::apply(daemon::Policy& policy, const daemon::PolicyDecision& d, Running& r) {
  const int from = static_cast<int>(r.nodes.size());
  const Job& j = jobs_[r.job];
  auto refuse = [&](const std::string& why) {
    ++r_.refused;
    policy.failed(d.job, t_);
    if (c_.keep_log)
      r_.log.push_back(
          fmt::format("{:.0f} job {}: refused ({}) because {}", t_, d.job, why, d.reason));
  };
  if (d.checkpoint) return;  // no time limit here
  if (d.kind != Kind::kResize || d.size < 1 || d.size == from) return refuse("not a resize");
  if (d.size > from && d.size - from > free_) return refuse("not enough idle nodes");
  ++r_.decisions;
  if (d.size > from) {
    ++r_.grows;
    for (int n : take(d.size - from, r.job)) r.nodes.push_back(n);
  } else {
    const bool undo = d.reason.rfind("undo", 0) == 0;
    ++(undo ? r_.undone : r_.shrinks);
    std::vector<int> keep = r.nodes;
    if (!d.avoid.empty()) {
      auto it = std::find_if(keep.begin(), keep.end(),
                             [&](int n) { return names_[static_cast<std::size_t>(n)] == d.avoid; });
      if (it != keep.end()) {
        r.release.push_back(*it);
        keep.erase(it);
      }
    }
    while (static_cast<int>(keep.size()) > d.size) {
      r.release.push_back(keep.back());
      keep.pop_back();
    }
  }
  const double cost = c_.cost.seconds(j.size, from, d.size);
  r.busy_until = t_ + cost;
  r.to = d.size;
  JobResult& jr = r_.jobs[r.job];
  ++jr.reconfigs;
  jr.reconfig_node_s += cost * std::max(from, d.size);
  jr.max_size = std::max(jr.max_size, d.size);
  if (c_.keep_log)
    r_.log.push_back(fmt::format("{:.0f} job {}: resize {} -> {} ({:.2f} s) because {}", t_, d.job,
                                 from, d.size, cost, d.reason));
  event();
}

}  // namespace

double speedup(double serial, int n) { return 1.0 / (serial + (1.0 - serial) / std::max(1, n)); }

double CostModel::seconds(int size, int from, int to) const {
  const double gib = gib_per_node * size / std::max(1, std::min(from, to));
  return factor * (fixed_s + per_gib_s * gib) + (to > from ? grow_s : 0);
}

Result simulate(const std::vector<Job>& jobs, const Config& config) {
  return Engine(jobs, config).run();
}

}  // namespace pcm::sim
