// test_runtime_parts.cpp — unit tests of libpcm's pure parts (no mpiexec, no pcmd): the agreement
// window sizing, the planning of merges and splits, and the register-once bookkeeping.
#include <gtest/gtest.h>

#include <cstring>

#include "command.h"
#include "distribution.h"
#include "error.h"
#include "pcm_types.h"
#include "registry.h"
#include "reshape.h"
#include "status_window.h"
#include "test_util.h"

using pcm::common::Distribution;
using pcm::common::Layout;
using pcm::common::Segment;
using pcm::lib::ItemKind;
using pcm::lib::Registry;
using pcm::proto::Command;
namespace d = pcm::lib;

// ---- window sizing -------------------------------------------------------------------------

TEST(WindowCalls, FastLoopFillsTheTargetUpToTheCap) {
  // 100 calls in 100 µs: 1 µs per call, a 50 µs target gives 50 calls.
  EXPECT_EQ(d::window_calls(100e-6, 100, 50, 256), 50);
  // 10 ns per call: 1000 µs would be 100000 calls; the cap holds.
  EXPECT_EQ(d::window_calls(1e-6, 100, 1000, 256), 256);
}

TEST(WindowCalls, SlowLoopAgreesAtEveryCall) {
  EXPECT_EQ(d::window_calls(2e-3, 1, 1000, 256), 1);    // 2 ms per call
  EXPECT_EQ(d::window_calls(1e-3, 1, 1000, 256), 1);    // exactly the target
  EXPECT_EQ(d::window_calls(1000.0, 1, 1000, 256), 1);  // the first window (started at 0)
}

TEST(WindowCalls, ZeroTargetMeansEveryCall) { EXPECT_EQ(d::window_calls(1e-9, 256, 0, 256), 1); }

TEST(WindowCalls, NoTimeAtAllIsBoundedNotInfinite) {
  // A clock that did not move: the per-call time is taken as 1 ns, then capped.
  EXPECT_EQ(d::window_calls(0.0, 10, 1000, 256), 256);
  EXPECT_EQ(d::window_calls(0.0, 10, 1000, 1 << 30), 1000000);
}

TEST(StatusWindow, CountsDownTheAgreedWindow) {
  d::StatusWindow w(1000);
  EXPECT_FALSE(w.inside());  // a new world agrees at its first call
  w.begin(3);
  EXPECT_TRUE(w.inside());
  EXPECT_TRUE(w.inside());
  EXPECT_FALSE(w.inside());  // the third call agrees again
  w.begin(1);
  EXPECT_FALSE(w.inside());
}

// ---- merge and split planning --------------------------------------------------------------

namespace {

Command merge_of(std::vector<int> ranks, int world) {
  Command c;
  c.id = 1;
  c.kind = Command::Kind::kMerge;
  c.ranks = std::move(ranks);
  c.size = world - static_cast<int>(c.ranks.size()) + 1;
  return c;
}

Command resize_to(int size) {
  Command c;
  c.id = 1;
  c.kind = Command::Kind::kResize;
  c.size = size;
  return c;
}

}  // namespace

TEST(MergedRanks, MergeKeepsTheLowestListedRank) {
  EXPECT_EQ(d::merged_ranks(merge_of({1, 3}, 4), 4), (std::vector<int>{0, 1, 2, -1}));
  EXPECT_EQ(d::merged_ranks(merge_of({3, 0}, 4), 4), (std::vector<int>{0, 1, 2, -1}));
  EXPECT_EQ(d::merged_ranks(merge_of({2, 1}, 4), 4), (std::vector<int>{0, 1, -1, 2}));
  EXPECT_EQ(d::merged_ranks(merge_of({0, 1, 2, 3}, 4), 4), (std::vector<int>{0, -1, -1, -1}));
}

TEST(MergedRanks, ShrinkingResizeKeepsTheFirstRanks) {
  EXPECT_EQ(d::merged_ranks(resize_to(2), 5), (std::vector<int>{0, 1, -1, -1, -1}));
  EXPECT_EQ(d::merged_ranks(resize_to(1), 2), (std::vector<int>{0, -1}));
}

// A respawn spawns the whole world at the size the command asks: a migration's keeps every map, a
// merge's merges them as PCM_Merge would (the first map numbers the survivors for all).
TEST(NextMaps, RespawnedMigrationKeepsTheMapsAndMergeMergesThem) {
  auto block = Distribution::regular(Layout::kBlock, 12, 1, 1, 0, 4);
  auto cyclic = Distribution::regular(Layout::kCyclic, 10, 2, 0, 0, 4);
  Command mig;
  mig.id = 2;
  mig.kind = Command::Kind::kMigrate;
  mig.rank = 1;
  mig.size = 4;
  mig.respawn = true;
  auto same = d::next_maps(mig, {block, cyclic}, 4);
  ASSERT_EQ(same.size(), 2u);
  EXPECT_EQ(same[0].to_json(), block.to_json());
  EXPECT_EQ(same[1].to_json(), cyclic.to_json());
  Command m = merge_of({3, 1}, 4);
  m.respawn = true;
  std::vector<int> new_of;
  auto merged = d::merged_maps(m, {block, cyclic}, 4, &new_of);
  auto next = d::next_maps(m, {block, cyclic}, 4);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].size(), 3);
  EXPECT_EQ(next[0].to_json(), merged[0].to_json());
  EXPECT_EQ(next[1].to_json(), merged[1].to_json());
  EXPECT_EQ(new_of, (std::vector<int>{0, 1, 2, -1}));
  // A growing command grows them, respawn or not.
  Command grow = resize_to(6);
  EXPECT_EQ(d::next_maps(grow, {block}, 4)[0].size(), 6);
}

