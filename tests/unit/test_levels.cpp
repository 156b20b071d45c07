// test_levels.cpp — checkpoint levels in pcmd's versions: a manifest records where each shard's
// copies are, a version whose shards are on the hosts' levels only is still a version, pruning
// keeps the newest version on the shared level, and the levels record from the wire is checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "error.h"
#include "levels.h"
#include "ops.h"
#include "pcm_types.h"
#include "shard.h"
#include "storage/checkpoint.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace pcm::daemon;
using nlohmann::json;

namespace {

// Version v of job "j" on two ranks: rank 0's shard in the version's directory when shared0, rank
// 1's only on the hosts' levels (its record as the rank reported it) unless shared1.
Manifest make_version(Checkpoints& cp, std::int64_t v, bool shared0, bool shared1) {
  std::vector<double> x(5000, static_cast<double>(v));
  const ShardItem item{"x", PCM_DOUBLE, x.size(), {{x.data(), x.size() * sizeof(double)}}};
  const auto d = cp.begin_shards("j", v);
  std::vector<ShardRecord> recs;
  std::vector<ShardLevels> levels;
  for (int r = 0; r < 2; ++r) {
    const bool shared = r == 0 ? shared0 : shared1;
    if (shared) {
      recs.push_back(write_shard(d.dir.string(), ShardHeader{"j", v, r, 2}, {item}));
    } else {
      std::vector<char> image;
      recs.push_back(image_shard(ShardHeader{"j", v, r, 2}, {item}, image));
    }
    levels.push_back(ShardLevels{"h" + std::to_string(r + 1), "h" + std::to_string(2 - r), shared});
  }
  return cp.commit_shards("j", v, 2, nullptr, recs, levels);
}

}  // namespace

TEST(CheckpointLevels, ManifestRecordsWhereShardsAre) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  const Manifest m = make_version(cp, 3, true, false);
  ASSERT_EQ(m.levels.size(), 2u);
  EXPECT_TRUE(m.on_shared(0));
  EXPECT_FALSE(m.on_shared(1));
  // On the disk as committed: the manifest says where each shard is.
  const auto back = cp.latest_valid("j");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->iteration, 3);
  ASSERT_EQ(back->levels.size(), 2u);
  EXPECT_EQ(back->levels[1], (ShardLevels{"h2", "h1", false}));
  EXPECT_EQ(back->to_json().at("levels").at(1).at("partner"), "h1");
  // Rank 1's shard is not in the directory, and need not be: the version verifies.
  EXPECT_FALSE(fs::exists(cp.version_dir("j", 3) / "r1.h5"));
  EXPECT_TRUE(cp.verify("j", 3).valid) << cp.verify("j", 3).why;
  // The shared one is still checked.
  fs::remove(cp.version_dir("j", 3) / "r0.h5");
  EXPECT_FALSE(cp.verify("j", 3).valid);
  // Without levels, as before: every shard must be there.
  Manifest plain = Manifest::from_json(back->to_json());
  plain.levels.clear();
  EXPECT_FALSE(plain.to_json().contains("levels"));
  EXPECT_TRUE(Manifest::from_json(plain.to_json()).levels.empty());
  EXPECT_TRUE(Manifest::from_json(plain.to_json()).on_shared(1));
  // Levels of another count than the shards are refused.
  json j = back->to_json();
  j["levels"].erase(1);
  EXPECT_EQ(code_of([&] { Manifest::from_json(j); }), PCM_ERR_ARG);
}

TEST(CheckpointLevels, CommitChecksOnlyTheSharedShards) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  std::vector<double> x(100, 1.0);
  const ShardItem item{"x", PCM_DOUBLE, x.size(), {{x.data(), x.size() * sizeof(double)}}};
  const auto d = cp.begin_shards("j", 4);
  std::vector<char> image;
  const ShardRecord r0 = image_shard(ShardHeader{"j", 4, 0, 1}, {item}, image);
  // Said to be on the shared level, but not there: no version.
  EXPECT_EQ(code_of([&] {
              cp.commit_shards("j", 4, 1, nullptr, {r0}, {ShardLevels{"h1", "", true}});
            }),
            PCM_ERR_REFUSED);
  EXPECT_EQ(code_of([&] {
              cp.commit_shards("j", 4, 1, nullptr, {r0},
                               {ShardLevels{"h1", "", false}, ShardLevels{"h1", "", false}});
            }),
            PCM_ERR_REFUSED);
  const Manifest m = cp.commit_shards("j", 4, 1, nullptr, {r0}, {ShardLevels{"h1", "", false}});
  EXPECT_EQ(m.file_size, r0.size);
  EXPECT_TRUE(cp.verify("j", 4).valid);
}

