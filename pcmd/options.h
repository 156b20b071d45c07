// options.h — what pcmd is told at start (pcmd_main.cpp's flags), read by the Server and its
// owners.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inventory.h"
#include "policy.h"
#include "slurm/slurm_resources.h"
#include "zap.h"

namespace pcm::daemon {

// The inventory's part (InventoryOptions: hosts, sites, placement, probe) is inherited.
struct ServerOptions : InventoryOptions {
  std::string bind = "tcp://127.0.0.1:*";  // ZeroMQ endpoint; '*' port: any free one
  std::string data_dir;                    // holds jobs/<job>/store.h5
  std::string secret;                      // required in every request
  // --resources slurm: the allocation pcmd runs in. Commands that do not fit then ask Slurm for a
  // second allocation and wait for it up to slurm_grow_timeout (slurm_growth.h).
  std::optional<SlurmAllocation> slurm;
  std::chrono::seconds slurm_grow_timeout{120};
  std::size_t keep_versions = 3;  // committed checkpoint versions kept per job
  CurveServerKeys curve;  // enabled: every connection is CURVE, with the one client key admitted
  // A transfer in pieces (protocol.h) whose next piece has not come for this long is dropped and
  // its memory freed.
  std::chrono::milliseconds transfer_timeout{60000};
  // A host whose agent has not reported for this long is lost: drained, then removed.
  std::chrono::milliseconds agent_timeout{5000};
  // --policy auto: pcmd reconfigures jobs by itself (policy.h); manual (default): only commands.
  bool policy_auto = false;
  PolicyConfig policy;
  // --stop-grace: on SIGTERM, pcmd goes on serving the running jobs whose processes are alive
  // until they have ended or this long has passed (a preempted job writes its last version
  // through pcmd: docs/user/preemption.md); a second SIGTERM, or SIGINT, ends it at once.
  std::chrono::seconds stop_grace{0};
};

}  // namespace pcm::daemon
