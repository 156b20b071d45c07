// halo.cpp — halo exchange plans: each rank's ghost units, their owners, and the matching sends.
#include "halo.h"

#include <algorithm>

#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

namespace {

// Adds one ghost unit to runs, extending the last run when the unit continues it in both buffers.
void add_unit(std::vector<HaloRun>& runs, int peer, std::int64_t ghost, std::int64_t source,
              std::int64_t unit_len) {
  if (!runs.empty()) {
    HaloRun& last = runs.back();
    const std::int64_t step = last.units * unit_len;
    if (last.peer == peer && last.ghost_offset + step == ghost &&
        last.source_offset + step == source) {
      ++last.units;
      return;
    }
  }
  runs.push_back({peer, ghost, source, 1});
}

// The receives of `rank`, in its buffer order. Ghost positions only increase along this walk, so
// two units that are contiguous in the buffer are always visited one right after the other: a
// sender that filters this list by peer gets the same runs as it would by coalescing only its own
// units, which is what lets both sides build matching datatypes independently.
std::vector<HaloRun> recv_runs(const Distribution& d, int rank, std::int64_t width) {
  const std::int64_t len = d.unit_len(), halo = d.halo(), units = d.units();
  std::vector<HaloRun> runs;
  auto ghost = [&](std::int64_t unit, std::int64_t at) {
    int owner = -1;
    std::int64_t source = d.unit_offset(unit, &owner);
    add_unit(runs, owner, at * len, source, len);
  };
  std::int64_t at = halo;  // units from the buffer's start to the current segment's first unit
  for (const Segment& s : d.segments(rank)) {
    for (std::int64_t u = std::max<std::int64_t>(0, s.first - width); u < s.first; ++u)
      ghost(u, at + (u - s.first));
    const std::int64_t end = s.first + s.count;
    for (std::int64_t u = end; u < std::min(units, end + width); ++u) ghost(u, at + (u - s.first));
    at += s.count + 2 * halo;
  }
  return runs;
}

}  // namespace

HaloPlan halo_plan(const Distribution& d, int rank, std::int64_t width) {
  if (rank < 0 || rank >= d.size()) fail(PCM_ERR_ARG, "rank {} is not in [0, {})", rank, d.size());
  if (width < 0 || width > d.halo())
    fail(PCM_ERR_ARG, "halo width {} is not in [0, {}] (the map's halo)", width, d.halo());
  HaloPlan plan;
  plan.recv = recv_runs(d, rank, width);
  if (width == 0) return plan;
  // Every other rank's receives from this one, in that rank's order. This costs the ghosts of the
  // whole map, which is small next to the data the plan moves.
  for (int peer = 0; peer < d.size(); ++peer) {
    if (peer == rank) continue;
    for (const HaloRun& r : recv_runs(d, peer, width))
      if (r.peer == rank) plan.send.push_back({peer, r.ghost_offset, r.source_offset, r.units});
  }
  return plan;
}

}  // namespace pcm::common