TEST(CheckpointLevels, PruneKeepsTheNewestSharedVersion) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  make_version(cp, 1, true, true);  // a flush
  for (std::int64_t v = 2; v <= 6; ++v) make_version(cp, v, true, false);
  const auto removed = cp.prune("j", 2, 6);
  EXPECT_EQ(removed, (std::vector<std::int64_t>{4, 3, 2}));
  std::vector<std::int64_t> left;
  for (const auto& v : cp.list("j")) left.push_back(v.iteration);
  EXPECT_EQ(left, (std::vector<std::int64_t>{6, 5, 1})) << "the newest version on the shared level";
  make_version(cp, 7, true, true);
  make_version(cp, 8, true, false);
  cp.prune("j", 2, 8);
  left.clear();
  for (const auto& v : cp.list("j")) left.push_back(v.iteration);
  EXPECT_EQ(left, (std::vector<std::int64_t>{8, 7}));
}

TEST(CheckpointLevels, OutOfReachIsSkippedUntilTheNextRestartAndDamagedForGood) {
  TempDir tmp;
  Checkpoints cp(tmp.path());
  make_version(cp, 1, true, true);
  make_version(cp, 2, true, false);
  // A restart could not reach rank 1's shard of version 2 (its hosts were lost).
  cp.mark_bad("j", 2, "rank 1 on no level in reach", true);
  EXPECT_FALSE(cp.verify("j", 2).valid);
  EXPECT_NE(cp.verify("j", 2).why.find("out of reach"), std::string::npos) << cp.verify("j", 2).why;
  ASSERT_TRUE(cp.latest_valid("j"));
  EXPECT_EQ(cp.latest_valid("j")->iteration, 1);
  // Marked again by a second restart that failed the same way: still one mark.
  cp.mark_bad("j", 2, "again", true);
  EXPECT_EQ(cp.latest_valid("j")->iteration, 1);
  // The next restart looks again: the hosts may be back.
  cp.forget_unreachable("j");
  EXPECT_TRUE(cp.verify("j", 2).valid) << cp.verify("j", 2).why;
  EXPECT_EQ(cp.latest_valid("j")->iteration, 2);
  // A job that went on from version 1 makes version 2 again over one out of reach.
  cp.mark_bad("j", 2, "out of reach", true);
  make_version(cp, 2, true, true);
  EXPECT_TRUE(cp.verify("j", 2).valid) << cp.verify("j", 2).why;
  // Damaged is for good, whatever the next restart does.
  cp.mark_bad("j", 2, "chunk 3 of rank 0 does not match its checksum");
  cp.forget_unreachable("j");
  EXPECT_FALSE(cp.verify("j", 2).valid);
  EXPECT_EQ(cp.latest_valid("j")->iteration, 1);
}

TEST(CheckpointLevels, LevelsFromTheWireAreChecked) {
  EXPECT_EQ(ShardLevels::from_json(json{{"host", "a"}, {"shared", false}}),
            (ShardLevels{"a", "", false}));
  EXPECT_EQ(ShardLevels::from_json(json{{"shared", true}}), (ShardLevels{"", "", true}));
  const std::string fqdn = std::string(90, 'n') + ".cluster.example.org";  // longer than a key
  EXPECT_EQ(ShardLevels::from_json(json{{"partner", fqdn}, {"shared", false}}).partner, fqdn);
  for (const json& bad :
       {json{{"shared", false}}, json{{"host", "a"}}, json{{"host", "../x"}, {"shared", true}},
        json{{"host", 3}, {"shared", true}}, json{{"partner", ""}, {"shared", false}},
        json{{"host", std::string(256, 'a')}, {"shared", true}},
        json{{"host", "a_b"}, {"shared", true}}, json::array()})
    EXPECT_EQ(code_of([&] { ShardLevels::from_json(bad); }), PCM_ERR_ARG) << bad.dump();
  // In a shard_done request.
  json req{{"job", "j"},
           {"iteration", 1},
           {"rank", 0},
           {"size", 1},
           {"levels", {{"host", "h1"}, {"shared", false}}}};
  const auto done = pcm::ops::ShardDone::from_json(req);
  ASSERT_TRUE(done.levels);
  EXPECT_EQ(done.levels->host, "h1");
  req["levels"] = {{"shared", "yes"}};
  EXPECT_EQ(code_of([&] { pcm::ops::ShardDone::from_json(req); }), PCM_ERR_ARG);
  req.erase("levels");
  EXPECT_FALSE(pcm::ops::ShardDone::from_json(req).levels) << "older libpcm: shared only";
  EXPECT_EQ(local_version_name(12), "v00000000000000000012");
  EXPECT_EQ(partner_file_name(3), "p3.h5");
}
