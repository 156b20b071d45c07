// test_halo.cpp — unit tests of halo exchange plans: every ghost filled once from its owner, runs
// maximal, and every send matching its receive, over regular and irregular maps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "distribution.h"
#include "error.h"
#include "halo.h"
#include "pcm_types.h"
#include "test_util.h"

using pcm::common::Distribution;
using pcm::common::halo_plan;
using pcm::common::HaloPlan;
using pcm::common::HaloRun;
using pcm::common::Layout;
using pcm::common::Segment;

// gtest prints runs this way in failed comparisons.
namespace pcm::common {
void PrintTo(const HaloRun& r, std::ostream* os) {
  *os << "{peer " << r.peer << ", ghost " << r.ghost_offset << ", source " << r.source_offset
      << ", units " << r.units << "}";
}
}  // namespace pcm::common

namespace {

constexpr std::int64_t kSentinel = -1;

// The value an element holds: its global unit and its index within the unit.
std::int64_t value_of(std::int64_t unit, std::int64_t element) { return unit * 1000 + element; }

using ::describe;  // of a map (test_util.h), beside this one of a run

std::string describe(const HaloRun& r) {
  std::ostringstream o;
  pcm::common::PrintTo(r, &o);
  return o.str();
}

// Every regular layout over 1..5 ranks (with fewer units than ranks too), and irregular maps
// made from them by splits and merges.
std::vector<Distribution> test_maps(std::int64_t unit_len, std::int64_t halo) {
  struct LayoutCase {
    Layout layout;
    std::int64_t block;
  };
  const LayoutCase layouts[] = {{Layout::kBlock, 1},
                                {Layout::kCyclic, 1},
                                {Layout::kBlockCyclic, 2},
                                {Layout::kBlockCyclic, 3}};
  const std::int64_t unit_counts[] = {1, 2, 3, 4, 7, 12, 23};
  std::vector<Distribution> maps;
  for (int size = 1; size <= 5; ++size) {
    for (const LayoutCase& l : layouts) {
      for (std::int64_t units : unit_counts) {
        Distribution d = Distribution::regular(l.layout, units, unit_len, l.block, halo, size);
        maps.push_back(d);
        if (size >= 2) maps.push_back(d.merge({0, size - 1}));
        if (size >= 3) maps.push_back(d.merge({1, size - 1}));
        if (size <= 4) {
          maps.push_back(d.split(0, 2));
          maps.push_back(d.split(size - 1, 3));
        }
      }
    }
  }
  return maps;
}

// Every rank's buffer: owned elements hold value_of(unit, element), ghosts the sentinel.
std::vector<std::vector<std::int64_t>> filled_buffers(const Distribution& d) {
  std::vector<std::vector<std::int64_t>> bufs(d.size());
  const std::int64_t len = d.unit_len();
  for (int r = 0; r < d.size(); ++r) {
    bufs[r].assign(static_cast<std::size_t>(d.local_elements(r)), kSentinel);
    const auto& segs = d.segments(r);
    for (std::size_t i = 0; i < segs.size(); ++i) {
      const std::int64_t at = d.segment_offset(r, i);
      for (std::int64_t k = 0; k < segs[i].count; ++k)
        for (std::int64_t e = 0; e < len; ++e)
          bufs[r][at + k * len + e] = value_of(segs[i].first + k, e);
    }
  }
  return bufs;
}

// Applies rank's receives to simulated buffers and checks, element by element, that exactly the
// in-range ghosts within `width` of each segment are written, once, with their unit's values,
// and that the runs are maximal. Returns the first problem, or "".
std::string check_receives(const Distribution& d, int rank, std::int64_t width) {
  std::ostringstream err;
  err << describe(d) << " rank " << rank << " width " << width << ": ";
  const HaloPlan plan = halo_plan(d, rank, width);
  auto bufs = filled_buffers(d);
  const auto before = bufs;
  const std::int64_t len = d.unit_len(), halo = d.halo();
  std::vector<int> writes(bufs[rank].size(), 0);
  for (std::size_t i = 0; i < plan.recv.size(); ++i) {
    const HaloRun& r = plan.recv[i];
    if (r.peer < 0 || r.peer >= d.size() || r.units < 1 || r.ghost_offset < 0 ||
        r.source_offset < 0 ||
        r.ghost_offset + r.units * len > static_cast<std::int64_t>(bufs[rank].size()) ||
        r.source_offset + r.units * len > static_cast<std::int64_t>(bufs[r.peer].size()))
      return err.str() + "run " + describe(r) + " is out of bounds";
    for (std::int64_t k = 0; k < r.units * len; ++k) {
      const std::int64_t v = before[r.peer][r.source_offset + k];
      if (v == kSentinel) return err.str() + "run " + describe(r) + " reads a ghost";
      bufs[rank][r.ghost_offset + k] = v;
      ++writes[r.ghost_offset + k];
    }
    if (i > 0) {
      const HaloRun& p = plan.recv[i - 1];
      if (p.peer == r.peer && p.ghost_offset + p.units * len == r.ghost_offset &&
          p.source_offset + p.units * len == r.source_offset)
        return err.str() + "runs " + describe(p) + " and " + describe(r) + " could be one";
    }
  }
  // What every element of the buffer must hold now.
  std::int64_t at = halo;  // units to the current segment's first unit
  for (const Segment& s : d.segments(rank)) {
    for (std::int64_t j = -halo; j < s.count + halo; ++j) {
      const std::int64_t unit = s.first + j;
      const bool owned = j >= 0 && j < s.count;
      const std::int64_t distance = j < 0 ? -j : j - s.count + 1;
      const bool filled = !owned && distance <= width && unit >= 0 && unit < d.units();
      for (std::int64_t e = 0; e < len; ++e) {
        const std::int64_t pos = (at + j) * len + e;
        const std::int64_t want = owned || filled ? value_of(unit, e) : kSentinel;
        const int want_writes = filled ? 1 : 0;
        if (bufs[rank][pos] != want || writes[pos] != want_writes) {
          err << "element " << pos << " (unit " << unit << ", element " << e << ") holds "
              << bufs[rank][pos] << " written " << writes[pos] << " times; expected " << want
              << " written " << want_writes << " times";
          return err.str();
        }
      }
    }
    at += s.count + 2 * halo;
  }
  if (at - halo != static_cast<std::int64_t>(bufs[rank].size()) / len)
    return err.str() + "the segments do not cover the buffer";
  return "";
}

// Checks that every rank's sends to each peer are exactly that peer's receives from it, in the
// peer's order, that no rank sends to itself, and that sends come in ascending peer order.
std::string check_sends(const Distribution& d, std::int64_t width) {
  std::ostringstream err;
  err << describe(d) << " width " << width << ": ";
  std::vector<HaloPlan> plans;
  for (int r = 0; r < d.size(); ++r) plans.push_back(halo_plan(d, r, width));
  for (int a = 0; a < d.size(); ++a) {
    for (std::size_t i = 0; i < plans[a].send.size(); ++i) {
      if (plans[a].send[i].peer == a) return err.str() + "a rank sends to itself";
      if (i > 0 && plans[a].send[i - 1].peer > plans[a].send[i].peer)
        return err.str() + "sends are not in ascending peer order";
    }
    for (int b = 0; b < d.size(); ++b) {
      if (b == a) continue;
      std::vector<HaloRun> sent, received;
      for (const HaloRun& s : plans[a].send)
        if (s.peer == b) sent.push_back(s);
      for (const HaloRun& r : plans[b].recv)
        if (r.peer == a) received.push_back({b, r.ghost_offset, r.source_offset, r.units});
      if (sent != received) {
        err << "rank " << a << " sends " << sent.size() << " runs to rank " << b
            << ", which receives " << received.size() << " from it";
        for (std::size_t i = 0; i < std::min(sent.size(), received.size()); ++i)
          if (!(sent[i] == received[i]))
            err << "; first difference at " << i << ": " << describe(sent[i]) << " vs "
                << describe(received[i]);
        return err.str();
      }
    }
  }
  return "";
}

class HaloPlanMaps : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(HaloPlanMaps, ReceivesFillEveryGhostAndSendsMatch) {
  const std::int64_t unit_len = GetParam(), halo = 3;
  int maps = 0;
  for (const Distribution& d : test_maps(unit_len, halo)) {
    ++maps;
    for (std::int64_t width = 0; width <= halo; ++width) {
      for (int r = 0; r < d.size(); ++r) {
        std::string problem = check_receives(d, r, width);
        ASSERT_EQ(problem, "");
      }
      std::string problem = check_sends(d, width);
      ASSERT_EQ(problem, "");
    }
  }
  EXPECT_GT(maps, 500);
}

TEST_P(HaloPlanMaps, WidthBelowTheMapsHalo) {
  // Ghost areas wider than the exchange: the rest of each ghost area stays untouched.
  const std::int64_t unit_len = GetParam();
  for (const Distribution& d : test_maps(unit_len, 5)) {
    for (std::int64_t width : {1, 2}) {
      for (int r = 0; r < d.size(); ++r) ASSERT_EQ(check_receives(d, r, width), "");
      ASSERT_EQ(check_sends(d, width), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HaloUnitLengths, HaloPlanMaps, ::testing::Values(1, 3));

TEST(HaloPlan, ExplicitBlock) {
  // 10 units of 3 elements on 2 ranks, halo 2: [0,5) and [5,10), each buffer (2+5+2)*3 long.
  Distribution d = Distribution::regular(Layout::kBlock, 10, 3, 1, 2, 2);
  HaloPlan p0 = halo_plan(d, 0, 2), p1 = halo_plan(d, 1, 2);
  EXPECT_EQ(p0.recv, (std::vector<HaloRun>{{1, 21, 6, 2}}));  // units 5, 6 after [0,5)
  EXPECT_EQ(p0.send, (std::vector<HaloRun>{{1, 0, 15, 2}}));  // units 3, 4 before [5,10)
  EXPECT_EQ(p1.recv, (std::vector<HaloRun>{{0, 0, 15, 2}}));
  EXPECT_EQ(p1.send, (std::vector<HaloRun>{{0, 21, 6, 2}}));
  HaloPlan w1 = halo_plan(d, 0, 1);
  EXPECT_EQ(w1.recv, (std::vector<HaloRun>{{1, 21, 6, 1}}));
  EXPECT_EQ(w1.send, (std::vector<HaloRun>{{1, 3, 18, 1}}));
}

TEST(HaloPlan, ExplicitCyclicSendsAUnitOncePerGhost) {
  // 6 units on 2 ranks, halo 2, width 2: rank 0 owns units 0, 2, 4 as three segments at buffer
  // units 2, 7 and 12. Its ghosts: 1, 2 | 0, 1 | 3, 4 | 2, 3 | 5 (0 has none before, 6 is past
  // the end). Units 1 and 3 are ghosts of two of its segments each.
  Distribution d = Distribution::regular(Layout::kCyclic, 6, 1, 1, 2, 2);
  HaloPlan p = halo_plan(d, 0, 2);
  EXPECT_EQ(p.recv, (std::vector<HaloRun>{{1, 3, 2, 1},
                                          {0, 4, 7, 1},
                                          {0, 5, 2, 1},
                                          {1, 6, 2, 1},
                                          {1, 8, 7, 1},
                                          {0, 9, 12, 1},
                                          {0, 10, 7, 1},
                                          {1, 11, 7, 1},
                                          {1, 13, 12, 1}}));
  HaloPlan q = halo_plan(d, 1, 2);
  std::vector<HaloRun> from0;
  for (const HaloRun& r : q.recv)
    if (r.peer == 0) from0.push_back({1, r.ghost_offset, r.source_offset, r.units});
  EXPECT_EQ(p.send, from0);
}

TEST(HaloPlan, RunsJoinAcrossSegmentsWhenContiguousInBothBuffers) {
  // Rank 0 owns [0,3) and [5,10); rank 1 owns [3,5). With halo 1, rank 0's ghost after its
  // first segment (unit 3) and before its second (unit 4) are adjacent in both buffers.
  Distribution d = Distribution::from_json(nlohmann::json{{"layout", 4},
                                                          {"units", 10},
                                                          {"unit_len", 2},
                                                          {"block", 1},
                                                          {"halo", 1},
                                                          {"ranks", {{{0, 3}, {5, 5}}, {{3, 2}}}}});
  HaloPlan p = halo_plan(d, 0, 1);
  EXPECT_EQ(p.recv, (std::vector<HaloRun>{{1, 8, 2, 2}}));
  EXPECT_EQ(p.send, (std::vector<HaloRun>{{1, 0, 6, 1}, {1, 6, 12, 1}}));
  HaloPlan q = halo_plan(d, 1, 1);
  EXPECT_EQ(q.recv, (std::vector<HaloRun>{{0, 0, 6, 1}, {0, 6, 12, 1}}));
}

TEST(HaloPlan, RankWithoutUnitsHasNoRuns) {
  Distribution d = Distribution::regular(Layout::kBlock, 2, 1, 1, 1, 4);
  for (int r = 2; r < 4; ++r) {
    HaloPlan p = halo_plan(d, r, 1);
    EXPECT_TRUE(p.recv.empty());
    EXPECT_TRUE(p.send.empty());
  }
  EXPECT_EQ(halo_plan(d, 0, 1).recv, (std::vector<HaloRun>{{1, 2, 1, 1}}));
}

TEST(HaloPlan, WidthZeroIsEmpty) {
  Distribution d = Distribution::regular(Layout::kCyclic, 9, 2, 1, 2, 3);
  for (int r = 0; r < 3; ++r) {
    HaloPlan p = halo_plan(d, r, 0);
    EXPECT_TRUE(p.recv.empty());
    EXPECT_TRUE(p.send.empty());
  }
}

TEST(HaloPlan, BadArguments) {
  Distribution d = Distribution::regular(Layout::kBlock, 9, 2, 1, 2, 3);
  EXPECT_EQ(code_of([&] { halo_plan(d, 0, -1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { halo_plan(d, 0, 3); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { halo_plan(d, -1, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { halo_plan(d, 3, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { halo_plan(d, 2, 2); }), PCM_SUCCESS);
  Distribution none = Distribution::regular(Layout::kBlock, 9, 2, 1, 0, 3);
  EXPECT_EQ(code_of([&] { halo_plan(none, 0, 1); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { halo_plan(none, 0, 0); }), PCM_SUCCESS);
}

}  // namespace
