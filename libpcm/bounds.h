// bounds.h — Bounds: the bound on a reconfiguration's blocking part (PCM_RECONFIG_TIMEOUT_S): the
// watchdog (watchdog.h), the scopes that arm it, and what a split's guard (split_guard.h) takes
// from it: when to give up, and rank 0's question to pcmd meanwhile. Definitions: bounds.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "command.h"
#include "context.h"
#include "watchdog.h"

namespace pcm::lib {

class Bounds {
 public:
  explicit Bounds(const Context& ctx) : ctx_(ctx) {}

  Watchdog& watchdog() { return watchdog_; }
  // The blocking part of a reconfiguration in this process ends within PCM_RECONFIG_TIMEOUT_S
  // while the returned scope lives, or the process ends (watchdog.h); only a reconfiguration
  // touches it. `tell`: this process tells pcmd (the lowest rank involved); by cmd: world rank 0.
  Watchdog::Scope bounded(std::string what, int rank, bool tell, std::int64_t command = 0);
  Watchdog::Scope bounded(const proto::Command& cmd);
  // A split's old world: when its guard gives up waiting (split_guard.h), shortly before the
  // watchdog's deadline (nullopt: no bound); and what rank 0 asks pcmd meanwhile (null elsewhere;
  // iteration: PCM_Status's count, read at each question).
  std::optional<std::chrono::steady_clock::time_point> split_deadline() const;
  std::function<std::string()> lost_probe(const std::int64_t& iteration);

 private:
  Context ctx_;
  Watchdog watchdog_{end_stuck_process};
};

}  // namespace pcm::lib
