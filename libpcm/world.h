// world.h — building a new world: the helpers that need no runtime state (the spawn itself and
// the operations on worlds are Runtime's, in world.cpp).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace pcm::detail {

// Collective over comm: every process's host name, at comm's rank 0 (empty elsewhere).
std::vector<std::string> gather_hosts(MPI_Comm comm);
// This process's host as pcmd knows it: MPI_Get_processor_name, "unknown" if that is no host name.
std::string processor_name();

// What a reconfiguration spawns: command, or this program; a relative path is taken from cwd
// (mpiexec started the job there), a bare name is found through PATH as mpiexec did.
std::string spawn_command(const char* command, const std::string& self_exe, const std::string& cwd);

}  // namespace pcm::detail
