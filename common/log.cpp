// log.cpp — creation of the stderr loggers shared by libpcm, pcmd and pcmctl.
#include "log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

#include "protocol.h"

namespace pcm::common {

namespace {

// stderr, with every message made printable first (proto::printable): a message quotes names,
// keys and errors that came in requests, and a newline in one must not make a line of its own.
class EscapingStderrSink final : public spdlog::sinks::ansicolor_stderr_sink_mt {
 public:
  EscapingStderrSink() : spdlog::sinks::ansicolor_stderr_sink_mt(spdlog::color_mode::automatic) {}
  void log(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    bool plain = true;
    for (char c : text)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f ||
          c == '\\') {
        plain = false;
        break;
      }
    if (plain) {
      spdlog::sinks::ansicolor_stderr_sink_mt::log(msg);
      return;
    }
    const std::string escaped = proto::printable(text, 8192);
    spdlog::details::log_msg copy(msg);
    copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    spdlog::sinks::ansicolor_stderr_sink_mt::log(copy);
  }
};

}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& name,
                                       spdlog::level::level_enum default_level) {
  if (auto existing = spdlog::get(name)) return existing;
  auto log = std::make_shared<spdlog::logger>(name, std::make_shared<EscapingStderrSink>());
  try {
    spdlog::register_logger(log);
  } catch (const spdlog::spdlog_ex&) {
    if (auto existing = spdlog::get(name)) return existing;  // another thread was first
    throw;
  }
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

LogLimiter::LogLimiter(int per_second) : per_second_(per_second) {}

bool LogLimiter::allow(spdlog::logger& log) {
  const auto now = std::chrono::steady_clock::now();
  report(log, now);
  if (shown_ < per_second_) {
    ++shown_;
    return true;
  }
  ++suppressed_;
  return false;
}

void LogLimiter::tick(spdlog::logger& log) { report(log, std::chrono::steady_clock::now()); }

void LogLimiter::report(spdlog::logger& log, std::chrono::steady_clock::time_point now) {
  if (now - window_ < std::chrono::seconds(1)) return;
  if (suppressed_ > 0)
    log.warn("{} more such lines suppressed in the last {:.1f} s (at most {} a second are shown)",
             suppressed_, std::chrono::duration<double>(now - window_).count(), per_second_);
  window_ = now;
  shown_ = 0;
  suppressed_ = 0;
}

}  // namespace pcm::common
