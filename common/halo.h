// halo.h — the plan of a halo exchange over any ownership map: which ghost units a rank fills
// from which owner, and which of its units it sends to whom (pure computation, no MPI).
#pragma once

#include <cstdint>
#include <vector>

#include "distribution.h"
#include "namespaces.h"

namespace pcm::common {

// `units` consecutive units that move from a source buffer to a ghost area. Offsets are in
// elements. In HaloPlan::recv, ghost_offset is in the planned rank's buffer and source_offset in
// peer's; in HaloPlan::send, ghost_offset is in peer's buffer and source_offset in the planned
// rank's.
struct HaloRun {
  int peer = 0;
  std::int64_t ghost_offset = 0;
  std::int64_t source_offset = 0;
  std::int64_t units = 0;
  bool operator==(const HaloRun& o) const {
    return peer == o.peer && ghost_offset == o.ghost_offset && source_offset == o.source_offset &&
           units == o.units;
  }
};

struct HaloPlan {
  // The ghosts of the planned rank, in its buffer order (segment by segment, the ghosts before
  // a segment then those after it). peer == the planned rank: a local copy.
  std::vector<HaloRun> recv;
  // What the planned rank sends to every other rank: for each peer, in ascending peer order,
  // exactly that peer's recv runs from the planned rank, in the peer's order. So one indexed
  // datatype per peer on each side describes the same units in the same sequence.
  std::vector<HaloRun> send;
};

// The plan of `rank` in map d for `width` ghost units on each side of every segment (ghosts
// outside [0, units) are not filled). Runs are maximal: consecutive ghost units from the same
// peer that are contiguous in both buffers form one run. A unit may be a ghost of several
// segments of one rank (cyclic maps, width >= 2): it is then sent once per ghost.
// Throws pcm::Error(PCM_ERR_ARG) unless 0 <= width <= d.halo() and 0 <= rank < d.size().
HaloPlan halo_plan(const Distribution& d, int rank, std::int64_t width);

}  // namespace pcm::common
