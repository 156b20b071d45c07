// spawner.cpp — Spawner (spawner.h): a reconfiguration's spawn, its program checked first.
#include "spawner.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.h"

namespace pcm::lib {

using proto::Command;

mpi::Comm Spawner::spawn_for(const Command& cmd, const char* command,
                             const std::vector<std::string>& hosts) {
  try {
    return spawn(executable(command), hosts);
  } catch (const Error& e) {
    abandon_(cmd, e.what());
    throw;
  }
}

// The program must exist, or hydra aborts the job: rank 0 checks, everyone gets the same answer.
std::string Spawner::executable(const char* command) const {
  const std::string exe = program_.spawn_command(command);
  agreed(ctx_.world.comm(), [&] {
    if (ctx_.world.rank() == 0 && exe[0] == '/' && ::access(exe.c_str(), X_OK) != 0)
      fail(PCM_ERR_SPAWN, "program '{}' is not executable: {}", exe, std::strerror(errno));
  });
  return exe;
}

std::unique_ptr<SpawnPlan> Spawner::plan(const std::string& exe,
                                         const std::vector<std::string>& hosts) const {
  return SpawnPlan::make(exe, program_.args, hosts, program_.cwd);
}

// Spawns one process per entry of hosts, as one group (so that they share memory among
// themselves), with the arguments this process was started with. Collective over the world.
// Consecutive entries naming one host are one command whose "host" info says "name:count":
// hydra gives a host named without a count one slot and deals ranks round robin over the hosts,
// which would number the new world's ranks in another order than the hosts pcmd placed.
// Open MPI (4.1's mpirun) places a spawn only on hosts it knows (given to mpirun, or added by an
// earlier spawn), and "host" alone fails for any other ("All nodes which are allocated for this
// job are already filled"): the same value goes in "add-host" as well, which adds the host and
// starts mpirun's daemon there (through its plm_rsh_agent) if it has none, so that a host that
// joined pcmd's inventory after the start (a second Slurm allocation) can be used. Naming a host
// it knows again starts nothing more (measured with 4.1.4: one daemon per host however often).
mpi::Comm Spawner::spawn(const std::string& exe, const std::vector<std::string>& hosts) {
  const std::unique_ptr<SpawnPlan> p = plan(exe, hosts);
  mpi::Comm inter;
  const Watchdog::Stage stage(watchdog_, "MPI_Comm_spawn");
  const int local = p->run(ctx_.world.comm(), &inter);
  // On failure inter goes with the exception.
  agree(ctx_.world.comm(), local,
        fmt::format("MPI_Comm_spawn of {} x '{}' failed", hosts.size(), exe));
  return inter;
}

}  // namespace pcm::lib
