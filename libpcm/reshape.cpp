// reshape.cpp — planning a reconfiguration's new maps and rank numbering (pure functions; the
// split and merge that carry them out are Reshaper's, split_merge.cpp).
#include "reshape.h"

#include <algorithm>

namespace pcm::lib {

using proto::Command;

// ---- planning ------------------------------------------------------------------------------

Distribution grown_distribution(const Command& cmd, const Distribution& d) {
  return cmd.kind == Command::Kind::kSplit ? d.split(cmd.rank, cmd.into) : d.resized(cmd.size);
}

Distribution merged_distribution(const Command& cmd, const Distribution& d,
                                 std::vector<int>* new_of) {
  if (cmd.kind == Command::Kind::kMerge) {
    Distribution next = d.merge(cmd.ranks, new_of);
    // The lowest listed rank keeps the merged data; the other listed ranks leave.
    int keeper = *std::min_element(cmd.ranks.begin(), cmd.ranks.end());
    for (int r : cmd.ranks)
      if (r != keeper) (*new_of)[r] = -1;
    return next;
  }
  Distribution next = d.resized(cmd.size);
  new_of->resize(static_cast<std::size_t>(d.size()));
  for (int r = 0; r < d.size(); ++r) (*new_of)[r] = r < cmd.size ? r : -1;
  return next;
}

std::vector<Distribution> merged_maps(const Command& cmd, const std::vector<Distribution>& maps,
                                      int size, std::vector<int>* new_of) {
  *new_of = merged_ranks(cmd, size);
  std::vector<Distribution> next;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    std::vector<int> of;
    next.push_back(merged_distribution(cmd, maps[i], &of));
    if (i == 0) {
      *new_of = of;
    } else if (of != *new_of) {
      std::vector<int> to(static_cast<std::size_t>(next.back().size()), -1);
      for (int r = 0; r < size; ++r)
        if (of[r] >= 0) to[of[r]] = (*new_of)[r];
      next.back() = next.back().permuted(to);
    }
  }
  return next;
}

std::vector<Distribution> next_maps(const Command& cmd, const std::vector<Distribution>& maps,
                                    int size) {
  if (cmd.respawn && cmd.kind == Command::Kind::kMigrate) return maps;
  if (cmd.size <= size) {
    std::vector<int> new_of;
    return merged_maps(cmd, maps, size, &new_of);
  }
  std::vector<Distribution> next;
  for (const Distribution& d : maps) next.push_back(grown_distribution(cmd, d));
  return next;
}

}  // namespace pcm::lib
