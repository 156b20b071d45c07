// inventory.cpp — pcmd's hosts: the inventory and its requests (host_add, host_list, host_drain,
// host_remove, topology), where new processes go (spread/concentrate, common/hosts.h), and the
// drains that move every process off a host, one queued command at a time.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "error.h"
#include "pcm_types.h"
#include "server.h"

namespace pcm::detail {

using proto::json;

namespace {
constexpr double kUnknownLatency = 1e9;  // hosts with no latency known come last
constexpr std::size_t kMaxSite = 64;
}  // namespace

// ---- the inventory -------------------------------------------------------------------------

void Server::add_host(const std::string& name, int slots, const std::string& site,
                      std::optional<double> latency_ms) {
  if (InventoryHost* h = find_host(name)) {
    h->slots = slots;
    h->site = site;
    h->latency_ms = latency_ms;
  } else {
    InventoryHost added;
    added.name = name;
    added.slots = slots;
    added.site = site;
    added.latency_ms = latency_ms;
    inventory_.push_back(std::move(added));
  }
  prober_->watch(name);
}

InventoryHost* Server::find_host(const std::string& name) {
  for (auto& h : inventory_)
    if (h.name == name) return &h;
  return nullptr;
}

std::vector<std::string> Server::host_names() const {
  std::vector<std::string> names;
  for (const auto& h : inventory_) names.push_back(h.name);
  return names;
}

// Processes of running jobs (but `except`) on host.
int Server::used_slots(const std::string& host, const Job* except) const {
  int used = 0;
  for (const auto& [name, job] : jobs_) {
    if (&job == except || job.state != JobState::kRunning) continue;
    used += static_cast<int>(std::count(job.hosts.begin(), job.hosts.end(), host));
  }
  return used;
}

// Free slots on host, counting the processes of every running job but `except`; 0 for a host
// outside the inventory or draining.
int Server::free_slots(const std::string& host, const Job* except) const {
  for (const auto& h : inventory_)
    if (h.name == host) return h.draining ? 0 : h.slots - used_slots(host, except);
  return 0;
}

// Placement order: the declared latency, else the measured round trip rounded to 0.1 ms (so that
// noise does not reorder hosts from one command to the next), else last.
double Server::sort_latency(const InventoryHost& h) const {
  if (h.latency_ms) return *h.latency_ms;
  if (auto rtt = prober_->rtt_ms(h.name)) return std::round(*rtt * 10.0) / 10.0;
  return kUnknownLatency;
}

// The hosts new processes may go to: not draining, with the processes of other jobs counted.
std::vector<Host> Server::placement_hosts(const Job* except) const {
  std::vector<Host> out;
  for (const auto& h : inventory_) {
    if (h.draining) continue;
    out.push_back(
        Host{h.name, h.slots, std::min(used_slots(h.name, except), h.slots), sort_latency(h)});
  }
  return out;
}

// The command's "placement", else the job's, else pcmd's.
Placement Server::placement_for(const Job& job, const json& req) const {
  if (auto p = proto::opt_string(req, "placement", 32)) {
    auto parsed = parse_placement(*p);
    if (!parsed) fail(PCM_ERR_REFUSED, "unknown placement '{}': spread or concentrate", *p);
    return *parsed;
  }
  return job.placement.value_or(options_.placement);
}

// Hosts for a new world when the operator named a host: new rank i stays on the host of old rank
// source_of_new_rank[i] (or goes to preferred_host for the ranks from preferred_new on that a
// split or growth creates) while that host has room; otherwise the first inventory host with
// room. Throws if the inventory is full.
std::vector<std::string> Server::place_near(const Job& job,
                                            const std::vector<int>& source_of_new_rank,
                                            int preferred_new,
                                            const std::string& preferred_host) const {
  std::map<std::string, int> room;
  for (const auto& h : inventory_) room[h.name] = free_slots(h.name, &job);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < source_of_new_rank.size(); ++i) {
    int src = source_of_new_rank[i];
    // The ranks a split or a growth creates share the source of the first of them; the ranks
    // after a split's new ones keep their own hosts.
    bool created = static_cast<int>(i) >= preferred_new &&
                   src == source_of_new_rank[static_cast<std::size_t>(preferred_new)];
    std::string want = !preferred_host.empty() && created
                           ? preferred_host
                           : (src >= 0 && src < job.size ? job.hosts[src] : std::string());
    if (room.count(want) == 0 || room[want] <= 0) {
      want.clear();
      for (const auto& h : inventory_)
        if (room[h.name] > 0) {
          want = h.name;
          break;
        }
    }
    if (want.empty())
      fail(PCM_ERR_REFUSED, "no free slot for {} processes in pcmd's inventory ({})",
           source_of_new_rank.size(), fmt::join(host_names(), ", "));
    --room[want];
    out.push_back(want);
  }
  return out;
}

