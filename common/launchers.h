// launchers.h — where the ssh-like launchers are (testbed/launcher_NAME.sh, installed into
// <prefix>/libexec/pcm), found from the running executable's own location.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pcm {

// The directories searched for launcher_NAME.sh, in order: $PCM_LIBEXEC_DIR if set; the install's
// libexec/pcm beside the executable's bin/ (PCM_LIBEXEC_FROM_BIN, e.g. ../libexec/pcm); the
// build tree's libexec/pcm (<build>/libexec/pcm, links to testbed/). Empty where /proc/self/exe
// cannot be read and PCM_LIBEXEC_DIR is unset.
std::vector<std::string> launcher_dirs();

// The path of launcher NAME (letters, digits, '_'; "slurm", "hosts"): the first executable
// launcher_NAME.sh in launcher_dirs(), nullopt if none.
std::optional<std::string> find_launcher(const std::string& name);

// arg with every "{launcher:NAME}" replaced by find_launcher(NAME); throws pcm::Error
// (PCM_ERR_ARG) naming the directories searched when NAME is invalid or not found.
std::string expand_launchers(std::string arg);

}  // namespace pcm
