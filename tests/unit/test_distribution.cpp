// test_distribution.cpp — unit tests of ownership maps: regular layouts, split, merge, plans, JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "distribution.h"
#include "error.h"
#include "pcm_types.h"
#include "test_util.h"

using nlohmann::json;
using pcm::common::Distribution;
using pcm::common::Layout;
using pcm::common::Segment;
using pcm::common::Transfer;

namespace {

struct LayoutCase {
  Layout layout;
  std::int64_t block;
  const char* name;
};

const LayoutCase kLayoutCases[] = {
    {Layout::kBlock, 1, "Block"},
    {Layout::kCyclic, 1, "Cyclic"},
    {Layout::kBlockCyclic, 1, "BlockCyclic1"},
    {Layout::kBlockCyclic, 2, "BlockCyclic2"},
    {Layout::kBlockCyclic, 3, "BlockCyclic3"},
    {Layout::kBlockCyclic, 5, "BlockCyclic5"},
};
const std::int64_t kUnits[] = {1, 7, 8, 37};
const std::int64_t kHalos[] = {0, 1};
const std::int64_t kUnitLens[] = {1, 3};

constexpr std::int64_t kSentinel = -1;

// The value an element holds: its global unit and its index within the unit.
std::int64_t value_of(std::int64_t unit, std::int64_t element) { return unit * 1000 + element; }

// The units a rank owns, in global order.
std::vector<std::int64_t> units_of(const Distribution& d, int rank) {
  std::vector<std::int64_t> v;
  for (const Segment& s : d.segments(rank))
    for (std::int64_t u = s.first; u < s.first + s.count; ++u) v.push_back(u);
  return v;
}

// Checks a map's buffer geometry: local_elements, segment_offset, unit_offset and owner agree
// with the segments and the halo. Returns the first problem, or "".
std::string check_geometry(const Distribution& d) {
  std::ostringstream err;
  try {
    d.validate();
  } catch (const pcm::Error& e) {
    return std::string("validate: ") + e.what();
  }
  const std::int64_t len = d.unit_len(), halo = d.halo();
  for (int r = 0; r < d.size(); ++r) {
    const auto& segs = d.segments(r);
    std::int64_t at = halo;  // units into the buffer
    std::int64_t owned = 0;
    for (std::size_t i = 0; i < segs.size(); ++i) {
      if (i > 0 && segs[i - 1].first + segs[i - 1].count >= segs[i].first) {
        err << "rank " << r << " segments " << i - 1 << " and " << i << " are not separate";
        return err.str();
      }
      if (d.segment_offset(r, i) != at * len) {
        err << "segment_offset(" << r << ", " << i << ") = " << d.segment_offset(r, i)
            << ", expected " << at * len;
        return err.str();
      }
      for (std::int64_t k = 0; k < segs[i].count; ++k) {
        std::int64_t u = segs[i].first + k;
        int o = -2;
        std::int64_t off = d.unit_offset(u, &o);
        if (o != r || d.owner(u) != r || off != (at + k) * len) {
          err << "unit " << u << ": owner " << o << "/" << d.owner(u) << " offset " << off
              << ", expected owner " << r << " offset " << (at + k) * len;
          return err.str();
        }
      }
      at += segs[i].count + 2 * halo;
      owned += segs[i].count;
    }
    if (d.local_units(r) != owned) {
      err << "local_units(" << r << ") = " << d.local_units(r) << ", expected " << owned;
      return err.str();
    }
    std::int64_t elements = (owned + 2 * halo * static_cast<std::int64_t>(segs.size())) * len;
    if (d.local_elements(r) != elements) {
      err << "local_elements(" << r << ") = " << d.local_elements(r) << ", expected " << elements;
      return err.str();
    }
  }
  return "";
}

// Simulates the redistribution from one map to another with real buffers: every old rank's
// owned elements hold value_of(unit, element) and its halos a sentinel; each transfer of
// plan(from, to) is copied from its old buffer offset to its new one. Checks the plan (owners,
// global order, every unit exactly once) and that every new owned element is written exactly
// once with the right value while new halos stay untouched. Returns the first problem, or "".
std::string redistribute(const Distribution& from, const Distribution& to) {
  std::ostringstream err;
  err << "from " << describe(from) << " to " << describe(to) << ": ";
  for (const Distribution* d : {&from, &to}) {
    std::string g = check_geometry(*d);
    if (!g.empty()) return err.str() + (d == &from ? "old map: " : "new map: ") + g;
  }
  const std::int64_t len = from.unit_len(), units = from.units();

  // Old buffers.
  std::vector<std::vector<std::int64_t>> src(from.size());
  for (int r = 0; r < from.size(); ++r) {
    src[r].assign(from.local_elements(r), kSentinel);
    const auto& segs = from.segments(r);
    for (std::size_t i = 0; i < segs.size(); ++i) {
      std::int64_t off = from.segment_offset(r, i);
      for (std::int64_t k = 0; k < segs[i].count * len; ++k) {
        std::int64_t at = off + k;
        if (at < 0 || at >= static_cast<std::int64_t>(src[r].size()) || src[r][at] != kSentinel) {
          err << "old rank " << r << " element " << at << " is outside its buffer or reused";
          return err.str();
        }
        src[r][at] = value_of(segs[i].first + k / len, k % len);
      }
    }
  }

  // New buffers, and how often each element is written.
  std::vector<std::vector<std::int64_t>> dst(to.size()), writes(to.size());
  for (int r = 0; r < to.size(); ++r) {
    dst[r].assign(to.local_elements(r), kSentinel);
    writes[r].assign(to.local_elements(r), 0);
  }

  std::vector<int> moved(units, 0);
  std::int64_t next = 0, total = 0;
  for (const Transfer& t : pcm::common::plan(from, to)) {
    if (t.count < 1 || t.first < 0 || t.first + t.count > units) {
      err << "transfer of units " << t.first << "+" << t.count << " is out of range";
      return err.str();
    }
    if (t.first != next) {
      err << "transfer of units " << t.first << "+" << t.count << " is not at unit " << next;
      return err.str();
    }
    if (t.from < 0 || t.from >= from.size() || t.to < 0 || t.to >= to.size()) {
      err << "transfer " << t.from << "->" << t.to << " names a rank out of range";
      return err.str();
    }
    next = t.first + t.count;
    total += t.count;
    for (std::int64_t u = t.first; u < t.first + t.count; ++u) {
      ++moved[u];
      if (from.owner(u) != t.from || to.owner(u) != t.to) {
        err << "unit " << u << " moves " << t.from << "->" << t.to << " but its owners are "
            << from.owner(u) << "->" << to.owner(u);
        return err.str();
      }
    }
    int o_from = -2, o_to = -2;
    std::int64_t so = from.unit_offset(t.first, &o_from), dof = to.unit_offset(t.first, &o_to);
    if (o_from != t.from || o_to != t.to) {
      err << "unit_offset owners " << o_from << "->" << o_to << " differ from the transfer";
      return err.str();
    }
    auto& s = src[t.from];
    auto& d = dst[t.to];
    auto& w = writes[t.to];
    for (std::int64_t k = 0; k < t.count * len; ++k) {
      if (so + k < 0 || so + k >= static_cast<std::int64_t>(s.size()) || dof + k < 0 ||
          dof + k >= static_cast<std::int64_t>(d.size())) {
        err << "transfer of units " << t.first << "+" << t.count << " runs off a buffer";
        return err.str();
      }
      d[dof + k] = s[so + k];
      ++w[dof + k];
    }
  }
  if (total != units || next != units) {
    err << "transfers move " << total << " units, ending at " << next << ", of " << units;
    return err.str();
  }
  for (std::int64_t u = 0; u < units; ++u) {
    if (moved[u] != 1) {
      err << "unit " << u << " moves " << moved[u] << " times";
      return err.str();
    }
  }

  // Every new owned element holds its value, written once; everything else is untouched.
  for (int r = 0; r < to.size(); ++r) {
    std::vector<bool> owned(dst[r].size(), false);
    const auto& segs = to.segments(r);
    for (std::size_t i = 0; i < segs.size(); ++i) {
      std::int64_t off = to.segment_offset(r, i);
      for (std::int64_t k = 0; k < segs[i].count * len; ++k) {
        std::int64_t at = off + k, want = value_of(segs[i].first + k / len, k % len);
        owned[at] = true;
        if (dst[r][at] != want || writes[r][at] != 1) {
          err << "new rank " << r << " element " << at << " holds " << dst[r][at] << " written "
              << writes[r][at] << " times, expected " << want << " written once";
          return err.str();
        }
      }
    }
    for (std::size_t at = 0; at < owned.size(); ++at) {
      if (!owned[at] && (dst[r][at] != kSentinel || writes[r][at] != 0)) {
        err << "new rank " << r << " halo element " << at << " was written";
        return err.str();
      }
    }
  }
  return "";
}

Distribution regular(const LayoutCase& c, std::int64_t units, std::int64_t unit_len,
                     std::int64_t halo, int size) {
  return Distribution::regular(c.layout, units, unit_len, c.block, halo, size);
}

// Checks the result of d.split(rank, into). Returns the first problem, or "".
std::string check_split(const Distribution& d, int rank, int into, const Distribution& s) {
  std::ostringstream err;
  err << "split of " << describe(d) << " rank " << rank << " into " << into << " = " << describe(s)
      << ": ";
  if (s.size() != d.size() + into - 1) return err.str() + "wrong size";
  if (s.units() != d.units() || s.unit_len() != d.unit_len() || s.halo() != d.halo())
    return err.str() + "parameters changed";
  for (int r = 0; r < rank; ++r)
    if (s.segments(r) != d.segments(r)) return err.str() + "an earlier rank changed";
  for (int r = rank + 1; r < d.size(); ++r)
    if (s.segments(r + into - 1) != d.segments(r)) return err.str() + "a later rank changed";
  std::vector<std::int64_t> old = units_of(d, rank), joined;
  const std::int64_t n = static_cast<std::int64_t>(old.size()), base = n / into, extra = n % into;
  for (int p = 0; p < into; ++p) {
    std::vector<std::int64_t> piece = units_of(s, rank + p);
    if (static_cast<std::int64_t>(piece.size()) != base + (p < extra ? 1 : 0)) {
      err << "piece " << p << " has " << piece.size() << " units";
      return err.str();
    }
    joined.insert(joined.end(), piece.begin(), piece.end());
  }
  if (joined != old) return err.str() + "the pieces are not the rank's units in order";
  if (s.layout() != Layout::kIrregular && s.layout() != d.layout())
    return err.str() + "unexpected layout";
  // A split that gives exactly the regular map of the old layout keeps that layout.
  if (d.layout() != Layout::kIrregular && s == d.resized(s.size()) && s.layout() != d.layout())
    return err.str() + "a regular result lost its layout";
  return check_geometry(s).empty() ? "" : err.str() + check_geometry(s);
}

// Checks the result of d.merge(ranks). Returns the first problem, or "".
std::string check_merge(const Distribution& d, const std::vector<int>& ranks, const Distribution& m,
                        const std::vector<int>& new_rank_of) {
  std::ostringstream err;
  err << "merge of " << describe(d) << " ranks [";
  for (int r : ranks) err << " " << r;
  err << " ] = " << describe(m) << ": ";
  if (m.size() != d.size() - static_cast<int>(ranks.size()) + 1) return err.str() + "wrong size";
  if (m.units() != d.units() || m.unit_len() != d.unit_len() || m.halo() != d.halo())
    return err.str() + "parameters changed";
  if (static_cast<int>(new_rank_of.size()) != d.size()) return err.str() + "new_rank_of size";
  std::vector<bool> listed(d.size(), false);
  for (int r : ranks) listed[r] = true;
  const int target = new_rank_of[ranks[0]];
  std::vector<int> hits(m.size(), 0);
  std::vector<std::int64_t> merged_units;
  for (int r = 0; r < d.size(); ++r) {
    int nr = new_rank_of[r];
    if (nr < 0 || nr >= m.size()) return err.str() + "new_rank_of out of range";
    if (listed[r]) {
      if (nr != target) return err.str() + "merged ranks map to different new ranks";
      std::vector<std::int64_t> u = units_of(d, r);
      merged_units.insert(merged_units.end(), u.begin(), u.end());
    } else {
      if (nr == target) return err.str() + "an unlisted rank maps to the merged rank";
      if (++hits[nr] != 1) return err.str() + "two old ranks map to one new rank";
      if (m.segments(nr) != d.segments(r)) return err.str() + "an unlisted rank changed";
    }
  }
  std::sort(merged_units.begin(), merged_units.end());
  if (units_of(m, target) != merged_units) return err.str() + "the merged rank's units";
  // New ranks ordered by first unit; ranks without units last.
  bool seen_empty = false;
  std::int64_t prev_first = -1;
  for (int r = 0; r < m.size(); ++r) {
    if (m.segments(r).empty()) {
      seen_empty = true;
      continue;
    }
    if (seen_empty) return err.str() + "a rank with units follows an empty one";
    if (m.segments(r)[0].first <= prev_first) return err.str() + "ranks not ordered by first unit";
    prev_first = m.segments(r)[0].first;
  }
  if (m.layout() != Layout::kIrregular && m.layout() != d.layout())
    return err.str() + "unexpected layout";
  return check_geometry(m).empty() ? "" : err.str() + check_geometry(m);
}

// Stops a looping test after a few failures instead of printing thousands.
#define EXPECT_EMPTY_OR_STOP(expr, failures) \
  do {                                       \
    std::string problem_ = (expr);           \
    if (!problem_.empty()) {                 \
      ADD_FAILURE() << problem_;             \
      if (++(failures) >= 10) return;        \
    }                                        \
  } while (0)

}  // namespace

