// hosts.h — host inventories (MPICH hostfiles, Slurm node lists) and where new processes go: the
// spread and concentrate strategies of P2P-MPI (Genaud & Rattanapoka, §4.3).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "namespaces.h"

namespace pcm::common {

inline constexpr int kMaxSlots = 1 << 20;        // slots of one host
inline constexpr std::size_t kMaxHosts = 65536;  // names one Slurm list may expand to

struct HostSlots {
  std::string name;
  int slots = 0;
  std::string site;  // "": the default site
};

// One host of pcmd's --hosts: `host`, `host:slots`, `host@site` or `host:slots@site` (issue 26:
// the site, an administrative domain reached through its front-end's relay). default_slots when
// none is given. Throws pcm::Error(PCM_ERR_CONFIG) with the entry and the reason.
HostSlots parse_host_spec(const std::string& spec, int default_slots);

// Two sites between which a job's processes may talk MPI (issue 26 item 3, QCG-OMPI's broker):
// pcmd --site-link A:B:LOW-HIGH, the TCP port range both sites' firewalls open for it (the jobs
// must keep their MPI to those ports, e.g. MPICH's MPIR_CVAR_CH3_PORT_RANGE=LOW:HIGH; pcmctl run
// sets it, pcmctl site-env prints it: pcmctl/site_env.cpp).
struct SiteLink {
  std::string a, b;
  int low = 0, high = 0;
};
// Throws pcm::Error(PCM_ERR_CONFIG) with the spec and the reason.
SiteLink parse_site_link(const std::string& spec);

// An MPICH hostfile: one `host` (1 slot) or `host:slots` a line; `#` starts a comment; blank
// lines are skipped; a host listed twice adds its slots (at most kMaxSlots in all). Hosts keep the
// order of their first line. Throws pcm::Error(PCM_ERR_ARG, "line N: ...").
std::vector<HostSlots> parse_hostfile(std::string_view text);

// A Slurm compressed host list (SLURM_JOB_NODELIST): comma-separated entries, each a name with any
// number of bracketed sets of numbers and ranges, e.g. `n[1-3],gpu[01-02],login`. A range keeps
// the width of its first number (`node[08-10]` gives node08 node09 node10); several brackets give
// every combination, the first bracket varying slowest. At most kMaxHosts names, each a valid
// host name. Throws pcm::Error(PCM_ERR_ARG) on reversed ranges, unbalanced or nested brackets,
// empty entries or sets, numbers that overflow.
std::vector<std::string> expand_slurm_nodelist(std::string_view list);

// SLURM_TASKS_PER_NODE: comma-separated `count` or `count(xrepeat)`, e.g. `2(x3),1` gives
// 2 2 2 1. count is 1..kMaxSlots, at most kMaxHosts counts in all. Throws pcm::Error(PCM_ERR_ARG).
std::vector<int> expand_slurm_tasks(std::string_view tasks);

// The two lists above side by side; they must have as many entries. A node listed twice adds its
// slots, as in a hostfile. Throws pcm::Error(PCM_ERR_ARG).
std::vector<HostSlots> slurm_hosts(std::string_view nodelist, std::string_view tasks_per_node);

struct Host {
  std::string name;
  int slots = 0;            // processes the host may run
  int used = 0;             // processes it runs now
  double latency_ms = 0.0;  // measured from the requester; nearer hosts are chosen first
};

// spread: one process per host, nearest hosts first, before any host gets a second (memory per
// process first, locality second). concentrate: fill the nearest host, then the next (locality).
enum class Placement { kSpread, kConcentrate };

// "spread" or "concentrate"; nullopt for anything else.
std::optional<Placement> parse_placement(std::string_view s);
const char* placement_name(Placement p);

// The host of each of n new processes. Hosts are taken by latency, then name; a host's capacity
// is slots - used and is never exceeded. The result lists each chosen host's processes one after
// another, hosts in that order, so ranks given in result order are numbered host by host.
// Throws pcm::Error(PCM_ERR_ARG) for n < 0, negative slots or used, a negative or NaN latency or a
// host named twice; pcm::Error(PCM_ERR_REFUSED) when the free capacity is less than n.
std::vector<std::string> place(const std::vector<Host>& hosts, int n, Placement p);

}  // namespace pcm::common
