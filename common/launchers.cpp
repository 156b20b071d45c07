// launchers.cpp — finds the ssh-like launchers relative to the running executable (launchers.h).
#include "launchers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "error.h"
#include "pcm_types.h"

#ifndef PCM_LIBEXEC_FROM_BIN
#define PCM_LIBEXEC_FROM_BIN "../libexec/pcm"
#endif

namespace pcm {
namespace {

// The directory of /proc/self/exe (symbolic links resolved by the kernel), "" if unknown.
std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  const std::string path(buf, static_cast<size_t>(n));
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

bool valid_launcher_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> launcher_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("PCM_LIBEXEC_DIR"); env && *env) dirs.emplace_back(env);
  if (const std::string exe = executable_dir(); !exe.empty()) {
    dirs.push_back(exe + "/" PCM_LIBEXEC_FROM_BIN);  // installed: <prefix>/bin -> libexec/pcm
    dirs.push_back(exe + "/libexec/pcm");            // the build tree: <build>/libexec/pcm
  }
  return dirs;
}

std::optional<std::string> find_launcher(const std::string& name) {
  if (!valid_launcher_name(name)) return std::nullopt;
  for (const auto& dir : launcher_dirs()) {
    std::string path = dir + "/launcher_" + name + ".sh";
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return std::nullopt;
}

std::string expand_launchers(std::string arg) {
  static const std::string open = "{launcher:";
  for (auto at = arg.find(open); at != std::string::npos; at = arg.find(open, at)) {
    const auto close = arg.find('}', at);
    if (close == std::string::npos) fail(PCM_ERR_ARG, "'{}': no '}}' after {{launcher:", arg);
    const std::string name = arg.substr(at + open.size(), close - at - open.size());
    const auto path = find_launcher(name);
    if (!path) {
      fail(PCM_ERR_ARG, "no launcher '{}' (launcher_{}.sh) in {} (PCM_LIBEXEC_DIR names another)",
           name, name, fmt::join(launcher_dirs(), ", "));
    }
    arg.replace(at, close + 1 - at, *path);
    at += path->size();
  }
  return arg;
}

}  // namespace pcm