// 1. Every M->N redistribution between regular maps moves every element exactly once.

class DistributionRedistribution : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(DistributionRedistribution, EveryMToNIsExact) {
  const LayoutCase& c = GetParam();
  int failures = 0;
  for (std::int64_t units : kUnits)
    for (std::int64_t halo : kHalos)
      for (std::int64_t len : kUnitLens)
        for (int m = 1; m <= 8; ++m)
          for (int n = 1; n <= 8; ++n) {
            Distribution from = regular(c, units, len, halo, m);
            Distribution to = from.resized(n);
            ASSERT_EQ(to, regular(c, units, len, halo, n));
            ASSERT_EQ(to.layout(), c.layout);
            EXPECT_EMPTY_OR_STOP(redistribute(from, to), failures);
          }
}

TEST_P(DistributionRedistribution, BetweenDifferentHalos) {
  // Halos are the buffers' business only: a plan between maps with different halos still works.
  const LayoutCase& c = GetParam();
  int failures = 0;
  for (int m = 1; m <= 5; ++m)
    for (int n = 1; n <= 5; ++n)
      EXPECT_EMPTY_OR_STOP(redistribute(regular(c, 23, 2, 0, m), regular(c, 23, 2, 2, n)),
                           failures);
}

INSTANTIATE_TEST_SUITE_P(DistributionLayouts, DistributionRedistribution,
                         ::testing::ValuesIn(kLayoutCases),
                         [](const ::testing::TestParamInfo<LayoutCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(DistributionPlan, ExplicitTransfers) {
  // Block 10 units over 2 -> over 3: [0,5)[5,10) -> [0,4)[4,7)[7,10).
  auto from = Distribution::regular(Layout::kBlock, 10, 1, 1, 0, 2);
  auto to = from.resized(3);
  std::vector<Transfer> want = {{0, 0, 0, 4}, {0, 1, 4, 1}, {1, 1, 5, 2}, {1, 2, 7, 3}};
  EXPECT_EQ(pcm::common::plan(from, to), want);
  // Unchanged maps: one transfer per segment, each rank to itself.
  auto cyc = Distribution::regular(Layout::kCyclic, 4, 1, 1, 1, 2);
  std::vector<Transfer> same = {{0, 0, 0, 1}, {1, 1, 1, 1}, {0, 0, 2, 1}, {1, 1, 3, 1}};
  EXPECT_EQ(pcm::common::plan(cyc, cyc), same);
}

TEST(DistributionPlan, DifferentDataIsAnError) {
  auto a = Distribution::regular(Layout::kBlock, 10, 1, 1, 0, 2);
  EXPECT_EQ(
      code_of([&] { pcm::common::plan(a, Distribution::regular(Layout::kBlock, 11, 1, 1, 0, 2)); }),
      PCM_ERR_ARG);
  EXPECT_EQ(
      code_of([&] { pcm::common::plan(a, Distribution::regular(Layout::kBlock, 10, 2, 1, 0, 2)); }),
      PCM_ERR_ARG);
}

// 2. Regular maps.

TEST(DistributionRegular, BlockIsNearEqualContiguous) {
  for (std::int64_t units : kUnits)
    for (int size = 1; size <= 8; ++size) {
      auto d = Distribution::regular(Layout::kBlock, units, 1, 1, 0, size);
      ASSERT_EQ(d.size(), size);
      std::int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        std::int64_t want = units / size + (r < units % size ? 1 : 0);
        EXPECT_EQ(d.local_units(r), want) << units << " over " << size << " rank " << r;
        if (want == 0) {
          EXPECT_TRUE(d.segments(r).empty());
          continue;
        }
        ASSERT_EQ(d.segments(r).size(), 1u);
        EXPECT_EQ(d.segments(r)[0], (Segment{next, want}));
        next += want;
      }
      EXPECT_EQ(next, units);
    }
  auto d = Distribution::regular(Layout::kBlock, 10, 1, 1, 0, 4);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 3}}));
  EXPECT_EQ(d.segments(1), (std::vector<Segment>{{3, 3}}));
  EXPECT_EQ(d.segments(2), (std::vector<Segment>{{6, 2}}));
  EXPECT_EQ(d.segments(3), (std::vector<Segment>{{8, 2}}));
}

