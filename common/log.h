// log.h — named spdlog loggers ("pcm", "pcmd") on stderr, level from PCM_LOG_LEVEL.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace pcm::detail {

// Returns the logger called name, creating it on first use. default_level applies when
// PCM_LOG_LEVEL is unset or invalid.
std::shared_ptr<spdlog::logger> logger(const std::string& name,
                                       spdlog::level::level_enum default_level);

}  // namespace pcm::detail
