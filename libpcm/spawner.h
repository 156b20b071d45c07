// spawner.h — Spawner: a reconfiguration's new processes, spawned from this program (program.h)
// on the hosts pcmd placed them on, as one MPI_Comm_spawn_multiple (overlap.h: SpawnPlan);
// a command whose spawn cannot start or fails is given up. Definitions: spawner.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "context.h"
#include "mpi_util.h"
#include "overlap.h"
#include "program.h"
#include "watchdog.h"

namespace pcm::lib {

class Spawner {
 public:
  // Gives a command up everywhere (Reshaper::abandon: pcmd is told, the reconfiguration is over).
  using Abandon = std::function<void(const proto::Command& cmd, const std::string& why)>;

  // watchdog: for the "MPI_Comm_spawn" stage a stuck process names.
  Spawner(const Context& ctx, const Program& program, Watchdog& watchdog, Abandon abandon)
      : ctx_(ctx), program_(program), watchdog_(watchdog), abandon_(std::move(abandon)) {}

  // Collective over the world: spawns command (or this program) on hosts for cmd; the
  // reconfiguration is given up (abandon) on every rank if the program is missing or the spawn
  // fails.
  mpi::Comm spawn_for(const proto::Command& cmd, const char* command,
                      const std::vector<std::string>& hosts);
  // Collective over the world: what a spawn for command (null: this program) runs, checked by
  // rank 0 (the program must exist, or hydra aborts the job); every rank throws PCM_ERR_SPAWN if
  // it is not executable.
  std::string executable(const char* command) const;
  // The spawn's arguments: one process of exe per entry of hosts, with this program's arguments.
  std::unique_ptr<SpawnPlan> plan(const std::string& exe,
                                  const std::vector<std::string>& hosts) const;
  Abandon& abandon() { return abandon_; }
  const Program& program() const { return program_; }

 private:
  mpi::Comm spawn(const std::string& exe, const std::vector<std::string>& hosts);

  Context ctx_;
  const Program& program_;
  Watchdog& watchdog_;
  Abandon abandon_;
};

}  // namespace pcm::lib