TEST(DistributionRegular, CyclicDealsUnits) {
  for (std::int64_t units : kUnits)
    for (int size = 1; size <= 8; ++size) {
      auto d = Distribution::regular(Layout::kCyclic, units, 1, 1, 0, size);
      for (std::int64_t u = 0; u < units; ++u) EXPECT_EQ(d.owner(u), u % size);
    }
  auto d = Distribution::regular(Layout::kCyclic, 5, 1, 1, 0, 2);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 1}, {2, 1}, {4, 1}}));
  EXPECT_EQ(d.segments(1), (std::vector<Segment>{{1, 1}, {3, 1}}));
  // On one rank the units join into one segment.
  auto one = Distribution::regular(Layout::kCyclic, 5, 1, 1, 0, 1);
  EXPECT_EQ(one.segments(0), (std::vector<Segment>{{0, 5}}));
}

TEST(DistributionRegular, BlockCyclicDealsBlocks) {
  for (std::int64_t block : {1, 2, 3, 5})
    for (std::int64_t units : kUnits)
      for (int size = 1; size <= 8; ++size) {
        auto d = Distribution::regular(Layout::kBlockCyclic, units, 1, block, 0, size);
        EXPECT_EQ(d.block(), block);
        for (std::int64_t u = 0; u < units; ++u) EXPECT_EQ(d.owner(u), (u / block) % size);
      }
  auto d = Distribution::regular(Layout::kBlockCyclic, 7, 1, 2, 0, 2);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 2}, {4, 2}}));
  EXPECT_EQ(d.segments(1), (std::vector<Segment>{{2, 2}, {6, 1}}));
}

