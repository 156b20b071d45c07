// inventory.cpp — pcmd's hosts and where new processes go (inventory.h). Drains, which move every
// process off a host, are in drains.cpp.
#include "inventory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <thread>

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;

namespace {

constexpr double kUnknownLatency = 1e9;  // hosts with no latency known come last

}  // namespace

Inventory::Inventory(const InventoryOptions& options, const JobTable& jobs, Changes& changes,
                     std::shared_ptr<spdlog::logger> log)
    : jobs_(jobs),
      changes_(changes),
      log_(std::move(log)),
      placement_(options.placement),
      own_site_(options.site),
      closed_sites_(options.closed_sites),
      links_(options.site_links) {
  int default_slots = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> specs = options.hosts;
  if (specs.empty() && options.more_hosts.empty()) {
    char name[256] = {0};
    specs.push_back("localhost");
    if (::gethostname(name, sizeof name - 1) == 0 && proto::valid_host(name) &&
        std::string(name) != "localhost")
      specs.push_back(name);
  }
  std::vector<HostSlots> all;  // --hosts first, then --hostfile / --slurm
  for (const auto& spec : specs) all.push_back(parse_host_spec(spec, default_slots));
  all.insert(all.end(), options.more_hosts.begin(), options.more_hosts.end());
  prober_ = std::make_unique<RttProber>(options.probe_port, options.probe_period);
  for (const auto& h : all) {
    if (InventoryHost* known = find(h.name)) {
      known->slots += h.slots;  // named twice: its slots add up, as in a hostfile
      if (!h.site.empty()) known->site = h.site;
      continue;
    }
    add(h.name, h.slots, h.site.empty() ? "default" : h.site, std::nullopt);
  }
  for (const auto& [name, job] : options.slurm_jobs)
    if (InventoryHost* h = find(name)) h->slurm_job = job;
}

// ---- the inventory -------------------------------------------------------------------------

void Inventory::add(const std::string& name, int slots, const std::string& site,
                    std::optional<double> latency_ms) {
  if (InventoryHost* h = find(name)) {
    h->slots = slots;
    h->site = site;
    h->latency_ms = latency_ms;
  } else {
    InventoryHost added;
    added.name = name;
    added.slots = slots;
    added.site = site;
    added.latency_ms = latency_ms;
    hosts_.push_back(std::move(added));
  }
  // With closed sites, a host of another site is behind its front-end's relay: pcmd cannot
  // reach it to measure.
  if (!closed_sites_ || site == own_site_)
    prober_->watch(name);
  else
    prober_->forget(name);
}

void Inventory::erase(std::size_t i) {
  prober_->forget(hosts_[i].name);
  hosts_.erase(hosts_.begin() + static_cast<std::ptrdiff_t>(i));
}

InventoryHost* Inventory::find(const std::string& name) {
  for (auto& h : hosts_)
    if (h.name == name) return &h;
  return nullptr;
}

const InventoryHost* Inventory::find(const std::string& name) const {
  for (const auto& h : hosts_)
    if (h.name == name) return &h;
  return nullptr;
}

std::vector<std::string> Inventory::names() const {
  std::vector<std::string> names;
  for (const auto& h : hosts_) names.push_back(h.name);
  return names;
}

int Inventory::used_slots(const std::string& host, const Job* except) const {
  int used = 0;
  for (const auto& [name, job] : jobs_.all()) {
    if (&job == except || job.state != JobState::kRunning) continue;
    used += static_cast<int>(std::count(job.hosts.begin(), job.hosts.end(), host));
  }
  return used;
}

int Inventory::free_slots(const std::string& host, const Job* except) const {
  for (const auto& h : hosts_)
    if (h.name == host) return h.draining || h.silent ? 0 : h.slots - used_slots(host, except);
  return 0;
}

std::vector<std::string> Inventory::users(const std::string& host) const {
  std::vector<std::string> names;
  for (const auto& [jname, job] : jobs_.all())
    if (job.state == JobState::kRunning && std::count(job.hosts.begin(), job.hosts.end(), host) > 0)
      names.push_back(jname);
  return names;
}

