// reshape.h — planning a reconfiguration's new maps and rank numbering from the command and the
// old map: pure functions (no MPI), so that unit tests reach them.
#pragma once

#include <vector>

#include "command.h"
#include "distribution.h"

namespace pcm::detail {

// A split or a growing resize: the new world's map.
Distribution grown_distribution(const proto::Command& cmd, const Distribution& d);

// A merge or a shrinking resize of d: the new world's map, and new_of[old rank] = the old rank's
// new rank (-1: it leaves). The lowest listed rank of a merge keeps the merged data.
Distribution merged_distribution(const proto::Command& cmd, const Distribution& d,
                                 std::vector<int>* new_of);

// The same numbering without a map (a merge that moves no array), for a world of size:
// the survivors in old rank order.
std::vector<int> merged_ranks(const proto::Command& cmd, int size);

}  // namespace pcm::detail
