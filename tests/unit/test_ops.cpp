// test_ops.cpp — the table of requests (common/ops.h): names unique, every kind round-trips
// through to_json/from_json, unknown names refused, and the fuzz corpus seeds every kind.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "error.h"
#include "ops.h"
#include "pcm_types.h"

namespace ops = pcm::ops;
using pcm::proto::json;

namespace {

// A valid request of each kind (fields besides "op").
json sample(ops::Op op) {
  const json job{{"job", "j"}};
  switch (op) {
    case ops::Op::kPing:
    case ops::Op::kHostList:
      return json::object();
    case ops::Op::kRegister:
      return {{"size", 2},       {"hosts", {"a", "b"}},    {"job", "j"}, {"nonce", "n"},
              {"restart", true}, {"executable", "/bin/x"}, {"pid", 7},   {"placement", "spread"}};
    case ops::Op::kPoll:
      return {{"job", "j"},
              {"iteration", 3},
              {"profile", {{"x", 1}}},
              {"checkpoint_cost_s", 0.5},
              {"checkpoint_interval_s", 60.0},
              {"checkpoint_mtbf_s", 3600.0}};
    case ops::Op::kReconfigured:
      return {{"job", "j"},     {"command", 4}, {"success", true}, {"size", 1},
              {"hosts", {"a"}}, {"pid", 9},     {"iteration", 5},  {"layout", {{"n", 8}}}};
    case ops::Op::kFinished:
      return {{"job", "j"}, {"iteration", 9}, {"error", "PCM_Adapt: MPI_Bcast failed"}};
    case ops::Op::kStatus:
    case ops::Op::kProfile:
    case ops::Op::kCheckpoints:
      return job;
    case ops::Op::kStore:
      return {{"job", "j"}, {"rank", 1}, {"key", "k"}, {"type", 5}, {"count", 4}};
    case ops::Op::kLoad:
      return {{"job", "j"}, {"rank", 1}, {"key", "k"}, {"meta_only", true}, {"version", 2}};
    case ops::Op::kCommit:
      return {{"job", "j"}, {"iteration", 1}, {"size", 2}, {"retry", true}, {"after_stores", true}};
    case ops::Op::kStoresDone:
      return {{"job", "j"}, {"iteration", 3}, {"rank", 1}, {"size", 2}, {"error", "disk full"}};
    case ops::Op::kVerify:
    case ops::Op::kCheckpointBegin:
    case ops::Op::kCheckpointManifest:
      return {{"job", "j"}, {"iteration", 1}};
    case ops::Op::kPrune:
      return {{"job", "j"}, {"keep", 2}};
    case ops::Op::kJobEvent:
      return {{"job", "j"}, {"text", "recovery 1"}};
    case ops::Op::kJobMove:
      return {{"job", "j"}, {"action", "ask"}, {"site", "b"}};
    case ops::Op::kCheckpointRequest:
      return {{"job", "j"}, {"why", "w"}};
    case ops::Op::kCheckpointCommit:
      return {{"job", "j"}, {"iteration", 1}, {"size", 2}, {"layout", nullptr}};
    case ops::Op::kCheckpointBad:
      return {{"job", "j"}, {"iteration", 1}, {"why", "bad"}, {"unreachable", true}};
    case ops::Op::kShardPut:
      return {{"job", "j"}, {"iteration", 1}, {"rank", 0}};
    case ops::Op::kShardDone:
      return {{"job", "j"},
              {"iteration", 1},
              {"rank", 1},
              {"size", 2},
              {"error", "disk full"},
              {"levels", {{"host", "h1"}, {"partner", "h2"}, {"shared", false}}}};
    case ops::Op::kDirectDir:
      return job;
    case ops::Op::kStoreDirect:
      return {{"job", "j"},
              {"rank", 1},
              {"key", "k"},
              {"record",
               {{"rank", 1},
                {"file", ""},
                {"size", 0},
                {"datasets",
                 {{{"key", "k"},
                   {"type", 5},
                   {"count", 4},
                   {"offset", 2048},
                   {"xxh3", {7}},
                   {"file", "s1.k.0123456789abcdef.h5"},
                   {"file_size", 4096}}}}}}};
    case ops::Op::kMigrate:
      return {{"job", "j"}, {"rank", 1}, {"host", "h"}, {"why", "w"}};
    case ops::Op::kSplit:
      return {{"job", "j"}, {"rank", 0}, {"into", 3}, {"placement", "spread"}};
    case ops::Op::kMerge:
      return {{"job", "j"}, {"ranks", {0, 1}}};
    case ops::Op::kResize:
      return {{"job", "j"}, {"size", 4}, {"host", "h"}};
    case ops::Op::kHostAdd:
      return {{"host", "h"}, {"slots", 2}, {"site", "s"}, {"latency", 1.5}};
    case ops::Op::kHostDrain:
    case ops::Op::kHostRemove:
    case ops::Op::kAgentLeave:
      return {{"host", "h"}};
    case ops::Op::kAgentReport:
      return {{"host", "h"},     {"cores", 4},   {"busy", 1.0}, {"load1", 2.0},
              {"runnable", 1.0}, {"join", true}, {"slots", 3},  {"site", "s"}};
    case ops::Op::kTopology:
      return {{"hosts", {"a", "b"}}};
  }
  return nullptr;
}

// from_json(to_json(from_json(x))) == from_json(x), through the encoding of each struct.
template <class R>
void round_trip(ops::Op op) {
  const R first = R::from_json(sample(op));
  const json header = ops::request(first);
  EXPECT_EQ(header.at("op"), ops::name(op));
  const json again = R::from_json(header).to_json();
  EXPECT_EQ(again, first.to_json()) << ops::name(op);
}

}  // namespace