// Where a migration of rank goes when the operator names no host: another host with room
// (never the rank's own, never a draining one). spread: the one holding the fewest of this
// job's processes; concentrate: the most; ties by latency, then name. "" when none has room.
std::string Server::migration_target(const Job& job, int rank, Placement p) const {
  std::string best;
  int best_count = 0;
  double best_latency = 0;
  for (const auto& h : inventory_) {
    if (h.draining || h.name == job.hosts[rank] || free_slots(h.name, nullptr) <= 0) continue;
    int count = static_cast<int>(std::count(job.hosts.begin(), job.hosts.end(), h.name));
    double latency = sort_latency(h);
    bool better = best.empty() ||
                  (p == Placement::kSpread ? count < best_count : count > best_count) ||
                  (count == best_count &&
                   (latency < best_latency || (latency == best_latency && h.name < best)));
    if (better) {
      best = h.name;
      best_count = count;
      best_latency = latency;
    }
  }
  if (best.empty())
    fail(PCM_ERR_REFUSED, "no other host of pcmd's inventory has a free slot for rank {} ({})",
         rank, fmt::join(host_names(), ", "));
  return best;
}

// The request's "host", which must be in the inventory and not draining; "" when it names none.
std::string Server::requested_host(const json& req) const {
  auto wanted = proto::opt_string(req, "host", proto::kMaxHost);
  if (!wanted) return "";
  for (const auto& h : inventory_) {
    if (h.name != *wanted) continue;
    if (h.draining) fail(PCM_ERR_REFUSED, "host '{}' is being drained", *wanted);
    return *wanted;
  }
  fail(PCM_ERR_REFUSED, "host '{}' is not in pcmd's inventory ({})", *wanted,
       fmt::join(host_names(), ", "));
}

// ---- requests ------------------------------------------------------------------------------

