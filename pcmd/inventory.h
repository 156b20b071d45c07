// inventory.h — pcmd's hosts (the inventory): their slots, sites and latencies, the processes of
// running jobs on them, where new processes go (spread/concentrate, common/hosts.h), the agents
// that report for them, and the host requests that touch only them (drains: drains.h).
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "durability.h"
#include "hosts.h"
#include "jobs.h"
#include "ops.h"
#include "probe.h"
#include "protocol.h"

namespace pcm::daemon {

// What pcmd is told about its hosts (pcmd_main.cpp's flags; ServerOptions, options.h, holds it).
struct InventoryOptions {
  // "host[:slots][@site]", the hosts reconfigurations may place processes on and how many
  // processes each may hold (over all running jobs). Default: localhost and this host's name,
  // each with 4 slots per core.
  std::vector<std::string> hosts;
  std::vector<HostSlots> more_hosts;              // from --hostfile or --slurm, after `hosts`
  std::map<std::string, std::string> slurm_jobs;  // host -> the Slurm job that holds it
  Placement placement = Placement::kConcentrate;  // for jobs and commands that name none
  // pcmd's own site (issue 26): with closed_sites, hosts of other sites sit behind their
  // front-end's relay, out of reach of pcmd's probe, so they are neither measured nor made
  // silent by a lost process.
  std::string site = "default";
  // Sites closed to one another (pcmd --closed-sites, issue 26): a job spans two sites only with
  // a link (pcmd --site-link) between them; any other spread is refused. Open (the default): a
  // site is a topology level only, and jobs span sites freely.
  bool closed_sites = false;
  std::vector<SiteLink> site_links;
  int probe_port = 9;  // the TCP port whose answer times a host's round trip (probe.h); 0: off
  std::chrono::milliseconds probe_period{30000};
};

// A host of the inventory.
struct InventoryHost {
  std::string name;
  int slots = 0;
  std::string site = "default";
  std::optional<double> latency_ms;  // declared by the operator; wins over the measured RTT
  bool draining = false;             // receives no process; leaves once empty
  // Joined through an agent (pcmd --agent, agent.h), which reports every period: the host's
  // cores, how many of them were busy over the last period, the 1-minute load average.
  bool agent = false;
  int cores = 0;
  double busy = 0, load1 = 0, runnable = 0;
  std::chrono::steady_clock::time_point last_report;
  bool lost = false;  // its agent fell silent for ServerOptions::agent_timeout: being drained
  // A process on it was lost (the watch port) and it has not answered pcmd's probe since: no
  // process goes there (no free slot), the policy does not grow onto it. In memory only.
  bool silent = false;
  std::string slurm_job;  // the Slurm job whose allocation holds the host (--resources slurm)
};

class Inventory {
 public:
  // The hosts of the options (or localhost and this host); throws pcm::Error for a bad entry.
  Inventory(const InventoryOptions& options, const JobTable& jobs, Changes& changes,
            std::shared_ptr<spdlog::logger> log);

  std::vector<InventoryHost>& hosts() { return hosts_; }
  const std::vector<InventoryHost>& hosts() const { return hosts_; }
  InventoryHost* find(const std::string& name);
  const InventoryHost* find(const std::string& name) const;
  void add(const std::string& name, int slots, const std::string& site,
           std::optional<double> latency_ms);
  // Removes hosts()[i] (no longer measured).
  void erase(std::size_t i);
  std::vector<std::string> names() const;
  // Processes of running jobs (but `except`) on host.
  int used_slots(const std::string& host, const Job* except) const;
  // Free slots on host, counting the processes of every running job but `except`; 0 for a host
  // outside the inventory or draining.
  int free_slots(const std::string& host, const Job* except) const;
  // The running jobs with processes on host (for messages).
  std::vector<std::string> users(const std::string& host) const;

  // ---- placement ----
  std::vector<Host> placement_hosts(const Job* except) const;
  // The command's placement (validated), else the job's, else pcmd's.
  Placement placement_for(const Job& job, const std::optional<std::string>& placement) const;
  Placement default_placement() const { return placement_; }
  std::vector<std::string> place_near(const Job& job, const std::vector<int>& source_of_new_rank,
                                      int preferred_new, const std::string& preferred_host) const;
  std::string migration_target(const Job& job, int rank, Placement p) const;
  // ---- sites (issue 26) ----
  // A host's site; "" for a host outside the inventory (no say in site checks).
  std::string site_of(const std::string& host) const;
  // Whether a job may span sites a and b: open sites, the same site, or a --site-link.
  bool sites_linked(const std::string& a, const std::string& b) const;
  // Whether host's site is linked with the site of every process of job.
  bool fits_sites(const Job& job, const std::string& host) const;
  // Why a world on hosts would span sites with no link between them ("": it would not).
  std::string site_conflict(const std::vector<std::string>& hosts) const;
  // The host a command names, which must be in the inventory and not draining; "" for none.
  std::string requested_host(const std::optional<std::string>& host) const;

  // ---- requests ----
  proto::json list() const;
  proto::json add(const ops::HostAdd& r);
  proto::json remove(const ops::HostRemove& r);
  proto::json topology(const ops::Topology& r) const;
  // An agent's report: the host joins, comes back or reports.
  proto::json report(const ops::AgentReport& r);
  // The inventory part of status.
  proto::json status() const;

  // ---- hosts that may be gone ----
  // A job's process on host was lost: unless the host answers pcmd's probe again, it is silent
  // (nothing without probing: --probe-port 0).
  void note_lost_process(const std::string& host);
  // Every second: a silent host that answered is back; one that did not is measured again.
  void check_silent();
  // A host probed again now (host_loss.h); its answer: nullopt while the probe runs (or without
  // probing), then whether it answered.
  void probe_again(const std::string& host);
  std::optional<bool> answered(const std::string& host) const;

  // ---- agents ----
  // Notes that name's agent host left the inventory (left) or that an agent joins for it again.
  void left_agent(const std::string& name, bool left);

  // ---- the table on disk (table_snapshot.cpp) ----
  proto::json to_json() const;
  static std::vector<InventoryHost> parse(const proto::json& t);
  void take_over(std::vector<InventoryHost> hosts);

 private:
  double sort_latency(const InventoryHost& h) const;

  const JobTable& jobs_;
  Changes& changes_;
  std::shared_ptr<spdlog::logger> log_;
  Placement placement_;
  std::string own_site_;  // pcmd's: with closed sites, only its hosts are probed
  bool closed_sites_ = false;
  std::vector<SiteLink> links_;
  std::unique_ptr<RttProber> prober_;
  std::vector<InventoryHost> hosts_;
  // Agent hosts that left the inventory (drained): a report from their agent is refused until
  // an agent joins again (its first report). At most kMaxHosts names, the oldest forgotten first
  // (left_order_: oldest first).
  std::set<std::string> left_agents_;
  std::deque<std::string> left_order_;
};

}  // namespace pcm::daemon
