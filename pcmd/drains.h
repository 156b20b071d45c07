// drains.h — moving every process off a host (pcmctl host drain, an agent leaving, an agent fallen
// silent), one command per job at a time through the command desk; a drained host leaves the
// inventory.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>

#include "commands.h"
#include "durability.h"
#include "inventory.h"
#include "jobs.h"
#include "ops.h"
#include "protocol.h"

namespace pcm::daemon {

class Drains {
 public:
  // agent_timeout: an agent silent this long has lost its host.
  Drains(Inventory& inventory, JobTable& jobs, CommandDesk& desk, Changes& changes,
         std::chrono::milliseconds agent_timeout, std::shared_ptr<spdlog::logger> log);

  // Starts draining host (refused, with the reason, when its processes have nowhere to go).
  void start(InventoryHost& host);
  // For every draining host: queue the next step of each job still on it that has no command in
  // flight; a host that no running job uses any more leaves the inventory.
  void progress();
  // Agent hosts whose agent fell silent are lost: drained.
  void check_agents();

  proto::json drain(const ops::HostDrain& r);
  proto::json leave(const ops::AgentLeave& r);

 private:
  bool step(Job& job, const InventoryHost& host);

  Inventory& inventory_;
  JobTable& jobs_;
  CommandDesk& desk_;
  Changes& changes_;
  std::chrono::milliseconds agent_timeout_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace pcm::daemon