json Server::op_host(const std::string& op, const json& req) {
  if (op == "host_list") {
    json hosts = json::array();
    for (const auto& h : inventory_) {
      int used = used_slots(h.name, nullptr);
      auto rtt = prober_->rtt_ms(h.name);
      hosts.push_back(json{
          {"host", h.name},
          {"slots", h.slots},
          {"used", used},
          {"free", std::max(h.slots - used, 0)},
          {"site", h.site},
          {"latency", h.latency_ms ? json(*h.latency_ms) : json(nullptr)},
          {"rtt", rtt ? json(*rtt) : json(nullptr)},
          {"state", h.lost       ? "lost"
                    : h.draining ? "draining"
                                 : "up"},
          {"agent", h.agent ? json{{"cores", h.cores},
                                   {"busy", h.busy},
                                   {"runnable", h.runnable},
                                   {"load1", h.load1},
                                   {"seconds_since_report",
                                    std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                                  h.last_report)
                                        .count()}}
                            : json(nullptr)}});
    }
    return json{{"ok", true}, {"hosts", hosts}, {"placement", placement_name(options_.placement)}};
  }
  auto name = proto::get_string(req, "host", proto::kMaxHost);
  if (!proto::valid_host(name)) fail(PCM_ERR_ARG, "invalid host name '{}'", name);
  InventoryHost* host = find_host(name);
  // The jobs with processes on the host, for messages.
  auto users = [&] {
    std::vector<std::string> names;
    for (const auto& [jname, job] : jobs_)
      if (job.state == JobState::kRunning &&
          std::count(job.hosts.begin(), job.hosts.end(), name) > 0)
        names.push_back(jname);
    return names;
  };
  if (op == "host_add") {
    int slots = static_cast<int>(proto::get_int(req, "slots", 1, kMaxSlots));
    std::string site = proto::opt_string(req, "site", kMaxSite).value_or("default");
    if (!proto::valid_name(site)) fail(PCM_ERR_ARG, "invalid site name '{}'", site);
    std::optional<double> latency;
    if (auto it = req.find("latency"); it != req.end() && !it->is_null()) {
      if (!it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > 1e6)
        fail(PCM_ERR_ARG, "field \"latency\" must be a number of milliseconds in [0, 1e6]");
      latency = it->get<double>();
    }
    if (host && host->draining) fail(PCM_ERR_REFUSED, "host '{}' is being drained", name);
    int used = used_slots(name, nullptr);
    if (slots < used)
      fail(PCM_ERR_REFUSED, "host '{}' runs {} processes ({}): cannot give it {} slots", name, used,
           fmt::join(users(), ", "), slots);
    bool existed = host != nullptr;
    if (!existed && inventory_.size() >= kMaxHosts)
      fail(PCM_ERR_REFUSED, "pcmd's inventory is full ({} hosts)", inventory_.size());
    add_host(name, slots, site, latency);
    log_->info("host {} {}: {} slots, site {}", name, existed ? "updated" : "added", slots, site);
    return json{{"ok", true}, {"host", name}, {"added", !existed}};
  }
  if (!host) fail(PCM_ERR_REFUSED, "host '{}' is not in pcmd's inventory", name);
  if (op == "host_remove") {
    if (used_slots(name, nullptr) > 0)
      fail(PCM_ERR_REFUSED, "host '{}' still runs processes of {}: drain it first", name,
           fmt::join(users(), ", "));
    prober_->forget(name);
    inventory_.erase(inventory_.begin() + (host - inventory_.data()));
    log_->info("host {} removed", name);
    return proto::ok_reply();
  }
  if (!host->draining) start_drain(*host);
  return json{{"ok", true}, {"host", name}, {"draining", true}};
}

