// log.h — named spdlog loggers ("pcm", "pcmd") on stderr, level from PCM_LOG_LEVEL; every message
// is made printable (control characters and bytes that are not UTF-8 escaped) before it is written.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>

#include "namespaces.h"

namespace pcm::common {

// Returns the logger called name, creating it on first use. default_level applies when
// PCM_LOG_LEVEL is unset or invalid.
std::shared_ptr<spdlog::logger> logger(const std::string& name,
                                       spdlog::level::level_enum default_level);

// At most per_second lines of one kind (refused requests, say) a second; the rest are counted
// and reported in one line once the second is over ("K more such lines suppressed"), so that a
// flood of bad requests cannot fill the disk through the log. Not thread-safe: one per thread.
class LogLimiter {
 public:
  explicit LogLimiter(int per_second);
  // Whether to write the next line of this kind (it counts as written or as suppressed).
  bool allow(spdlog::logger& log);
  // Reports the lines suppressed in a second that is over; call now and then (the request loop
  // does at least every 200 ms), so that the count appears even when the flood stops.
  void tick(spdlog::logger& log);

 private:
  void report(spdlog::logger& log, std::chrono::steady_clock::time_point now);
  int per_second_;
  std::chrono::steady_clock::time_point window_{};
  int shown_ = 0;
  long long suppressed_ = 0;
};

}  // namespace pcm::common