// Placement order: the declared latency, else the measured round trip rounded to 0.1 ms (so that
// noise does not reorder hosts from one command to the next), else last.
double Inventory::sort_latency(const InventoryHost& h) const {
  if (h.latency_ms) return *h.latency_ms;
  if (auto rtt = prober_->rtt_ms(h.name)) return std::round(*rtt * 10.0) / 10.0;
  return kUnknownLatency;
}

// ---- placement -----------------------------------------------------------------------------

// The hosts new processes may go to: not draining, with the processes of other jobs counted.
std::vector<Host> Inventory::placement_hosts(const Job* except) const {
  std::vector<Host> out;
  for (const auto& h : hosts_) {
    if (h.draining || h.silent) continue;
    if (except && !fits_sites(*except, h.name)) continue;  // not to a site the job cannot span
    out.push_back(
        Host{h.name, h.slots, std::min(used_slots(h.name, except), h.slots), sort_latency(h)});
  }
  return out;
}

Placement Inventory::placement_for(const Job& job,
                                   const std::optional<std::string>& placement) const {
  if (placement) {
    auto parsed = parse_placement(*placement);
    if (!parsed) fail(PCM_ERR_REFUSED, "unknown placement '{}': spread or concentrate", *placement);
    return *parsed;
  }
  return job.placement.value_or(placement_);
}

// Hosts for a new world when the operator named a host: new rank i stays on the host of old rank
// source_of_new_rank[i] (or goes to preferred_host for the ranks from preferred_new on that a
// split or growth creates) while that host has room; otherwise the first inventory host with
// room. Throws if the inventory is full.
std::vector<std::string> Inventory::place_near(const Job& job,
                                               const std::vector<int>& source_of_new_rank,
                                               int preferred_new,
                                               const std::string& preferred_host) const {
  std::map<std::string, int> room;
  for (const auto& h : hosts_) room[h.name] = free_slots(h.name, &job);
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
      for (const auto& h : hosts_)
        if (room[h.name] > 0) {
          want = h.name;
          break;
        }
    }
    if (want.empty())
      fail(PCM_ERR_REFUSED, "no free slot for {} processes in pcmd's inventory ({})",
           source_of_new_rank.size(), fmt::join(names(), ", "));
    --room[want];
    out.push_back(want);
  }
  return out;
}

// ---- sites (issue 26) ----

std::string Inventory::site_of(const std::string& host) const {
  const InventoryHost* h = find(host);
  return h ? h->site : std::string();
}

bool Inventory::sites_linked(const std::string& a, const std::string& b) const {
  if (!closed_sites_ || a == b || a.empty() || b.empty()) return true;
  for (const auto& l : links_)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return true;
  return false;
}

bool Inventory::fits_sites(const Job& job, const std::string& host) const {
  const std::string site = site_of(host);
  for (const auto& h : job.hosts)
    if (!sites_linked(site, site_of(h))) return false;
  return true;
}

std::string Inventory::site_conflict(const std::vector<std::string>& hosts) const {
  std::vector<std::pair<std::string, std::string>> seen;  // site, a host of it
  for (const auto& host : hosts) {
    const std::string site = site_of(host);
    if (site.empty()) continue;
    for (const auto& [other, where] : seen)
      if (!sites_linked(site, other))
        return fmt::format(
            "span sites {} ({}) and {} ({}), which have no MPI port range open between them "
            "(pcmd --site-link {}:{}:LOW-HIGH)",
            other, where, site, host, other, site);
    if (std::none_of(seen.begin(), seen.end(), [&](const auto& s) { return s.first == site; }))
      seen.emplace_back(site, host);
  }
  return "";
}