// Every job on the host must have somewhere to go.
void Server::start_drain(InventoryHost& target) {
  const std::string name = target.name;
  int room = 0, others = 0;
  for (const auto& h : inventory_) {
    if (h.name == name || h.draining) continue;
    ++others;
    room += std::max(free_slots(h.name, nullptr), 0);
  }
  if (others == 0)
    fail(PCM_ERR_REFUSED, "host '{}' is the only host left: there is nowhere to drain it to", name);
  for (const auto& [jname, job] : jobs_) {
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
  log_->info("host {}: drain started ({} processes)", name, used_slots(name, nullptr));
  progress_drains();
}

// ---- agents --------------------------------------------------------------------------------

// agent_report: a host's agent joins (first report, "join": true) or reports; agent_leave: its
// host is drained, then leaves the inventory.
json Server::op_agent(const std::string& op, const json& req) {
  auto name = proto::get_string(req, "host", proto::kMaxHost);
  if (!proto::valid_host(name)) fail(PCM_ERR_ARG, "invalid host name '{}'", name);
  InventoryHost* host = find_host(name);
  if (op == "agent_leave") {
    if (!host || !host->agent) fail(PCM_ERR_REFUSED, "host '{}' has no agent in pcmd", name);
    if (!host->draining) {
      start_drain(*host);
      log_->info("host {}: its agent leaves; the host is drained first", name);
      changed();
    }
    return json{{"ok", true}, {"host", name}, {"draining", true}};
  }
  const int cores = static_cast<int>(proto::get_int(req, "cores", 1, kMaxSlots));
  auto number = [&](const char* key, double hi) {
    auto it = req.find(key);
    if (it == req.end() || !it->is_number() || !(it->get<double>() >= 0) || it->get<double>() > hi)
      fail(PCM_ERR_ARG, "field \"{}\" must be a number in [0, {}]", key, hi);
    return it->get<double>();
  };
  const double busy = number("busy", cores), load1 = number("load1", 1e6);
  const double runnable = req.contains("runnable") ? number("runnable", 1e6) : 0.0;
  const bool join = proto::get_bool(req, "join", false);
  if (join) left_agent(name, false);
  if (left_agents_.count(name))
    fail(PCM_ERR_REFUSED,
         "host '{}' was drained and left pcmd's inventory; start its agent "
         "again to join",
         name);
  bool changed_now = false;
  if (!host) {
    const int slots = static_cast<int>(proto::opt_int(req, "slots", 1, kMaxSlots).value_or(cores));
    std::string site = proto::opt_string(req, "site", kMaxSite).value_or("default");
    if (!proto::valid_name(site)) fail(PCM_ERR_ARG, "invalid site name '{}'", site);
    if (inventory_.size() >= kMaxHosts)
      fail(PCM_ERR_REFUSED, "pcmd's inventory is full ({} hosts)", inventory_.size());
    add_host(name, slots, site, std::nullopt);
    host = find_host(name);
    log_->info("host {} joined through its agent: {} cores, {} slots, site {}", name, cores, slots,
               site);
    changed_now = true;
  } else if (!host->agent) {
    log_->info("host {}: an agent reports for it from now on", name);
    changed_now = true;
  }
  if (host->lost) {  // its agent is back before the host left
    host->lost = false;
    host->draining = false;
    log_->info("host {}: its agent reports again; the host is back", name);
    changed_now = true;
  }
  host->agent = true;
  host->cores = cores;
  host->busy = busy;
  host->load1 = load1;
  host->runnable = runnable;
  host->last_report = std::chrono::steady_clock::now();
  if (changed_now) changed();
  return json{{"ok", true},
              {"host", name},
              {"state", host->draining ? "draining" : "up"},
              {"slots", host->slots}};
}

// Notes that name's agent host left the inventory (left) or that an agent joins for it again.
void Server::left_agent(const std::string& name, bool left) {
  if (!left) {
    if (left_agents_.erase(name))
      left_order_.erase(std::find(left_order_.begin(), left_order_.end(), name));
    return;
  }
  if (!left_agents_.insert(name).second) return;
  left_order_.push_back(name);
  if (left_order_.size() > kMaxHosts) {
    left_agents_.erase(left_order_.front());
    left_order_.pop_front();
  }
}

// Agent hosts whose agent fell silent are lost: drained (their processes, if still alive, move
// off), then removed as every drained host is.
void Server::check_agents() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> lost;
  for (auto& h : inventory_) {
    if (!h.agent || h.lost || now - h.last_report < options_.agent_timeout) continue;
    h.lost = true;
    lost.push_back(h.name);
  }
  for (const auto& name : lost) {
    log_->warn("host {} lost: its agent has not reported for {} ms; draining it", name,
               options_.agent_timeout.count());
    InventoryHost* h = find_host(name);
    if (!h || h->draining) continue;
    try {
      start_drain(*h);
    } catch (const Error& e) {
      // Nowhere to go: no new process goes there, and the host stays until its jobs end.
      h->draining = true;
      log_->warn("host {}: {}", name, e.what());
      progress_drains();
    }
    changed();
  }
}

// ---- the policy ----------------------------------------------------------------------------

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

