// log.cpp — creation of the stderr loggers shared by libpcm, pcmd and pcmctl.
#include "log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace pcm::detail {

std::shared_ptr<spdlog::logger> logger(const std::string& name,
                                       spdlog::level::level_enum default_level) {
  if (auto existing = spdlog::get(name)) return existing;
  auto log = spdlog::stderr_color_mt(name);
  auto level = default_level;
  if (const char* env = std::getenv("PCM_LOG_LEVEL")) {
    auto parsed = spdlog::level::from_str(env);
    // from_str answers "off" for anything it does not know; only accept "off" when asked for.
    if (parsed != spdlog::level::off || std::string(env) == "off") level = parsed;
  }
  log->set_level(level);
  log->set_pattern("[%H:%M:%S.%e] [%n] [%l] %v");
  return log;
}

}  // namespace pcm::detail