TEST(MergedDistribution, MergeOfBlock) {
  // Block 12 over 4: [0,3) [3,6) [6,9) [9,12); ranks 1 and 3 become new rank 1, on old rank 1.
  auto map = Distribution::regular(Layout::kBlock, 12, 1, 1, 0, 4);
  std::vector<int> new_of;
  auto next = d::merged_distribution(merge_of({3, 1}, 4), map, &new_of);
  ASSERT_EQ(next.size(), 3);
  EXPECT_EQ(next.segments(1), (std::vector<Segment>{{3, 3}, {9, 3}}));
  EXPECT_EQ(new_of, (std::vector<int>{0, 1, 2, -1}));
  // A map whose ranks follow the data numbers the survivors as merged_ranks does.
  EXPECT_EQ(new_of, d::merged_ranks(merge_of({3, 1}, 4), 4));
}

TEST(MergedDistribution, MergeOrdersNewRanksByFirstUnit) {
  // Block 12 over 4: 0 and 3 become new rank 0 (on old rank 0); 1 and 2 keep their order.
  auto map = Distribution::regular(Layout::kBlock, 12, 1, 1, 0, 4);
  std::vector<int> new_of;
  auto next = d::merged_distribution(merge_of({0, 3}, 4), map, &new_of);
  EXPECT_EQ(next.segments(0), (std::vector<Segment>{{0, 3}, {9, 3}}));
  EXPECT_EQ(new_of, (std::vector<int>{0, 1, 2, -1}));
}

TEST(MergedDistribution, ShrinkingResize) {
  auto map = Distribution::regular(Layout::kCyclic, 10, 2, 1, 0, 4);
  std::vector<int> new_of;
  auto next = d::merged_distribution(resize_to(3), map, &new_of);
  EXPECT_EQ(next.size(), 3);
  EXPECT_EQ(next.layout(), Layout::kCyclic);
  EXPECT_EQ(next.units(), 10);
  EXPECT_EQ(next.unit_len(), 2);
  EXPECT_EQ(new_of, (std::vector<int>{0, 1, 2, -1}));
}

TEST(GrownDistribution, SplitNumbersTheNewRanksInPlace) {
  // Block 12 over 3: rank 1 ([4,8)) into 3 -> new ranks 1, 2, 3; old rank 2 becomes 4.
  auto map = Distribution::regular(Layout::kBlock, 12, 1, 1, 0, 3);
  Command c;
  c.kind = Command::Kind::kSplit;
  c.rank = 1;
  c.into = 3;
  c.size = 5;
  auto next = d::grown_distribution(c, map);
  ASSERT_EQ(next.size(), 5);
  EXPECT_EQ(next.segments(0), (std::vector<Segment>{{0, 4}}));
  EXPECT_EQ(next.local_units(1) + next.local_units(2) + next.local_units(3), 4);
  EXPECT_EQ(next.segments(1).front().first, 4);
  EXPECT_EQ(next.segments(4), (std::vector<Segment>{{8, 4}}));
}

TEST(GrownDistribution, GrowingResizeKeepsTheLayout) {
  auto map = Distribution::regular(Layout::kCyclic, 9, 1, 1, 0, 2);
  auto next = d::grown_distribution(resize_to(3), map);
  EXPECT_EQ(next.size(), 3);
  EXPECT_EQ(next.layout(), Layout::kCyclic);
  EXPECT_EQ(next.segments(2).front().first, 2);
}

// ---- registration bookkeeping --------------------------------------------------------------

TEST(Registry, AddRemoveAndOrder) {
  Registry r;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.describe(), "nothing");
  void* buf = nullptr;
  PCM_Dist dist = nullptr;
  int it = 0;
  double local[3] = {};
  r.add_dist("grid", &buf, PCM_DOUBLE, &dist);
  r.add_value("it", &it, PCM_INT, 1, ItemKind::kValue);
  r.add_value("acc", local, PCM_DOUBLE, 3, ItemKind::kLocal);
  EXPECT_EQ(r.describe(), "grid:dist:double it:value:int[1] acc:local:double[3]");
  ASSERT_EQ(r.of(ItemKind::kValue).size(), 1u);
  EXPECT_EQ(r.of(ItemKind::kValue)[0]->name, "it");
  EXPECT_EQ(Registry::key(r.items()[0]), "pcm.grid");
  EXPECT_EQ(Registry::map_key(r.items()[0]), "pcm.grid.map");
  r.remove("it");
  EXPECT_EQ(r.describe(), "grid:dist:double acc:local:double[3]");
  EXPECT_EQ(code_of([&] { r.remove("it"); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.remove(nullptr); }), PCM_ERR_ARG);
}