void Server::run_policy() {
  if (!policy_) return;
  const auto tnow = std::chrono::steady_clock::now();
  const double now = std::chrono::duration<double>(tnow.time_since_epoch()).count();
  std::vector<PolicyJob> jobs;
  for (const auto& [name, job] : jobs_) {
    if (job.state != JobState::kRunning) continue;
    jobs.push_back(PolicyJob{name, job.size, job.hosts, job.rate(tnow), job.pending.has_value()});
  }
  std::vector<PolicyHost> hosts;
  for (const auto& h : inventory_)
    hosts.push_back(PolicyHost{h.name, h.slots, used_slots(h.name, nullptr), h.draining, h.agent,
                               h.cores, h.busy, h.runnable});
  const std::vector<PolicyDecision> decisions = policy_->decide(now, jobs, hosts);
  for (const auto& [name, text] : policy_->take_notes()) {
    if (auto it = jobs_.find(name); it != jobs_.end()) note(it->second, text);
    log_->info("job {}: {}", name, text);
  }
  for (const PolicyDecision& d : decisions) {
    auto it = jobs_.find(d.job);
    if (it == jobs_.end()) continue;
    json req{{"job", d.job}, {"why", "policy: " + d.reason}};
    std::string op = proto::kind_name(d.kind);
    switch (d.kind) {
      case proto::Command::Kind::kMigrate:
        req["rank"] = d.rank;
        req["host"] = d.host;
        break;
      case proto::Command::Kind::kMerge:
        req["ranks"] = d.ranks;
        break;
      default:
        req["size"] = d.size;
        if (!d.host.empty()) req["host"] = d.host;
    }
    policy_deciding_ = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{policy_deciding_};
    try {
      const json r =
          d.kind == proto::Command::Kind::kMigrate ? op_migrate(req) : op_reshape(op, req);
      note(it->second, fmt::format("policy: {} (command {}) because {}", r.value("text", op),
                                   r.value("command", 0), d.reason));
      changed();
    } catch (const Error& e) {
      policy_->failed(d.job, now);
      note(it->second,
           fmt::format("policy: {} refused: {} (it wanted to because {})", op, e.what(), d.reason));
    }
    log_->info("job {}: {}", d.job, it->second.last_event);
  }
}

json Server::op_topology(const json& req) {
  auto it = req.find("hosts");
  if (it == req.end() || !it->is_array()) fail(PCM_ERR_ARG, "field \"hosts\" must be an array");
  if (it->size() > static_cast<std::size_t>(1 << 20)) fail(PCM_ERR_ARG, "too many hosts");
  json sites = json::array();
  for (const auto& h : *it) {
    if (!h.is_string() || !proto::valid_host(h.get_ref<const std::string&>()))
      fail(PCM_ERR_ARG, "field \"hosts\" holds an invalid host name");
    const InventoryHost* host = find_host(h.get<std::string>());
    sites.push_back(host ? host->site : "");
  }
  return json{{"ok", true}, {"sites", sites}};
}

// ---- drains --------------------------------------------------------------------------------

// For every draining host: queue the next step of each job still on it that has no command in
// flight; a host that no running job uses any more leaves the inventory.
void Server::progress_drains() {
  for (std::size_t i = 0; i < inventory_.size();) {
    if (!inventory_[i].draining) {
      ++i;
      continue;
    }
    const InventoryHost host = inventory_[i];
    for (auto& [name, job] : jobs_) {
      if (job.state != JobState::kRunning || job.pending || !job.drain_stalled.empty()) continue;
      if (std::count(job.hosts.begin(), job.hosts.end(), host.name) == 0) continue;
      try {
        drain_step(job, host);
      } catch (const Error& e) {
        job.drain_stalled = e.what();
        note(job, fmt::format("drain of {} stopped for this job: {}", host.name, e.what()));
        log_->warn("job {}: {}", name, job.last_event);
      }
    }
    if (used_slots(host.name, nullptr) == 0) {
      log_->info("host {}: drained, it leaves the inventory", host.name);
      // Drained while its agent runs (pcmctl host drain, or the agent leaving): its reports are
      // refused from now on. A lost host's agent that comes back joins again.
      if (host.agent && !host.lost) left_agent(host.name, true);
      prober_->forget(host.name);
      inventory_.erase(inventory_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
}

// One step off `host` for job: migrate its lowest rank there to another host with room; with no
// room anywhere, merge all its ranks there with its lowest rank elsewhere (the merged process is
// the lowest listed rank; if that one is on the host, the next step migrates it into the slot
// the merge freed). Returns whether a command was queued.
bool Server::drain_step(Job& job, const InventoryHost& host) {
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
  bool room = false;
  for (const auto& h : inventory_)
    if (!h.draining && free_slots(h.name, nullptr) > 0) room = true;
  if (room) {
    c.kind = proto::Command::Kind::kMigrate;
    c.rank = here.front();
    c.host = migration_target(job, c.rank, job.placement.value_or(options_.placement));
    c.size = job.size;
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
  queue(job, c);
  job.pending_drain = true;
  note(job, fmt::format("drain of {}: {} requested", host.name, c.describe()));
  return true;
}

}  // namespace pcm::detail
