// bounds.cpp — Bounds (bounds.h): the watchdog's scopes for a reconfiguration, a split guard's
// deadline and probe.
#include "bounds.h"

#include <algorithm>
#include <utility>

#include "mpi_util.h"

namespace pcm::lib {

Watchdog::Scope Bounds::bounded(std::string what, int rank, bool tell, std::int64_t command) {
  return Watchdog::Scope(watchdog_, {std::move(what),
                                     ctx_.settings.reconfig_timeout_s,
                                     rank,
                                     ctx_.job,
                                     tell,
                                     mpi::is_mpich(),
                                     {},
                                     command});
}

Watchdog::Scope Bounds::bounded(const proto::Command& cmd) {
  return bounded(fmt::format("the {}{} (command {})", cmd.describe(),
                             cmd.respawn ? " by respawning the world" : "", cmd.id),
                 ctx_.world.rank(), ctx_.world.rank() == 0, cmd.id);
}

std::optional<std::chrono::steady_clock::time_point> Bounds::split_deadline() const {
  const auto d = watchdog_.deadline();
  if (!d) return std::nullopt;
  // Time for the agreement and pcmd's report before the watchdog would end the process.
  const auto left = *d - std::chrono::steady_clock::now();
  return *d - std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(2), left / 2);
}

std::function<std::string()> Bounds::lost_probe(const std::int64_t& iteration) {
  if (ctx_.world.rank() != 0 || !ctx_.link.is_open()) return nullptr;
  return [this, &iteration] {
    // Never waits; the command is the one in flight.
    ctx_.link.poll(ctx_.job, iteration, ctx_.world.size());
    return ctx_.link.lost_new();
  };
}

}  // namespace pcm::lib