TEST(DistributionRegular, GeometryWithHalos) {
  for (const LayoutCase& c : kLayoutCases)
    for (std::int64_t units : kUnits)
      for (std::int64_t halo : {0, 1, 2})
        for (std::int64_t len : kUnitLens)
          for (int size = 1; size <= 8; ++size) {
            auto d = regular(c, units, len, halo, size);
            EXPECT_EQ(d.units(), units);
            EXPECT_EQ(d.unit_len(), len);
            EXPECT_EQ(d.halo(), halo);
            EXPECT_EQ(d.layout(), c.layout);
            EXPECT_EQ(d.size(), size);
            std::string problem = check_geometry(d);
            ASSERT_EQ(problem, "") << describe(d);
            EXPECT_NO_THROW(d.validate());
          }
  // Block-cyclic, 7 units in blocks of 2 over 2 ranks, halo 1, 3 elements a unit: rank 0 holds
  // [h 0 1 h][h 4 5 h], rank 1 [h 2 3 h][h 6 h].
  auto d = Distribution::regular(Layout::kBlockCyclic, 7, 3, 2, 1, 2);
  EXPECT_EQ(d.local_units(0), 4);
  EXPECT_EQ(d.local_elements(0), 24);
  EXPECT_EQ(d.local_elements(1), 21);
  EXPECT_EQ(d.segment_offset(0, 0), 3);
  EXPECT_EQ(d.segment_offset(0, 1), 15);
  EXPECT_EQ(d.segment_offset(1, 1), 15);
  int owner = -1;
  EXPECT_EQ(d.unit_offset(5, &owner), 18);
  EXPECT_EQ(owner, 0);
  EXPECT_EQ(d.unit_offset(6, &owner), 15);
  EXPECT_EQ(owner, 1);
  EXPECT_EQ(d.unit_offset(3, nullptr), 6);
}

TEST(DistributionRegular, FewerUnitsThanRanks) {
  // 3 units over 6 ranks (2 elements a unit, halo 1): ranks without units have empty buffers.
  for (const LayoutCase& c : kLayoutCases) {
    auto d = regular(c, 3, 2, 1, 6);
    std::vector<std::int64_t> want(6, 0);
    for (std::int64_t u = 0; u < 3; ++u) ++want[(u / c.block) % 6];  // block 1: unit u on u
    for (int r = 0; r < 6; ++r) {
      EXPECT_EQ(d.local_units(r), want[r]) << c.name << " rank " << r;
      std::int64_t segments = want[r] == 0 ? 0 : 1;
      EXPECT_EQ(d.local_elements(r), (want[r] + 2 * segments) * 2) << c.name << " rank " << r;
      EXPECT_EQ(d.segments(r).size(), static_cast<std::size_t>(segments)) << c.name;
    }
  }
}

TEST(DistributionRegular, ResizedKeepsLayoutAndIrregularBecomesBlock) {
  for (const LayoutCase& c : kLayoutCases) {
    auto d = regular(c, 37, 3, 1, 4);
    auto r = d.resized(6);
    EXPECT_EQ(r, regular(c, 37, 3, 1, 6)) << c.name;
    EXPECT_EQ(r.layout(), c.layout);
    EXPECT_EQ(r.block(), c.layout == Layout::kBlockCyclic ? c.block : 1);
  }
  auto irregular = Distribution::regular(Layout::kCyclic, 20, 1, 1, 1, 3).split(1, 2);
  ASSERT_EQ(irregular.layout(), Layout::kIrregular);
  auto b = irregular.resized(3);
  EXPECT_EQ(b.layout(), Layout::kBlock);
  EXPECT_EQ(b, Distribution::regular(Layout::kBlock, 20, 1, 1, 1, 3));
}

// 7. Bad parameters.

TEST(DistributionRegular, BadParameters) {
  auto reg = [](Layout l, std::int64_t units, std::int64_t len, std::int64_t block,
                std::int64_t halo, int size) {
    return code_of([&] { Distribution::regular(l, units, len, block, halo, size); });
  };
  for (const LayoutCase& c : kLayoutCases) {
    EXPECT_EQ(reg(c.layout, 0, 1, c.block, 0, 2), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, -3, 1, c.block, 0, 2), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, 8, 0, c.block, 0, 2), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, 8, -1, c.block, 0, 2), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, 8, 1, c.block, -1, 2), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, 8, 1, c.block, 0, 0), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, 8, 1, c.block, 0, -2), PCM_ERR_ARG) << c.name;
    EXPECT_EQ(reg(c.layout, 8, 1, c.block, 0, 2), PCM_SUCCESS) << c.name;
  }
  EXPECT_EQ(reg(Layout::kBlockCyclic, 8, 1, 0, 0, 2), PCM_ERR_ARG);
  EXPECT_EQ(reg(Layout::kBlockCyclic, 8, 1, -2, 0, 2), PCM_ERR_ARG);
  EXPECT_EQ(reg(Layout::kIrregular, 8, 1, 1, 0, 2), PCM_ERR_ARG);
  EXPECT_EQ(reg(static_cast<Layout>(0), 8, 1, 1, 0, 2), PCM_ERR_ARG);
  EXPECT_EQ(reg(static_cast<Layout>(9), 8, 1, 1, 0, 2), PCM_ERR_ARG);
}

