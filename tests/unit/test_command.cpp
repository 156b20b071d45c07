// test_command.cpp — unit tests of the reconfiguration command shared by pcmd and libpcm: each
// kind decoded and validated against a world size, each refusal, and the wire encoding.
#include <gtest/gtest.h>

#include "command.h"
#include "error.h"
#include "pcm_types.h"
#include "test_util.h"

using pcm::proto::Command;
using pcm::proto::json;
namespace proto = pcm::proto;

namespace {

json migrate_json() {
  return json{{"id", 5}, {"kind", "migrate"}, {"rank", 1}, {"size", 4}, {"host", "node-2"}};
}
json split_json() {
  return json{{"id", 6},   {"kind", "split"}, {"rank", 0},
              {"into", 3}, {"size", 4},       {"hosts", {"a", "a", "b", "b"}}};
}

}  // namespace

TEST(Command, KindNames) {
  for (auto k : {Command::Kind::kMigrate, Command::Kind::kSplit, Command::Kind::kMerge,
                 Command::Kind::kResize})
    EXPECT_EQ(proto::kind_from_name(proto::kind_name(k)), k);
  EXPECT_FALSE(proto::kind_from_name("explode"));
  EXPECT_FALSE(proto::kind_from_name(""));
}

TEST(Command, Migrate) {
  Command c = Command::from_json(migrate_json(), 4);
  EXPECT_EQ(c.id, 5);
  EXPECT_EQ(c.kind, Command::Kind::kMigrate);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.host, "node-2");
  EXPECT_EQ(c.size, 4);
  EXPECT_EQ(c.describe(), "migrate of rank 1 to node-2");
}

TEST(Command, MigrateRefusals) {
  auto j = migrate_json();
  EXPECT_EQ(code_of([&] { Command::from_json(j, 5); }), PCM_ERR_ARG);  // size changes
  j["rank"] = 4;
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);  // no such rank
  j = migrate_json();
  j["host"] = "-bad";
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j.erase("host");
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j = migrate_json();
  j["id"] = 0;
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j = migrate_json();
  j["kind"] = "explode";
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
}

TEST(Command, Split) {
  Command c = Command::from_json(split_json(), 2);
  EXPECT_EQ(c.kind, Command::Kind::kSplit);
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.into, 3);
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"a", "a", "b", "b"}));
  EXPECT_EQ(c.describe(), "split of rank 0 into 3");
}

TEST(Command, SplitRefusals) {
  EXPECT_EQ(code_of([&] { Command::from_json(split_json(), 3); }), PCM_ERR_ARG);  // size
  auto j = split_json();
  j["into"] = 1;
  j["size"] = 2;
  EXPECT_EQ(code_of([&] { Command::from_json(j, 2); }), PCM_ERR_ARG);
  j = split_json();
  j["hosts"] = {"a", "b"};
  EXPECT_EQ(code_of([&] { Command::from_json(j, 2); }), PCM_ERR_ARG);  // one host per new rank
  j["hosts"] = {"a", "b", "c", "bad host"};
  EXPECT_EQ(code_of([&] { Command::from_json(j, 2); }), PCM_ERR_ARG);
  j["hosts"] = {"a", "b", "c", 4};
  EXPECT_EQ(code_of([&] { Command::from_json(j, 2); }), PCM_ERR_ARG);
  j.erase("hosts");
  EXPECT_EQ(code_of([&] { Command::from_json(j, 2); }), PCM_ERR_ARG);
}

TEST(Command, Merge) {
  json j{{"id", 7}, {"kind", "merge"}, {"ranks", {3, 1}}, {"size", 3}};
  Command c = Command::from_json(j, 4);
  EXPECT_EQ(c.kind, Command::Kind::kMerge);
  EXPECT_EQ(c.ranks, (std::vector<int>{3, 1}));
  EXPECT_EQ(c.describe(), "merge of ranks 3,1");
  EXPECT_TRUE(c.hosts.empty());
}

TEST(Command, MergeRefusals) {
  auto bad = [](json ranks, int size) {
    json j{{"id", 7}, {"kind", "merge"}, {"ranks", ranks}, {"size", size}};
    return code_of([&] { Command::from_json(j, 4); });
  };
  EXPECT_EQ(bad({1}, 4), PCM_ERR_ARG);        // fewer than two
  EXPECT_EQ(bad({1, 1}, 3), PCM_ERR_ARG);     // twice
  EXPECT_EQ(bad({1, 4}, 3), PCM_ERR_ARG);     // no such rank
  EXPECT_EQ(bad({-1, 2}, 3), PCM_ERR_ARG);    // negative
  EXPECT_EQ(bad({1, 2}, 2), PCM_ERR_ARG);     // size mismatch
  EXPECT_EQ(bad({0, 1, 2}, 2), PCM_SUCCESS);  // three into one
}

