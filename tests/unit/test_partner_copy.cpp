// test_partner_copy.cpp — the partner level's parts that need no MPI: a staged shard described
// and rebuilt (items_of), a partner's copy written from it with the same layout as its owner's
// shard (so that the owner's record verifies it), and the handoff between the application's
// thread and the writer thread.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_levels.h"
#include "error.h"
#include "partner_copy.h"
#include "pcm_types.h"
#include "shard.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace pcm::lib;

namespace {

// A shard as PCM_Checkpoint stages it: items one after the other in one buffer.
struct Staged {
  std::vector<char> bytes;
  std::vector<ShardItem> items;
};

Staged staged_shard() {
  std::vector<double> x(70000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5 * static_cast<double>(i);
  const std::string map = "{\"map\":[1,2,3]}";
  const int it = 42;
  Staged s;
  s.bytes.resize(x.size() * sizeof(double) + map.size() + sizeof it);
  char* at = s.bytes.data();
  auto add = [&](const char* key, int type, std::uint64_t count, const void* p, std::size_t n) {
    std::memcpy(at, p, n);
    s.items.push_back(ShardItem{key, type, count, {{at, n}}});
    at += n;
  };
  add("x", PCM_DOUBLE, x.size(), x.data(), x.size() * sizeof(double));
  add("x.map", PCM_BYTE, map.size(), map.data(), map.size());
  add("it", PCM_INT, 1, &it, sizeof it);
  return s;
}

}  // namespace

TEST(PartnerCopy, DescribedItemsComeBackOverTheSameBytes) {
  const Staged s = staged_shard();
  const std::vector<ShardItem> back = items_of(describe_items(s.items), s.bytes);
  ASSERT_EQ(back.size(), s.items.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].key, s.items[i].key);
    EXPECT_EQ(back[i].type, s.items[i].type);
    EXPECT_EQ(back[i].count, s.items[i].count);
    ASSERT_EQ(back[i].pieces.size(), 1u);
    EXPECT_EQ(back[i].pieces[0].data, s.items[i].pieces[0].data);
    EXPECT_EQ(back[i].pieces[0].bytes, s.items[i].pieces[0].bytes);
  }
}

TEST(PartnerCopy, DescriptionThatDoesNotFitIsRefused) {
  const Staged s = staged_shard();
  const std::string desc = describe_items(s.items);
  std::vector<char> shorter(s.bytes.begin(), s.bytes.end() - 1);
  std::vector<char> longer = s.bytes;
  longer.push_back('x');
  EXPECT_EQ(code_of([&] { (void)items_of(desc, shorter); }), PCM_ERR_CORRUPT);
  EXPECT_EQ(code_of([&] { (void)items_of(desc, longer); }), PCM_ERR_CORRUPT);
  EXPECT_EQ(code_of([&] { (void)items_of("[[\"x\", 5]]", s.bytes); }), PCM_ERR_CORRUPT);
  EXPECT_EQ(code_of([&] { (void)items_of("not json", s.bytes); }), PCM_ERR_CORRUPT);
  EXPECT_EQ(code_of([&] { (void)items_of("[[\"x\", 5, 18446744073709551615]]", s.bytes); }),
            PCM_ERR_CORRUPT);
  EXPECT_EQ(code_of([&] { (void)items_of("[[\"x\", 99, 1]]", s.bytes); }), PCM_ERR_CORRUPT);
}

TEST(PartnerCopy, PartnersCopyVerifiesAgainstItsOwnersRecord) {
  TempDir owner, partner;
  const Staged s = staged_shard();
  const ShardHeader h{"j", 40, 3, 4};
  const ShardRecord rec =
      write_shard_replacing(owner.path().string(), h, s.items, shard_file_name(3));
  // The partner receives the staged bytes and their description, and writes them its own way.
  const std::vector<char> received = s.bytes;
  const std::string dir = (fs::path(partner.path()) / "v40").string();
  write_shard_replacing(dir, h, items_of(describe_items(s.items), received), partner_file_name(3));
  EXPECT_TRUE(verify_copy((fs::path(dir) / partner_file_name(3)).string(), rec));
  // Written again (a run that restarted before this version): replaced, still verified.
  write_shard_replacing(dir, h, items_of(describe_items(s.items), received), partner_file_name(3));
  EXPECT_TRUE(verify_copy((fs::path(dir) / partner_file_name(3)).string(), rec));
  EXPECT_FALSE(fs::exists(fs::path(dir) / (partner_file_name(3) + ".tmp")));
  // Other bytes do not verify.
  std::vector<char> other = s.bytes;
  other[100] ^= 1;
  write_shard_replacing(dir, h, items_of(describe_items(s.items), other), partner_file_name(3));
  EXPECT_FALSE(verify_copy((fs::path(dir) / partner_file_name(3)).string(), rec));
}

TEST(PartnerHandoff, WaitsOnlyWhenExpectedAndTheFirstDeliveryCounts) {
  PartnerHandoff h;
  h.expect(false);
  EXPECT_TRUE(h.wait().ok());  // nothing expected: at once
  h.deliver({PCM_ERR_MPI, "ignored: nothing expected"});
  EXPECT_TRUE(h.wait().ok());

  h.expect(true);
  std::thread deliverer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    h.deliver({});
    h.deliver({PCM_ERR_MPI, "too late"});
  });
  EXPECT_TRUE(h.wait().ok());
  deliverer.join();

  h.expect(true);
  h.deliver({PCM_ERR_STATE, "the process ended"});
  const Outcome o = h.wait();
  EXPECT_EQ(o.code, PCM_ERR_STATE);
  EXPECT_EQ(o.msg, "the process ended");
}
