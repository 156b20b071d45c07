// test_profile.cpp — a job's profile on the wire: round trip, the table, and what pcmd refuses.
#include <gtest/gtest.h>

#include "error.h"
#include "pcm_types.h"
#include "profile.h"

using nlohmann::json;
using pcm::common::JobProfile;
using pcm::common::RankProfile;

namespace {

JobProfile two_ranks() {
  JobProfile p;
  p.interval_s = 2.0;
  p.iteration = 1234;
  p.ranks = {RankProfile{100, 0.5, 0.004, 0.006, 0.1, 400, 4096},
             RankProfile{100, 0.5, 0.0045, 0.0055, 0.2, 400, 2048}};
  p.bytes = {0, 4096, 2048, 0};
  p.messages = {0, 4, 2, 0};
  return p;
}

int refusal(const json& j, int world_size = 0) {
  try {
    JobProfile::from_json(j, world_size);
  } catch (const pcm::Error& e) {
    return e.code();
  }
  return 0;
}

}  // namespace

TEST(Profile, RoundTripAndTable) {
  const JobProfile p = two_ranks();
  const JobProfile q = JobProfile::from_json(p.to_json(), 2);
  EXPECT_EQ(q.to_json(), p.to_json());
  const std::string table = q.describe();
  EXPECT_NE(table.find("up to iteration 1234, 2 processes"), std::string::npos) << table;
  EXPECT_NE(table.find("5.0000"), std::string::npos) << table;  // 0.5 s / 100 iterations
  EXPECT_NE(table.find("4.0 KiB"), std::string::npos) << table;
  EXPECT_NE(table.find("40.0"), std::string::npos) << table;  // rank 1: 0.2 of 0.5 s in MPI
}

TEST(Profile, NoMatrixIsAllowed) {
  JobProfile p = two_ranks();
  p.bytes.clear();
  p.messages.clear();
  const JobProfile q = JobProfile::from_json(p.to_json(), 2);
  EXPECT_TRUE(q.bytes.empty());
}

TEST(Profile, Refusals) {
  const json good = two_ranks().to_json();
  EXPECT_EQ(refusal(good, 3), PCM_ERR_ARG);  // not the job's size
  for (const char* key : {"interval_s", "iteration", "ranks"}) {
    json j = good;
    j.erase(key);
    EXPECT_EQ(refusal(j), PCM_ERR_ARG) << key;
  }
  json j = good;
  j["ranks"][0][1] = -1.0;
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  j = good;
  j["ranks"][1][0] = "many";
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  j = good;
  j["ranks"][1].erase(6);
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  j = good;
  j["bytes"].push_back(1);
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  j = good;
  j.erase("messages");
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  j = good;
  j["ranks"] = json::array();
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  EXPECT_EQ(refusal(json::array()), PCM_ERR_ARG);
  // Above the matrix limit a matrix is refused (it would not fit a message).
  JobProfile big;
  big.ranks.assign(JobProfile::kMaxMatrixRanks + 1, RankProfile{1, 1, 1, 1, 0, 0, 0});
  j = big.to_json();
  EXPECT_EQ(refusal(j), 0);
  j["bytes"] = json::array();
  j["messages"] = json::array();
  EXPECT_EQ(refusal(j), PCM_ERR_ARG);
  big.ranks.assign(JobProfile::kMaxRanks + 1, RankProfile{});
  EXPECT_EQ(refusal(big.to_json()), PCM_ERR_ARG);
}