TEST(Registry, Refusals) {
  Registry r;
  int x = 0;
  void* buf = nullptr;
  PCM_Dist dist = nullptr;
  r.add_value("x", &x, PCM_INT, 1, ItemKind::kValue);
  EXPECT_EQ(code_of([&] { r.add_value("x", &x, PCM_INT, 1, ItemKind::kLocal); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.add_dist("x", &buf, PCM_INT, &dist); }), PCM_ERR_ARG);
  for (const char* bad : {"", ".hidden", "-dash", "sp ace", "sl/ash"})
    EXPECT_EQ(code_of([&] { r.add_value(bad, &x, PCM_INT, 1, ItemKind::kValue); }), PCM_ERR_ARG)
        << bad;
  EXPECT_EQ(code_of([&] { r.add_value(nullptr, &x, PCM_INT, 1, ItemKind::kValue); }), PCM_ERR_ARG);
  const std::string longest(Registry::kMaxName, 'a');
  r.add_value(longest.c_str(), &x, PCM_INT, 1, ItemKind::kValue);
  const std::string too_long(Registry::kMaxName + 1, 'b');
  EXPECT_EQ(code_of([&] { r.add_value(too_long.c_str(), &x, PCM_INT, 1, ItemKind::kValue); }),
            PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.add_value("t", &x, 999, 1, ItemKind::kValue); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.add_value("n", &x, PCM_INT, -1, ItemKind::kValue); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.add_value("v", nullptr, PCM_INT, 1, ItemKind::kValue); }), PCM_ERR_ARG);
  r.add_value("empty", nullptr, PCM_INT, 0, ItemKind::kValue);  // nothing to point at
  EXPECT_EQ(code_of([&] { r.add_dist("d", nullptr, PCM_INT, &dist); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.add_dist("d", &buf, PCM_INT, nullptr); }), PCM_ERR_ARG);
  EXPECT_EQ(code_of([&] { r.add_dist("d", &buf, 0, &dist); }), PCM_ERR_ARG);
}

TEST(Registry, SignatureEqualityAndDifference) {
  int a = 0, b[2] = {};
  auto make = [&](const char* name, int type, long count, ItemKind kind) {
    Registry r;
    r.add_value("a", &a, PCM_INT, 1, ItemKind::kValue);
    r.add_value(name, b, type, count, kind);
    return r.signature();
  };
  const auto base = make("b", PCM_INT, 2, ItemKind::kLocal);
  EXPECT_EQ(base, make("b", PCM_INT, 2, ItemKind::kLocal));  // other addresses do not matter
  EXPECT_NE(base, make("c", PCM_INT, 2, ItemKind::kLocal));
  EXPECT_NE(base, make("b", PCM_FLOAT, 2, ItemKind::kLocal));
  EXPECT_NE(base, make("b", PCM_INT, 1, ItemKind::kLocal));
  EXPECT_NE(base, make("b", PCM_INT, 2, ItemKind::kValue));
  // Order matters.
  Registry x, y;
  x.add_value("a", &a, PCM_INT, 1, ItemKind::kValue);
  x.add_value("b", b, PCM_INT, 2, ItemKind::kValue);
  y.add_value("b", b, PCM_INT, 2, ItemKind::kValue);
  y.add_value("a", &a, PCM_INT, 1, ItemKind::kValue);
  EXPECT_NE(x.signature(), y.signature());
}

TEST(Registry, PackUnpackZero) {
  int it = 7;
  double t[2] = {1.5, -2.5};
  long l = 9;
  Registry r;
  r.add_value("it", &it, PCM_INT, 1, ItemKind::kValue);
  r.add_value("none", nullptr, PCM_DOUBLE, 0, ItemKind::kValue);
  r.add_value("t", t, PCM_DOUBLE, 2, ItemKind::kValue);
  r.add_value("l", &l, PCM_LONG, 1, ItemKind::kLocal);
  const std::string packed = r.pack(ItemKind::kValue);
  EXPECT_EQ(packed.size(), sizeof(int) + 2 * sizeof(double));
  EXPECT_EQ(r.pack(ItemKind::kLocal).size(), sizeof(long));
  it = 0;
  t[0] = t[1] = 0;
  r.unpack(ItemKind::kValue, packed);
  EXPECT_EQ(it, 7);
  EXPECT_EQ(t[0], 1.5);
  EXPECT_EQ(t[1], -2.5);
  EXPECT_EQ(l, 9);  // another kind is left alone
  EXPECT_EQ(code_of([&] { r.unpack(ItemKind::kValue, packed.substr(1)); }), PCM_ERR_COUNT);
  EXPECT_EQ(code_of([&] { r.unpack(ItemKind::kValue, packed + "x"); }), PCM_ERR_COUNT);
  r.zero(ItemKind::kLocal);
  EXPECT_EQ(l, 0);
  EXPECT_EQ(it, 7);
  r.zero(ItemKind::kValue);
  EXPECT_EQ(it, 0);
  EXPECT_EQ(t[1], 0.0);
}
