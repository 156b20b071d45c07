// reshape.h — planning a reconfiguration's new maps and rank numbering from the command and the
// old map: pure functions (no MPI), so that unit tests reach them.
#pragma once

#include <vector>

#include "command.h"
#include "distribution.h"

namespace pcm::lib {

// A split or a growing resize: the new world's map.
Distribution grown_distribution(const proto::Command& cmd, const Distribution& d);

// A merge or a shrinking resize of d: the new world's map, and new_of[old rank] = the old rank's
// new rank (-1: it leaves). The lowest listed rank of a merge keeps the merged data.
Distribution merged_distribution(const proto::Command& cmd, const Distribution& d,
                                 std::vector<int>* new_of);

// The same numbering without a map (command.h).
using proto::merged_ranks;

// A merge or shrinking resize of several arrays' maps (a world of size): the new maps and
// new_of. The first array numbers the survivors (by the data they hold); the others take its
// numbering (maps of other layouts may order them differently, e.g. a cyclic one after a split).
std::vector<Distribution> merged_maps(const proto::Command& cmd,
                                      const std::vector<Distribution>& maps, int size,
                                      std::vector<int>* new_of);

// The maps of the world a split or a respawn (Command::respawn) spawns: a respawned migration
// keeps them (only a host changes), a merge or shrinking resize merges them as merged_maps does,
// a split or growing resize grows them.
std::vector<Distribution> next_maps(const proto::Command& cmd,
                                    const std::vector<Distribution>& maps, int size);

}  // namespace pcm::lib
