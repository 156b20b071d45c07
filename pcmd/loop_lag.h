// loop_lag.h — LoopLag: says in pcmd's log when the parts of one pass of the request loop held it
// for over a second together, and which part held it longest (the checks, a request, the journal,
// ...), so that a pcmd that did not answer in time leaves the reason behind. The loop's wait for
// requests, and parts that say so themselves (Slurm's commands), are skipped, not counted. It
// also keeps the longest pass since pcmd started, and its longest part (`ping` says them).
#pragma once

#include <spdlog/logger.h>

#include <chrono>
#include <string>

namespace pcm::daemon {

class LoopLag {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kWarnAfter{1};

  explicit LoopLag(spdlog::logger& log) : log_(log) {}

  // A pass begins.
  void begin() {
    last_ = Clock::now();
    held_ = worst_ = Clock::duration::zero();
    worst_what_ = nullptr;
  }
  // The part named `what` has just ended: it counts.
  void mark(const char* what) {
    const auto now = Clock::now();
    const auto part = now - last_;
    held_ += part;
    if (part > worst_) {
      worst_ = part;
      worst_what_ = what;
    }
    last_ = now;
  }
  // What ran since the last mark does not count (the wait for requests).
  void skip() { last_ = Clock::now(); }
  // The pass has ended: a line if its parts held the loop over kWarnAfter.
  void end() {
    if (held_ > longest_) {
      longest_ = held_;
      longest_what_ = worst_what_;
    }
    if (held_ <= kWarnAfter || !worst_what_) return;
    log_.warn("pcmd's loop was held {:.1f} s in one pass, {:.1f} s of it by {}", seconds(held_),
              seconds(worst_), worst_what_);
  }
  // The seconds the last pass's parts held the loop (for tests).
  double held_s() const { return seconds(held_); }
  // The longest pass since the start (seconds), and the part that held it longest ("" if none).
  double longest_s() const { return seconds(longest_); }
  const char* longest_by() const { return longest_what_ ? longest_what_ : ""; }

 private:
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  spdlog::logger& log_;
  Clock::time_point last_ = Clock::now();
  Clock::duration held_ = Clock::duration::zero(), worst_ = Clock::duration::zero();
  const char* worst_what_ = nullptr;
  Clock::duration longest_ = Clock::duration::zero();
  const char* longest_what_ = nullptr;
};

}  // namespace pcm::daemon
