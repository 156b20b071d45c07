// program.cpp — how this process was started, and what a reconfiguration spawns (program.h).
#include "program.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace pcm::lib {

Program Program::of_this_process(int* argc, char*** argv) {
  Program p;
  if (argc && argv && *argv)
    for (int i = 1; i < *argc; ++i) p.args.emplace_back((*argv)[i]);
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf)) p.cwd = buf;
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) p.exe.assign(buf, static_cast<std::size_t>(n));
  return p;
}

std::string Program::spawn_command(const char* command) const {
  std::string c = command && *command ? command : exe;
  // PCM_TEST_SPAWN_COMMAND, for the tests: what PCM_Adapt's reconfigurations spawn instead of
  // this program (a spawn that hangs).
  if (const char* t = std::getenv("PCM_TEST_SPAWN_COMMAND"); t && *t && !(command && *command))
    c = t;
  if (c.find('/') == std::string::npos) return c;  // found through PATH, as mpiexec did
  if (c[0] != '/') c = cwd + "/" + c;
  return c;
}

namespace {
// The file a spawn command names, resolved: a bare name through PATH as mpiexec finds it; ""
// where there is none.
std::string resolved(const std::string& c) {
  char buf[PATH_MAX];
  if (c.find('/') != std::string::npos) return ::realpath(c.c_str(), buf) ? buf : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string f = (dir.empty() ? "." : dir) + "/" + c;
    if (::access(f.c_str(), X_OK) == 0 && ::realpath(f.c_str(), buf)) return buf;
  }
  return "";
}
}  // namespace

bool Program::spawns_itself(const char* command) const {
  const std::string mine = resolved(spawn_command(nullptr));
  return !mine.empty() && resolved(spawn_command(command)) == mine;
}

}  // namespace pcm::lib
