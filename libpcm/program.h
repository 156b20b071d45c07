// program.h — how this process was started (arguments, working directory, executable): what a
// reconfiguration spawns again.
#pragma once

#include <string>
#include <vector>

namespace pcm::lib {

struct Program {
  std::vector<std::string> args;  // argv without argv[0]
  std::string cwd;                // "" if unknown
  std::string exe;                // /proc/self/exe, "" if unknown

  // This process's, from MPI_PCM_Init's arguments (either may be NULL).
  static Program of_this_process(int* argc, char*** argv);

  // What a reconfiguration spawns: command, or this program; a relative path is taken from cwd
  // (mpiexec started the job there), a bare name is found through PATH as mpiexec did.
  std::string spawn_command(const char* command) const;
  // Whether spawn_command(command) is the program spawn_command(nullptr) names (the same file,
  // a bare name looked up in PATH); false where either cannot be found.
  bool spawns_itself(const char* command) const;
};

}  // namespace pcm::lib