TEST(DistributionRegular, UnitOffsetOutOfRange) {
  for (const LayoutCase& c : kLayoutCases) {
    auto d = regular(c, 8, 3, 1, 3);
    for (std::int64_t u :
         {std::int64_t{-1}, std::int64_t{8}, std::int64_t{9}, INT64_MIN, INT64_MAX}) {
      int owner = -7;
      EXPECT_EQ(code_of([&] { d.unit_offset(u, &owner); }), PCM_ERR_ARG) << c.name << " " << u;
      EXPECT_EQ(code_of([&] { d.owner(u); }), PCM_ERR_ARG) << c.name << " " << u;
    }
    EXPECT_EQ(code_of([&] { d.unit_offset(7, nullptr); }), PCM_SUCCESS);
  }
}

// 3. split.

TEST(DistributionSplit, EveryRankOfRegularMaps) {
  int failures = 0;
  for (const LayoutCase& c : kLayoutCases)
    for (std::int64_t units : kUnits)
      for (int size = 1; size <= 6; ++size)
        for (int rank = 0; rank < size; ++rank)
          for (int into = 2; into <= 4; ++into) {
            auto d = regular(c, units, 1, 0, size);
            EXPECT_EMPTY_OR_STOP(check_split(d, rank, into, d.split(rank, into)), failures);
            for (std::int64_t halo : kHalos)
              for (std::int64_t len : kUnitLens) {
                auto h = regular(c, units, len, halo, size);
                EXPECT_EMPTY_OR_STOP(redistribute(h, h.split(rank, into)), failures);
              }
          }
}

TEST(DistributionSplit, SizeOneBlockIsRegularBlock) {
  for (std::int64_t units : kUnits)
    for (std::int64_t halo : kHalos)
      for (int into = 2; into <= 8; ++into) {
        auto one = Distribution::regular(Layout::kBlock, units, 3, 1, halo, 1);
        auto s = one.split(0, into);
        EXPECT_EQ(s, Distribution::regular(Layout::kBlock, units, 3, 1, halo, into))
            << units << " into " << into;
        EXPECT_EQ(s.layout(), Layout::kBlock);
      }
}

TEST(DistributionSplit, ExplicitBlock) {
  // Block 10 over 2 ([0,5) [5,10)); rank 0 into 3: 2, 2, 1 units; old rank 1 becomes rank 3.
  auto d = Distribution::regular(Layout::kBlock, 10, 1, 1, 1, 2).split(0, 3);
  ASSERT_EQ(d.size(), 4);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 2}}));
  EXPECT_EQ(d.segments(1), (std::vector<Segment>{{2, 2}}));
  EXPECT_EQ(d.segments(2), (std::vector<Segment>{{4, 1}}));
  EXPECT_EQ(d.segments(3), (std::vector<Segment>{{5, 5}}));
  EXPECT_EQ(d.layout(), Layout::kIrregular);
  EXPECT_EQ(d.halo(), 1);
}

TEST(DistributionSplit, ExplicitCyclic) {
  // Cyclic 10 over 2: rank 0 owns 0 2 4 6 8; into 2: {0 2 4} and {6 8}.
  auto d = Distribution::regular(Layout::kCyclic, 10, 1, 1, 0, 2).split(0, 2);
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 1}, {2, 1}, {4, 1}}));
  EXPECT_EQ(d.segments(1), (std::vector<Segment>{{6, 1}, {8, 1}}));
  EXPECT_EQ(d.segments(2), (std::vector<Segment>{{1, 1}, {3, 1}, {5, 1}, {7, 1}, {9, 1}}));
  EXPECT_EQ(d.layout(), Layout::kIrregular);
  EXPECT_EQ(redistribute(Distribution::regular(Layout::kCyclic, 10, 2, 1, 1, 2),
                         Distribution::regular(Layout::kCyclic, 10, 2, 1, 1, 2).split(0, 2)),
            "");
}

TEST(DistributionSplit, SplitOfIrregularMaps) {
  // Splitting again, including ranks that are already pieces of a split or a merge.
  int failures = 0;
  for (const LayoutCase& c : kLayoutCases) {
    auto d = regular(c, 37, 2, 1, 3).split(1, 3).merge({0, 4}).split(0, 3);
    for (int rank = 0; rank < d.size(); ++rank)
      for (int into = 2; into <= 5; ++into) {
        auto s = d.split(rank, into);
        EXPECT_EMPTY_OR_STOP(check_split(d, rank, into, s), failures);
        EXPECT_EMPTY_OR_STOP(redistribute(d, s), failures);
        EXPECT_EMPTY_OR_STOP(redistribute(s, d), failures);
      }
  }
}