TEST(Ops, NamesAreUniqueAndFoundAgain) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < ops::kOpCount; ++i) {
    const ops::OpTraits& t = ops::kOps[i];
    EXPECT_EQ(ops::index(t.op), i);
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_EQ(ops::from_name(t.name), t.op);
  }
  EXPECT_GE(names.size(), 29u);  // none of the requests of protocol version 1 lost
  EXPECT_FALSE(ops::from_name("pong"));
  EXPECT_FALSE(ops::from_name(""));
}

TEST(Ops, EveryKindRoundTrips) {
#define PCM_OP_TRIP(T, name, pieces, changes, replies_data, fence) \
  round_trip<ops::T>(ops::Op::k##T);
  PCM_OPS(PCM_OP_TRIP)
#undef PCM_OP_TRIP
}

TEST(Ops, DataTravelsOnlyWithStoreShardsAndCommits) {
  std::set<std::string> pieces;
  for (const auto& t : ops::kOps)
    if (t.pieces) pieces.insert(t.name);
  EXPECT_EQ(pieces,
            (std::set<std::string>{"store", "shard_put", "shard_done", "checkpoint_commit"}));
}

TEST(Ops, FieldsAreValidatedWithTheWireMessages) {
  try {
    ops::Store::from_json({{"job", "j"}, {"rank", 0}, {"key", "../x"}, {"type", 5}, {"count", 1}});
    FAIL();
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_ARG);
    EXPECT_NE(std::string(e.what()).find("invalid key"), std::string::npos);
  }
  EXPECT_THROW(ops::Register::from_json({{"size", 2}, {"hosts", {"a"}}}), pcm::Error);
  EXPECT_THROW(ops::Merge::from_json({{"job", "j"}, {"ranks", {0, "x"}}}), pcm::Error);
  EXPECT_THROW(
      ops::AgentReport::from_json({{"host", "h"}, {"cores", 2}, {"busy", 3.0}, {"load1", 0.0}}),
      pcm::Error);
}

// tests/fuzz/make_corpus.py reads the op names from ops.h and fails on a kind without a seed: so
// the corpus (committed) holds a seed of every kind.
TEST(Ops, TheFuzzCorpusSeedsEveryKind) {
  for (const auto& t : ops::kOps) {
    std::string seed = t.name;
    for (char& c : seed)
      if (c == '_') c = '-';
    std::ifstream in(std::string(PCM_FUZZ_CORPUS) + "/" + seed, std::ios::binary);
    EXPECT_TRUE(in.good()) << "no seed for " << t.name << " in tests/fuzz/corpus";
  }
}