// Where a migration of rank goes when the operator names no host: another host with room
// (never the rank's own, never a draining one). spread: the one holding the fewest of this
// job's processes; concentrate: the most; ties by latency, then name. Throws when none has room.
std::string Inventory::migration_target(const Job& job, int rank, Placement p) const {
  std::string best;
  int best_count = 0;
  double best_latency = 0;
  std::vector<std::string> other_sites;  // hosts with room the job's sites are closed to
  for (const auto& h : hosts_) {
    if (h.draining || h.name == job.hosts[rank] || free_slots(h.name, nullptr) <= 0) continue;
    if (!fits_sites(job, h.name)) {  // the rank itself too: it sends its data there
      other_sites.push_back(h.name);
      continue;
    }
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
  if (best.empty() && !other_sites.empty())
    fail(PCM_ERR_REFUSED,
         "no other host of the job's sites has a free slot for rank {}; {} have, in sites with "
         "no MPI port range open to the job's (pcmd --site-link)",
         rank, fmt::join(other_sites, ", "));
  if (best.empty())
    fail(PCM_ERR_REFUSED, "no other host of pcmd's inventory has a free slot for rank {} ({})",
         rank, fmt::join(names(), ", "));
  return best;
}

std::string Inventory::requested_host(const std::optional<std::string>& wanted) const {
  if (!wanted) return "";
  for (const auto& h : hosts_) {
    if (h.name != *wanted) continue;
    if (h.draining) fail(PCM_ERR_REFUSED, "host '{}' is being drained", *wanted);
    return *wanted;
  }
  fail(PCM_ERR_REFUSED, "host '{}' is not in pcmd's inventory ({})", *wanted,
       fmt::join(names(), ", "));
}

// ---- hosts that may be gone ---------------------------------------------------------------

void Inventory::note_lost_process(const std::string& host) {
  InventoryHost* h = find(host);
  // Another closed site's host cannot answer pcmd's probe: it would stay silent for good.
  if (!h || h->silent || !prober_->on() || (closed_sites_ && h->site != own_site_)) return;
  h->silent = true;
  prober_->remeasure(host);
  log_->warn("host {}: a process on it was lost; no process goes there until it answers again",
             host);
}

void Inventory::check_silent() {
  for (auto& h : hosts_) {
    if (!h.silent) continue;
    if (const auto rtt = prober_->rtt_ms(h.name)) {
      h.silent = false;
      log_->info("host {} answers again ({:.1f} ms)", h.name, *rtt);
    } else if (prober_->measured(h.name)) {
      prober_->remeasure(h.name);
    }
  }
}

void Inventory::probe_again(const std::string& host) {
  if (prober_->on() && find(host)) prober_->remeasure(host);
}

std::optional<bool> Inventory::answered(const std::string& host) const {
  if (!prober_->on() || !prober_->measured(host)) return std::nullopt;
  return prober_->rtt_ms(host).has_value();
}

// ---- requests ------------------------------------------------------------------------------

json Inventory::list() const {
  json hosts = json::array();
  for (const auto& h : hosts_) {
    int used = used_slots(h.name, nullptr);
    auto rtt = prober_->rtt_ms(h.name);
    json agent = nullptr;
    if (h.agent)
      agent = json{{"cores", h.cores},
                   {"busy", h.busy},
                   {"runnable", h.runnable},
                   {"load1", h.load1},
                   {"seconds_since_report",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - h.last_report)
                        .count()}};
    hosts.push_back(json{{"host", h.name},
                         {"slots", h.slots},
                         {"used", used},
                         {"free", std::max(h.slots - used, 0)},
                         {"site", h.site},
                         {"latency", h.latency_ms ? json(*h.latency_ms) : json(nullptr)},
                         {"rtt", rtt ? json(*rtt) : json(nullptr)},
                         {"state", h.lost       ? "lost"
                                   : h.draining ? "draining"
                                   : h.silent   ? "silent"
                                                : "up"},
                         {"slurm_job", h.slurm_job.empty() ? json(nullptr) : json(h.slurm_job)},
                         {"agent", std::move(agent)}});
  }
  // The sites' rules (issue 26), for `pcmctl site-env` and `pcmctl run`: which MPI port range a
  // job must keep to when it may span sites.
  json links = json::array();
  for (const auto& l : links_)
    links.push_back(json{{"a", l.a}, {"b", l.b}, {"low", l.low}, {"high", l.high}});
  return json{{"ok", true},
              {"hosts", hosts},
              {"placement", placement_name(placement_)},
              {"sites", json{{"own", own_site_}, {"closed", closed_sites_}, {"links", links}}}};
}

