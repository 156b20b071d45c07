// distribution.h — ownership maps of data distributed along one dimension, and the transfers
// that take data from one map to another (the redistribution plan of a split or merge).
//
// The decomposed dimension has `units` units (heat2d: columns), each `unit_len` elements long.
// A map gives every rank an ordered list of segments (runs of consecutive units). Block, cyclic
// and block-cyclic are regular maps; splitting one rank or merging several gives irregular ones.
// In a rank's local buffer its segments follow one another in global order, each with `halo`
// ghost units before and after it (ghosts are never moved).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "namespaces.h"

namespace pcm::common {

struct Segment {
  std::int64_t first = 0;  // global index of the first unit
  std::int64_t count = 0;  // units
  bool operator==(const Segment& o) const { return first == o.first && count == o.count; }
};

enum class Layout { kBlock = 1, kCyclic = 2, kBlockCyclic = 3, kIrregular = 4 };

class Distribution {
 public:
  Distribution() = default;

  // A regular map over `size` ranks. kBlock: near-equal contiguous ranges, the first
  // units % size ranks one unit longer; kCyclic: unit u on rank u % size; kBlockCyclic: blocks of
  // `block` units dealt round-robin. Throws pcm::Error(PCM_ERR_ARG) on bad parameters.
  static Distribution regular(Layout layout, std::int64_t units, std::int64_t unit_len,
                              std::int64_t block, std::int64_t halo, int size);

  // The same data over `size` ranks in this map's regular layout (an irregular map becomes
  // block). Used by collective M->N resizes.
  Distribution resized(int size) const;

  // Rank `rank` split into `into` ranks: its units, in global order, are cut into `into`
  // near-equal consecutive runs for ranks rank .. rank+into-1; later ranks move up by into-1.
  Distribution split(int rank, int into) const;

  // The listed ranks (at least two, distinct) become one rank that owns all their units; the
  // others keep theirs. New ranks are ordered by each one's first unit.
  // new_rank_of[old] gives each old rank's new rank (the merged ones share one).
  Distribution merge(const std::vector<int>& ranks, std::vector<int>* new_rank_of = nullptr) const;

  // The same segments with rank r's moved to rank new_rank[r] (a permutation of the ranks): how
  // a second array of a merge takes the first array's numbering of the new ranks. Throws
  // pcm::Error(PCM_ERR_ARG) unless new_rank is a permutation.
  Distribution permuted(const std::vector<int>& new_rank) const;

  // The same segments with no ghost units: offsets in a buffer of the owned units alone (what a
  // checkpoint saves).
  Distribution without_halo() const;

  int size() const { return static_cast<int>(owned_.size()); }
  std::int64_t units() const { return units_; }
  std::int64_t unit_len() const { return unit_len_; }
  std::int64_t block() const { return block_; }
  std::int64_t halo() const { return halo_; }
  Layout layout() const { return layout_; }
  const std::vector<Segment>& segments(int rank) const { return owned_.at(rank); }

  // Units a rank owns, and the elements of its local buffer (halos included).
  std::int64_t local_units(int rank) const;
  std::int64_t local_elements(int rank) const;
  // Element offset, in rank's buffer, of segment i's first owned unit.
  std::int64_t segment_offset(int rank, std::size_t i) const;
  // Element offset, in its owner's buffer, of a global unit; and the owner.
  std::int64_t unit_offset(std::int64_t unit, int* owner) const;
  int owner(std::int64_t unit) const;

  // Checks that the segments cover [0, units) exactly once, in order per rank; throws
  // pcm::Error(PCM_ERR_INTERNAL) naming the problem.
  void validate() const;

  nlohmann::json to_json() const;
  static Distribution from_json(const nlohmann::json& j);  // validates; throws PCM_ERR_ARG

  bool operator==(const Distribution& o) const;

 private:
  void index();  // builds unit -> (owner, offset) lookups

  Layout layout_ = Layout::kBlock;
  std::int64_t units_ = 0, unit_len_ = 1, block_ = 1, halo_ = 0;
  std::vector<std::vector<Segment>> owned_;
  // Segment starts in global order, for owner() by binary search.
  std::vector<std::int64_t> starts_;
  std::vector<int> start_owner_;
  std::vector<std::int64_t> start_offset_;  // element offset of that segment in its owner's buffer
};

// One run of units that moves from a rank of the old map to a rank of the new one.
struct Transfer {
  int from = 0, to = 0;
  std::int64_t first = 0, count = 0;  // global units
  bool operator==(const Transfer& o) const {
    return from == o.from && to == o.to && first == o.first && count == o.count;
  }
};

// Every unit of [0, units) once, from its old owner to its new owner, in global unit order.
// Both maps must describe the same units and unit_len.
std::vector<Transfer> plan(const Distribution& from, const Distribution& to);

// Whether old rank old_rank, becoming new rank new_rank, keeps every unit it owned at the same
// element offset of its buffer (halos included): then its old buffer is a prefix of its new one,
// it can be grown in place (realloc), and only the units other ranks held need moving to it.
bool keeps_in_place(const std::vector<Transfer>& plan, const Distribution& from,
                    const Distribution& to, int old_rank, int new_rank);

}  // namespace pcm::common
