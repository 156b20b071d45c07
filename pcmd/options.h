// options.h — what pcmd is told at start (pcmd_main.cpp's flags), read by the Server and its
// owners.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hosts.h"
#include "policy.h"
#include "slurm/slurm_resources.h"
#include "zap.h"

namespace pcm::detail {

struct ServerOptions {
  std::string bind = "tcp://127.0.0.1:*";  // ZeroMQ endpoint; '*' port: any free one
  std::string data_dir;                    // holds jobs/<job>/store.h5
  std::string secret;                      // required in every request
  // Inventory: "host[:slots][@site]", the hosts reconfigurations may place processes on and
  // how many processes each may hold (over all running jobs). Default: localhost and this
  // host's name, each with 4 slots per core.
  std::vector<std::string> hosts;
  std::vector<HostSlots> more_hosts;              // from --hostfile or --slurm, after `hosts`
  std::map<std::string, std::string> slurm_jobs;  // host -> the Slurm job that holds it
  // --resources slurm: the allocation pcmd runs in. Commands that do not fit then ask Slurm for a
  // second allocation and wait for it up to slurm_grow_timeout (slurm_growth.h).
  std::optional<SlurmAllocation> slurm;
  std::chrono::seconds slurm_grow_timeout{120};
  std::size_t keep_versions = 3;                  // committed checkpoint versions kept per job
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
  CurveServerKeys curve;  // enabled: every connection is CURVE, with the one client key admitted
  // A transfer in pieces (protocol.h) whose next piece has not come for this long is dropped and
  // its memory freed.
  std::chrono::milliseconds transfer_timeout{60000};
  // A host whose agent has not reported for this long is lost: drained, then removed.
  std::chrono::milliseconds agent_timeout{5000};
  // --policy auto: pcmd reconfigures jobs by itself (policy.h); manual (default): only commands.
  bool policy_auto = false;
  PolicyConfig policy;
};

}  // namespace pcm::detail