json Inventory::add(const ops::HostAdd& r) {
  const InventoryHost* host = find(r.host);
  if (host && host->draining) fail(PCM_ERR_REFUSED, "host '{}' is being drained", r.host);
  int used = used_slots(r.host, nullptr);
  if (r.slots < used)
    fail(PCM_ERR_REFUSED, "host '{}' runs {} processes ({}): cannot give it {} slots", r.host, used,
         fmt::join(users(r.host), ", "), r.slots);
  bool existed = host != nullptr;
  if (!existed && hosts_.size() >= kMaxHosts)
    fail(PCM_ERR_REFUSED, "pcmd's inventory is full ({} hosts)", hosts_.size());
  add(r.host, r.slots, r.site, r.latency);
  log_->info("host {} {}: {} slots, site {}", r.host, existed ? "updated" : "added", r.slots,
             r.site);
  return json{{"ok", true}, {"host", r.host}, {"added", !existed}};
}

json Inventory::remove(const ops::HostRemove& r) {
  InventoryHost* host = find(r.host);
  if (!host) fail(PCM_ERR_REFUSED, "host '{}' is not in pcmd's inventory", r.host);
  if (used_slots(r.host, nullptr) > 0)
    fail(PCM_ERR_REFUSED, "host '{}' still runs processes of {}: drain it first", r.host,
         fmt::join(users(r.host), ", "));
  erase(static_cast<std::size_t>(host - hosts_.data()));
  log_->info("host {} removed", r.host);
  return proto::ok_reply();
}

json Inventory::topology(const ops::Topology& r) const {
  json sites = json::array();
  for (const auto& name : r.hosts) {
    const InventoryHost* host = find(name);
    sites.push_back(host ? host->site : "");
  }
  return json{{"ok", true}, {"sites", sites}};
}

json Inventory::status() const {
  json inv = json::array();
  for (const auto& h : hosts_)
    inv.push_back(
        json{{"host", h.name}, {"slots", h.slots}, {"free", free_slots(h.name, nullptr)}});
  return inv;
}

// ---- agents --------------------------------------------------------------------------------

// agent_report: a host's agent joins (first report, "join": true) or reports.
json Inventory::report(const ops::AgentReport& r) {
  const std::string& name = r.host;
  InventoryHost* host = find(name);
  if (r.join) left_agent(name, false);
  if (left_agents_.count(name))
    fail(PCM_ERR_REFUSED,
         "host '{}' was drained and left pcmd's inventory; start its agent "
         "again to join",
         name);
  bool changed_now = false;
  if (!host) {
    const int slots = r.slots.value_or(r.cores);
    if (hosts_.size() >= kMaxHosts)
      fail(PCM_ERR_REFUSED, "pcmd's inventory is full ({} hosts)", hosts_.size());
    add(name, slots, r.site, std::nullopt);
    host = find(name);
    log_->info("host {} joined through its agent: {} cores, {} slots, site {}", name, r.cores,
               slots, r.site);
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
  host->cores = r.cores;
  host->busy = r.busy;
  host->load1 = r.load1;
  host->runnable = r.runnable;
  host->last_report = std::chrono::steady_clock::now();
  if (changed_now) changes_.bump();
  return json{{"ok", true},
              {"host", name},
              {"state", host->draining ? "draining" : "up"},
              {"slots", host->slots}};
}

void Inventory::left_agent(const std::string& name, bool left) {
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

}  // namespace pcm::daemon