TEST(Command, Resize) {
  json shrink{{"id", 8}, {"kind", "resize"}, {"size", 2}};
  Command c = Command::from_json(shrink, 4);
  EXPECT_EQ(c.kind, Command::Kind::kResize);
  EXPECT_EQ(c.size, 2);
  EXPECT_EQ(c.describe(), "resize to 2");
  // Growing needs one host per new rank; shrinking needs none.
  json grow{{"id", 9}, {"kind", "resize"}, {"size", 5}};
  EXPECT_EQ(code_of([&] { Command::from_json(grow, 4); }), PCM_ERR_ARG);
  grow["hosts"] = {"a", "a", "a", "b", "b"};
  EXPECT_EQ(Command::from_json(grow, 4).hosts.size(), 5u);
  EXPECT_EQ(code_of([&] {
              Command::from_json(json{{"id", 9}, {"kind", "resize"}, {"size", 4}}, 4);
            }),
            PCM_ERR_ARG);  // no change
  EXPECT_EQ(code_of([&] {
              Command::from_json(json{{"id", 9}, {"kind", "resize"}, {"size", 0}}, 4);
            }),
            PCM_ERR_ARG);
}

TEST(Command, EncodingRoundTrips) {
  Command c = Command::from_json(split_json(), 2);
  json j = c.to_json();
  // The wire form carries every field, whatever the kind.
  EXPECT_EQ(j, (json{{"id", 6},
                     {"kind", "split"},
                     {"rank", 0},
                     {"into", 3},
                     {"ranks", json::array()},
                     {"size", 4},
                     {"host", ""},
                     {"hosts", {"a", "a", "b", "b"}},
                     {"respawn", false},
                     {"why", ""}}));
  Command back = Command::from_json(j, 2);
  EXPECT_EQ(back.to_json(), j);
}

// Who asked and why travels with the command as printable text of at most kMaxWhy bytes.
TEST(Command, ReasonIsPrintableAndBounded) {
  auto j = migrate_json();
  EXPECT_EQ(Command::from_json(j, 4).why, "");  // older pcmds sent none
  j["why"] = "policy: host b is loaded";
  EXPECT_EQ(Command::from_json(Command::from_json(j, 4).to_json(), 4).why,
            "policy: host b is loaded");
  j["why"] = "two\nlines\x1b[31m";
  const std::string w = Command::from_json(j, 4).why;
  EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  EXPECT_EQ(w.find('\x1b'), std::string::npos) << w;
  EXPECT_NE(w.find("two"), std::string::npos) << w;
  j["why"] = std::string(1000, 'x');
  EXPECT_LE(Command::from_json(j, 4).why.size(), Command::kMaxWhy);
  j["why"] = std::string(100000, 'x');  // beyond what any sender may send
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j["why"] = 7;
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
}

// pcmd sends the world afterwards with every command; libpcm may turn any command into a respawn
// of the whole world (retirement.h), which needs that list.
TEST(Command, HostListsAndRespawn) {
  auto j = migrate_json();
  j["hosts"] = {"a", "node-2", "a", "b"};
  Command c = Command::from_json(j, 4);
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"a", "node-2", "a", "b"}));
  EXPECT_FALSE(c.respawn);
  c.respawn = true;
  Command back = Command::from_json(c.to_json(), 4);
  EXPECT_TRUE(back.respawn);
  EXPECT_EQ(back.hosts, c.hosts);
  // A respawn needs one host per new rank; a plain migration does not.
  j["respawn"] = true;
  j["hosts"] = {"a", "b"};
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j.erase("hosts");
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j["respawn"] = "yes";
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  j = migrate_json();
  j["hosts"] = json::array();  // none: as older pcmds sent
  EXPECT_TRUE(Command::from_json(j, 4).hosts.empty());
  j["hosts"] = {"a", "-bad", "a", "b"};
  EXPECT_EQ(code_of([&] { Command::from_json(j, 4); }), PCM_ERR_ARG);
  // A merge's list has one host per survivor.
  json m{{"id", 3}, {"kind", "merge"}, {"ranks", {0, 2}}, {"size", 3}, {"hosts", {"a", "b"}}};
  EXPECT_EQ(code_of([&] { Command::from_json(m, 4); }), PCM_ERR_ARG);
  m["hosts"] = {"a", "b", "c"};
  EXPECT_EQ(Command::from_json(m, 4).hosts.size(), 3u);
}