TEST(DistributionSplit, BadArguments) {
  auto d = Distribution::regular(Layout::kBlock, 10, 1, 1, 0, 3);
  EXPECT_EQ(code_of([&] { d.split(-1, 2); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { d.split(3, 2); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { d.split(100, 2); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { d.split(0, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { d.split(0, 0); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { d.split(0, -3); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { d.split(2, 2); }), PCM_SUCCESS);
}

// 4. merge.

TEST(DistributionMerge, EverySubsetOfRegularMaps) {
  int failures = 0;
  for (const LayoutCase& c : kLayoutCases)
    for (std::int64_t units : kUnits)
      for (int size = 2; size <= 6; ++size)
        for (unsigned mask = 0; mask < (1u << size); ++mask) {
          std::vector<int> ranks;
          for (int r = 0; r < size; ++r)
            if (mask & (1u << r)) ranks.push_back(r);
          if (ranks.size() < 2) continue;
          auto d = regular(c, units, 1, 0, size);
          std::vector<int> new_rank_of;
          auto m = d.merge(ranks, &new_rank_of);
          EXPECT_EMPTY_OR_STOP(check_merge(d, ranks, m, new_rank_of), failures);
          // The order of the list does not matter.
          std::vector<int> reversed(ranks.rbegin(), ranks.rend()), again;
          EXPECT_EQ(d.merge(reversed, &again), m);
          EXPECT_EQ(again, new_rank_of);
          EXPECT_EQ(d.merge(ranks), m);  // new_rank_of is optional
          for (std::int64_t halo : kHalos)
            for (std::int64_t len : kUnitLens) {
              auto h = regular(c, units, len, halo, size);
              EXPECT_EMPTY_OR_STOP(redistribute(h, h.merge(ranks)), failures);
            }
        }
}

TEST(DistributionMerge, AllRanksGiveOneOwner) {
  for (const LayoutCase& c : kLayoutCases)
    for (std::int64_t units : kUnits)
      for (int size = 2; size <= 8; ++size) {
        auto d = regular(c, units, 3, 1, size);
        std::vector<int> all(size), new_rank_of;
        for (int r = 0; r < size; ++r) all[r] = size - 1 - r;
        auto m = d.merge(all, &new_rank_of);
        ASSERT_EQ(m.size(), 1);
        EXPECT_EQ(m.segments(0), (std::vector<Segment>{{0, units}}));
        EXPECT_EQ(new_rank_of, std::vector<int>(size, 0));
        EXPECT_EQ(m, regular(c, units, 3, 1, 1));
        EXPECT_EQ(m.layout(), c.layout) << c.name;
        EXPECT_EQ(redistribute(d, m), "");
        EXPECT_EQ(redistribute(m, d), "");
      }
}

TEST(DistributionMerge, ExplicitBlock) {
  // Block 12 over 4: [0,3) [3,6) [6,9) [9,12).
  auto d = Distribution::regular(Layout::kBlock, 12, 1, 1, 0, 4);
  std::vector<int> nr;
  auto m = d.merge({1, 3}, &nr);
  ASSERT_EQ(m.size(), 3);
  EXPECT_EQ(m.segments(0), (std::vector<Segment>{{0, 3}}));
  EXPECT_EQ(m.segments(1), (std::vector<Segment>{{3, 3}, {9, 3}}));
  EXPECT_EQ(m.segments(2), (std::vector<Segment>{{6, 3}}));
  EXPECT_EQ(nr, (std::vector<int>{0, 1, 2, 1}));
  EXPECT_EQ(m.layout(), Layout::kIrregular);

  m = d.merge({3, 0}, &nr);
  EXPECT_EQ(m.segments(0), (std::vector<Segment>{{0, 3}, {9, 3}}));
  EXPECT_EQ(m.segments(1), (std::vector<Segment>{{3, 3}}));
  EXPECT_EQ(nr, (std::vector<int>{0, 1, 2, 0}));

  // Adjacent ranks join into one segment.
  m = d.merge({2, 1}, &nr);
  EXPECT_EQ(m.segments(1), (std::vector<Segment>{{3, 6}}));
  EXPECT_EQ(nr, (std::vector<int>{0, 1, 1, 2}));
}

TEST(DistributionMerge, ExplicitEmptyRanksGoLast) {
  // Block 2 units over 5: ranks 2, 3, 4 own nothing.
  auto d = Distribution::regular(Layout::kBlock, 2, 1, 1, 0, 5);
  std::vector<int> nr;
  auto m = d.merge({0, 3}, &nr);
  ASSERT_EQ(m.size(), 4);
  EXPECT_EQ(m.segments(0), (std::vector<Segment>{{0, 1}}));
  EXPECT_EQ(m.segments(1), (std::vector<Segment>{{1, 1}}));
  EXPECT_TRUE(m.segments(2).empty());
  EXPECT_TRUE(m.segments(3).empty());
  EXPECT_EQ(nr, (std::vector<int>{0, 1, 2, 0, 3}));
  EXPECT_EQ(redistribute(d, m), "");
}

TEST(DistributionMerge, BadArguments) {
  auto d = Distribution::regular(Layout::kBlock, 10, 1, 1, 0, 4);
  std::vector<int> nr;
  for (const std::vector<int>& ranks : std::vector<std::vector<int>>{
           {}, {1}, {1, 1}, {0, 2, 0}, {-1, 0}, {0, 4}, {0, 100}, {2, -5}}) {
    EXPECT_EQ(code_of([&] { d.merge(ranks, &nr); }), PCM_ERR_ARG) << ranks.size();
    EXPECT_EQ(code_of([&] { d.merge(ranks); }), PCM_ERR_ARG) << ranks.size();
  }
  EXPECT_EQ(code_of([&] { d.merge({0, 3}, &nr); }), PCM_SUCCESS);
}

// 5. A sequence of reconfigurations.

TEST(DistributionSequence, SplitMergeResizeSplit) {
  for (std::int64_t units : kUnits)
    for (std::int64_t halo : kHalos)
      for (std::int64_t len : kUnitLens) {
        std::vector<Distribution> steps;
        steps.push_back(Distribution::regular(Layout::kBlock, units, len, 1, halo, 3));
        steps.push_back(steps.back().split(1, 3));
        std::vector<int> nr;
        steps.push_back(steps.back().merge({0, 4}, &nr));
        EXPECT_EQ(nr[0], nr[4]);
        steps.push_back(steps.back().resized(2));
        steps.push_back(steps.back().split(0, 4));
        std::vector<int> sizes;
        for (const auto& s : steps) sizes.push_back(s.size());
        EXPECT_EQ(sizes, (std::vector<int>{3, 5, 4, 2, 5}));
        for (std::size_t i = 1; i < steps.size(); ++i)
          EXPECT_EQ(redistribute(steps[i - 1], steps[i]), "") << "step " << i;
      }
  // 37 units: 13 12 12 -> 13 4 4 4 12 -> {13 + last 12} 4 4 4 -> 19 18 -> 5 5 5 4 18.
  auto d = Distribution::regular(Layout::kBlock, 37, 1, 1, 0, 3).split(1, 3);
  EXPECT_EQ(d.segments(1), (std::vector<Segment>{{13, 4}}));
  EXPECT_EQ(d.segments(3), (std::vector<Segment>{{21, 4}}));
  EXPECT_EQ(d.segments(4), (std::vector<Segment>{{25, 12}}));
  d = d.merge({0, 4});
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 13}, {25, 12}}));
  EXPECT_EQ(d.segments(3), (std::vector<Segment>{{21, 4}}));
  d = d.resized(2);
  EXPECT_EQ(d.layout(), Layout::kBlock);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 19}}));
  d = d.split(0, 4);
  EXPECT_EQ(d.segments(0), (std::vector<Segment>{{0, 5}}));
  EXPECT_EQ(d.segments(3), (std::vector<Segment>{{15, 4}}));
  EXPECT_EQ(d.segments(4), (std::vector<Segment>{{19, 18}}));
}

// 6. JSON.

namespace {

void expect_round_trip(const Distribution& d) {
  json j = d.to_json();
  Distribution back = Distribution::from_json(json::parse(j.dump()));
  EXPECT_EQ(back, d) << describe(d);
  EXPECT_EQ(back.layout(), d.layout()) << describe(d);
  EXPECT_EQ(back.block(), d.block()) << describe(d);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(check_geometry(back), "");
  // The rebuilt lookups agree with the original's.
  for (std::int64_t u = 0; u < d.units(); ++u) {
    int a = -1, b = -1;
    EXPECT_EQ(back.unit_offset(u, &b), d.unit_offset(u, &a));
    EXPECT_EQ(a, b);
  }
}

json valid_json() {
  return json{{"layout", 4}, {"units", 8}, {"unit_len", 1},
              {"block", 1},  {"halo", 0},  {"ranks", {{{0, 5}}, {{5, 3}}}}};
}

int from_json_code(const json& j) {
  return code_of([&] { Distribution::from_json(j); });
}

}  // namespace

TEST(DistributionJson, RoundTrips) {
  for (const LayoutCase& c : kLayoutCases)
    for (std::int64_t units : kUnits)
      for (int size : {1, 3, 8}) {
        auto d = regular(c, units, 3, 1, size);
        expect_round_trip(d);
        expect_round_trip(d.split(0, 3));
        expect_round_trip(d.split(size - 1, 2));
        if (size >= 3) {
          expect_round_trip(d.merge({0, 2}));
          expect_round_trip(d.merge({size - 1, 1}).split(0, 2));
        }
      }
  EXPECT_EQ(from_json_code(valid_json()), PCM_SUCCESS);
}

TEST(DistributionJson, RejectsBadMaps) {
  // Each case replaces one field of a valid map (8 units: rank 0 [0,5), rank 1 [5,8)).
  struct Case {
    const char* what;
    const char* key;
    json value;
  };
  const Case cases[] = {
      {"overlap", "ranks", {{{0, 5}}, {{3, 5}}}},
      {"a unit owned twice", "ranks", {{{0, 5}}, {{4, 4}}}},
      {"whole segment twice", "ranks", {{{0, 5}}, {{5, 3}}, {{5, 3}}}},
      {"gap", "ranks", {{{0, 4}}, {{5, 3}}}},
      {"gap at the start", "ranks", {{{1, 4}}, {{5, 3}}}},
      {"short of units", "ranks", {{{0, 5}}, {{5, 2}}}},
      {"beyond units", "ranks", {{{0, 5}}, {{5, 4}}}},
      {"out of order in a rank", "ranks", {{{5, 3}, {0, 5}}}},
      {"negative count", "ranks", {{{0, 5}}, {{5, -3}}, {{2, 6}}}},
      {"zero count", "ranks", {{{0, 5}, {6, 0}}, {{5, 3}}}},
      {"zero count at the end", "ranks", {{{0, 5}}, {{5, 3}}, {{8, 0}}}},
      {"negative first", "ranks", {{{-2, 7}}, {{5, 3}}}},
      {"no ranks", "ranks", json::array()},
      {"units 0", "units", 0},
      {"units -8", "units", -8},
      {"unit_len 0", "unit_len", 0},
      {"unit_len -1", "unit_len", -1},
      {"block 0", "block", 0},
      {"halo -1", "halo", -1},
      {"layout 0", "layout", 0},
      {"layout 5", "layout", 5},
      {"layout -1", "layout", -1},
      {"units a string", "units", "8"},
      {"units null", "units", nullptr},
      {"units a bool", "units", true},
      {"units an array", "units", json::array({8})},
      {"unit_len a string", "unit_len", "1"},
      {"block a string", "block", "1"},
      {"layout a string", "layout", "block"},
      {"halo an object", "halo", json::object()},
      {"ranks a string", "ranks", "ranks"},
      {"ranks a number", "ranks", 2},
      {"ranks null", "ranks", nullptr},
      {"ranks of numbers", "ranks", json::array({5, 3})},
      {"segment a number", "ranks", {{0, 5}, {{5, 3}}}},
      {"segment a string", "ranks", {{{0, 5}}, {"5,3"}}},
      {"segment too short", "ranks", {{{0, 5}}, {{5}}}},
      {"segment empty", "ranks", {{{0, 5}}, {json::array()}}},
      {"segment an object", "ranks", {{{0, 5}}, {{{"first", 5}}}}},
      {"segment of strings", "ranks", {{{0, 5}}, json::array({json::array({"5", "3"})})}},
      {"segment of nulls", "ranks", {{{0, 5}}, {{nullptr, nullptr}}}},
  };
  for (const Case& c : cases) {
    json j = valid_json();
    j[c.key] = c.value;
    EXPECT_EQ(from_json_code(j), PCM_ERR_ARG) << c.what << ": " << j.dump();
  }
  for (const char* key : {"layout", "units", "unit_len", "block", "halo", "ranks"}) {
    json j = valid_json();
    j.erase(key);
    EXPECT_EQ(from_json_code(j), PCM_ERR_ARG) << "no " << key;
  }
  // Not an object at all.
  for (const json& j :
       {json(), json(3), json("x"), json::array(), json::array({1, 2}), json::object(), json(true)})
    EXPECT_EQ(from_json_code(j), PCM_ERR_ARG) << j.dump();
}

TEST(DistributionJson, AcceptsRanksWithoutUnits) {
  json j = valid_json();
  j["ranks"] = {{{0, 5}}, json::array(), {{5, 3}}};
  Distribution d = Distribution::from_json(j);
  EXPECT_EQ(d.size(), 3);
  EXPECT_TRUE(d.segments(1).empty());
  EXPECT_EQ(d.local_elements(1), 0);
  EXPECT_EQ(d.owner(5), 2);
}

// Hostile maps from the network: truncation and overflow must be refused, not wrapped.
TEST(DistributionJsonHostile, RejectedCleanly) {
  const char* bad[] = {
      R"({"layout":4294967297,"units":8,"unit_len":1,"block":1,"halo":0,"ranks":[[[0,5]],[[5,3]]]})",
      R"({"layout":4,"units":9223372036854775807,"unit_len":1,"block":1,"halo":0,"ranks":[[[0,5]],[[5,9223372036854775807]]]})",
      R"({"layout":4,"units":8,"unit_len":1,"block":1,"halo":4611686018427387903,"ranks":[[[0,5]],[[5,3]]]})",
      R"({"layout":4,"units":8.7,"unit_len":1,"block":1,"halo":0,"ranks":[[[0,5]],[[5,3]]]})",
      R"({"layout":4,"units":8,"unit_len":1,"block":1,"halo":0,"ranks":{"a":[[0,5]],"b":[[5,3]]}})",
      R"({"layout":4,"units":8,"unit_len":1,"block":1,"halo":0,"ranks":[[[0,5,99]],[[5,3]]]})",
  };
  for (const char* text : bad) {
    try {
      pcm::common::Distribution::from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_ARG) << text;
    }
  }
}

// A second array of a merge takes the first one's numbering: after a cyclic split, ordering the
// merged ranks by first unit differs between a block and a cyclic array, and permuted() puts the
// cyclic one's new ranks where the block one's are.
TEST(DistributionPermuted, MergeOrderOfASecondArray) {
  const Distribution block = Distribution::regular(Layout::kBlock, 53, 3, 1, 1, 2).split(0, 3);
  const Distribution cyclic = Distribution::regular(Layout::kCyclic, 41, 2, 1, 0, 2).split(0, 3);
  std::vector<int> of_block, of_cyclic;
  const Distribution mb = block.merge({1, 2}, &of_block);
  const Distribution mc = cyclic.merge({1, 2}, &of_cyclic);
  ASSERT_NE(of_block, of_cyclic);  // the case that needs the permutation
  std::vector<int> perm(static_cast<std::size_t>(mc.size()), -1);
  for (int r = 0; r < cyclic.size(); ++r)
    if (of_cyclic[r] >= 0) perm[of_cyclic[r]] = of_block[r];
  const Distribution pc = mc.permuted(perm);
  pc.validate();
  EXPECT_EQ(pc.layout(), Layout::kIrregular);
  for (int r = 0; r < cyclic.size(); ++r)
    EXPECT_EQ(mc.segments(of_cyclic[r]), pc.segments(of_block[r])) << "old rank " << r;
  EXPECT_EQ(mc.permuted({0, 1, 2}), mc);
  for (const std::vector<int>& bad : std::vector<std::vector<int>>{{0, 1}, {0, 0, 1}, {0, 1, 3}}) {
    try {
      mc.permuted(bad);
      ADD_FAILURE() << "accepted a non-permutation";
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_ARG);
    }
  }
}

// keeps_in_place against its definition (every unit the old rank owned stays with it at the same
// buffer offset), and, where it holds, a merge that grows the old buffer in place and moves only
// the other ranks' units gives exactly the new buffer: over every layout, shrinks M -> N by
// resizing and merges of two neighbouring ranks.
TEST(DistributionInPlace, GrowingTheOldBufferGivesTheNewOne) {
  int checked = 0, in_place = 0;
  for (const LayoutCase& c : kLayoutCases)
    for (std::int64_t units : kUnits)
      for (std::int64_t halo : kHalos)
        for (std::int64_t len : kUnitLens)
          for (int m = 2; m <= 4; ++m) {
            const Distribution from = regular(c, units, len, halo, m);
            std::vector<std::pair<Distribution, std::vector<int>>> cases;
            for (int n = 1; n < m; ++n) {
              std::vector<int> of(static_cast<std::size_t>(m), -1);
              for (int r = 0; r < n; ++r) of[r] = r;
              cases.emplace_back(from.resized(n), of);
            }
            for (int r = 0; r + 1 < m; ++r) {
              std::vector<int> of;
              Distribution merged = from.merge({r, r + 1}, &of);
              of[r + 1] = -1;  // the lower rank keeps the merged data
              cases.emplace_back(merged, of);
            }
            for (const auto& [to, new_of] : cases) {
              const auto moves = pcm::common::plan(from, to);
              for (int r = 0; r < m; ++r) {
                const int n = new_of[r];
                bool expect = n >= 0;
                for (std::int64_t u : units_of(from, r)) {
                  int o = -1;
                  const std::int64_t at = n >= 0 ? to.unit_offset(u, &o) : -1;
                  if (o != n || at != from.unit_offset(u, nullptr)) expect = false;
                }
                const bool got = pcm::common::keeps_in_place(moves, from, to, r, n);
                ASSERT_EQ(got, expect) << describe(from) << " -> " << describe(to) << " rank " << r;
                ++checked;
                if (!got) continue;
                ++in_place;
                // The old buffer, grown (or cut) to the new size, then the others' units.
                std::vector<std::int64_t> buf(static_cast<std::size_t>(from.local_elements(r)),
                                              kSentinel);
                for (std::int64_t u : units_of(from, r))
                  for (std::int64_t k = 0; k < len; ++k)
                    buf[from.unit_offset(u, nullptr) + k] = value_of(u, k);
                buf.resize(static_cast<std::size_t>(to.local_elements(n)), kSentinel);
                for (const Transfer& t : moves) {
                  if (t.to != n || t.from == r) continue;
                  for (std::int64_t u = t.first; u < t.first + t.count; ++u)
                    for (std::int64_t k = 0; k < len; ++k)
                      buf[to.unit_offset(u, nullptr) + k] = value_of(u, k);
                }
                for (std::int64_t u : units_of(to, n))
                  for (std::int64_t k = 0; k < len; ++k)
                    ASSERT_EQ(buf[to.unit_offset(u, nullptr) + k], value_of(u, k))
                        << describe(from) << " -> " << describe(to) << " rank " << r;
              }
            }
          }
  EXPECT_GT(in_place, 100);  // block shrinks keep their prefix: the case is exercised
  EXPECT_GT(checked, in_place);
}

TEST(DistributionInPlace, ExplicitCases) {
  const Distribution b2 = Distribution::regular(Layout::kBlock, 10, 4, 1, 1, 2);
  const Distribution b1 = b2.resized(1);
  const auto moves = pcm::common::plan(b2, b1);
  EXPECT_TRUE(pcm::common::keeps_in_place(moves, b2, b1, 0, 0));
  EXPECT_FALSE(pcm::common::keeps_in_place(moves, b2, b1, 1, 0));   // its units move up
  EXPECT_FALSE(pcm::common::keeps_in_place(moves, b2, b1, 1, -1));  // a leaver
  const Distribution c2 = Distribution::regular(Layout::kCyclic, 10, 4, 1, 0, 2);
  const Distribution c1 = c2.resized(1);
  EXPECT_FALSE(pcm::common::keeps_in_place(pcm::common::plan(c2, c1), c2, c1, 0, 0));
}
