// test_slurm_growth.cpp — unit tests of pcmd --resources slurm beyond its allocation: the command
// desk hands a command whose new processes do not fit to its Growth (with the slots missing) and
// refuses every command of a job that waits for an allocation; SlurmGrowth's sbatch command line
// and the batch script that ends a second allocation with pcmd's job. Nothing here runs a Slurm
// command.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "commands.h"
#include "durability.h"
#include "error.h"
#include "inventory.h"
#include "jobs.h"
#include "options.h"
#include "pcm_types.h"
#include "slurm/slurm_growth.h"
#include "slurm/slurm_resources.h"

using pcm::daemon::Changes;
using pcm::daemon::CommandDesk;
using pcm::daemon::Inventory;
using pcm::daemon::Job;
using pcm::daemon::JobState;
using pcm::daemon::JobTable;
using pcm::daemon::ServerOptions;
using pcm::daemon::SlurmAllocation;
using pcm::daemon::SlurmGrowth;
using pcm::proto::json;
using Kind = pcm::proto::Command::Kind;

namespace {

std::shared_ptr<spdlog::logger> quiet() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// What the desk asked of it, and a reply of its own to pass through.
struct FakeGrowth : CommandDesk::Growth {
  struct Grow {
    std::string job;
    pcm::proto::Command command;
    CommandDesk::Where where;
    int missing = 0;
  };
  std::vector<Grow> grown;
  std::vector<pcm::proto::Command> queued;
  bool make_respawn = false;
  json reply{{"ok", true}, {"allocating", true}, {"command", 0}, {"text", "fake growth"}};

  json grow(Job& job, const pcm::proto::Command& c, const CommandDesk::Where& where,
            CommandDesk::From, int missing) override {
    grown.push_back(Grow{job.name, c, where, missing});
    return reply;
  }
  void before_queue(const Job&, pcm::proto::Command& c) override {
    queued.push_back(c);
    if (make_respawn) c.respawn = true;
  }
  bool releasable(const std::string&) const override { return false; }
  std::optional<pcm::daemon::PolicyQueue> queue() const override { return std::nullopt; }
};

pcm::proto::Command split(int rank, int into) {
  pcm::proto::Command c;
  c.kind = Kind::kSplit;
  c.rank = rank;
  c.into = into;
  c.why = "test";
  return c;
}

pcm::proto::Command resize(int size) {
  pcm::proto::Command c;
  c.kind = Kind::kResize;
  c.size = size;
  c.why = "test";
  return c;
}

pcm::proto::Command migrate(int rank) {
  pcm::proto::Command c;
  c.kind = Kind::kMigrate;
  c.rank = rank;
  c.why = "test";
  return c;
}

pcm::proto::Command merge(std::vector<int> ranks) {
  pcm::proto::Command c;
  c.kind = Kind::kMerge;
  c.ranks = std::move(ranks);
  c.why = "test";
  return c;
}

// The code and message of the pcm::Error f throws (PCM_SUCCESS, "" if none).
std::pair<int, std::string> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const pcm::Error& e) {
    return {e.code(), e.what()};
  }
  return {PCM_SUCCESS, ""};
}

// A job table, an inventory of hosts (made-up names: nothing is probed) and a desk, with job
// "j" running 2 processes on h1.
class GrowthDeskTest : public ::testing::Test {
 protected:
  GrowthDeskTest() {
    Job& j = jobs_.all()["j"];
    j.name = "j";
    j.state = JobState::kRunning;
    j.size = 2;
    j.hosts = {"h1", "h1"};
  }
  static ServerOptions options(std::vector<std::string> hosts) {
    ServerOptions o;
    o.hosts = std::move(hosts);
    o.probe_port = 0;
    return o;
  }
  Job& job() { return jobs_.find("j"); }

  Changes changes_;
  std::shared_ptr<spdlog::logger> log_ = quiet();
  JobTable jobs_{changes_, log_, "localhost"};
  Inventory inventory_{options({"h1:2"}), jobs_, changes_, log_};
  CommandDesk desk_{jobs_, inventory_, nullptr, log_};
  FakeGrowth growth_;
};

}  // namespace

TEST_F(GrowthDeskTest, ACommandThatDoesNotFitGoesToTheGrowthWithTheSlotsMissing) {
  desk_.set_growth(&growth_);
  // Split of rank 0 into 2: 3 processes where 2 slots are.
  json reply = desk_.request(job(), split(0, 2), {}, CommandDesk::From::kOperator);
  EXPECT_EQ(reply, growth_.reply);
  ASSERT_EQ(growth_.grown.size(), 1u);
  EXPECT_EQ(growth_.grown[0].job, "j");
  EXPECT_EQ(growth_.grown[0].missing, 1);
  EXPECT_EQ(growth_.grown[0].command.kind, Kind::kSplit);
  EXPECT_EQ(growth_.grown[0].command.rank, 0);
  EXPECT_EQ(growth_.grown[0].command.into, 2);
  EXPECT_TRUE(growth_.grown[0].command.hosts.empty());  // as asked, not placed
  EXPECT_FALSE(job().pending.command.has_value());
  EXPECT_TRUE(growth_.queued.empty());
  EXPECT_EQ(desk_.next_command(), 1);

  // Resize to 4: 2 missing.
  reply = desk_.request(job(), resize(4), {}, CommandDesk::From::kPolicy);
  EXPECT_EQ(reply, growth_.reply);
  ASSERT_EQ(growth_.grown.size(), 2u);
  EXPECT_EQ(growth_.grown[1].missing, 2);
  EXPECT_EQ(growth_.grown[1].command.kind, Kind::kResize);
  EXPECT_EQ(growth_.grown[1].command.size, 4);
  EXPECT_FALSE(job().pending.command.has_value());

  // A migration to no named host: no other host with a free slot, 1 missing.
  reply = desk_.request(job(), migrate(1), {}, CommandDesk::From::kOperator);
  EXPECT_EQ(reply, growth_.reply);
  ASSERT_EQ(growth_.grown.size(), 3u);
  EXPECT_EQ(growth_.grown[2].missing, 1);
  EXPECT_EQ(growth_.grown[2].command.kind, Kind::kMigrate);
  EXPECT_EQ(growth_.grown[2].command.rank, 1);
  EXPECT_FALSE(growth_.grown[2].where.host.has_value());
  EXPECT_FALSE(job().pending.command.has_value());
  EXPECT_TRUE(growth_.queued.empty());
}

TEST_F(GrowthDeskTest, AMergeIsQueuedWithoutGrowing) {
  desk_.set_growth(&growth_);
  growth_.make_respawn = true;
  const json reply = desk_.request(job(), merge({0, 1}), {}, CommandDesk::From::kOperator);
  EXPECT_TRUE(growth_.grown.empty());
  ASSERT_EQ(growth_.queued.size(), 1u);
  EXPECT_EQ(growth_.queued[0].kind, Kind::kMerge);
  EXPECT_EQ(growth_.queued[0].size, 1);
  EXPECT_EQ(growth_.queued[0].hosts, std::vector<std::string>{"h1"});  // placed
  EXPECT_EQ(reply.at("command"), 1);
  EXPECT_EQ(reply.at("size"), 1);
  ASSERT_TRUE(job().pending.command.has_value());
  EXPECT_EQ(job().pending.command->kind, Kind::kMerge);
  EXPECT_EQ(job().pending.command->id, 1);
  EXPECT_TRUE(job().pending.command->respawn);  // what before_queue made of it is queued
}

TEST_F(GrowthDeskTest, ACommandThatFitsIsPlacedAndQueued) {
  desk_.set_growth(&growth_);
  inventory_.add("h2", 2, "default", std::nullopt);
  const json reply = desk_.request(job(), split(0, 2), {}, CommandDesk::From::kOperator);
  EXPECT_TRUE(growth_.grown.empty());
  ASSERT_EQ(growth_.queued.size(), 1u);
  EXPECT_EQ(growth_.queued[0].size, 3);
  EXPECT_EQ(growth_.queued[0].hosts.size(), 3u);
  EXPECT_EQ(reply.at("size"), 3);
  EXPECT_FALSE(reply.contains("allocating"));
  ASSERT_TRUE(job().pending.command.has_value());
  EXPECT_EQ(job().pending.command->kind, Kind::kSplit);
  // 3 processes on 2 + 2 slots: both hosts.
  const auto& hosts = job().pending.command->hosts;
  EXPECT_EQ(
      std::count(hosts.begin(), hosts.end(), "h1") + std::count(hosts.begin(), hosts.end(), "h2"),
      3);
  EXPECT_GE(std::count(hosts.begin(), hosts.end(), "h2"), 1);
  EXPECT_GE(std::count(hosts.begin(), hosts.end(), "h1"), 1);
}

TEST_F(GrowthDeskTest, WithoutAGrowthACommandThatDoesNotFitIsRefused) {
  auto [code, message] =
      error_of([&] { desk_.request(job(), split(0, 2), {}, CommandDesk::From::kOperator); });
  EXPECT_EQ(code, PCM_ERR_REFUSED) << message;
  EXPECT_FALSE(job().pending.command.has_value());
  // Set, then taken away again.
  desk_.set_growth(&growth_);
  desk_.set_growth(nullptr);
  std::tie(code, message) =
      error_of([&] { desk_.request(job(), resize(4), {}, CommandDesk::From::kOperator); });
  EXPECT_EQ(code, PCM_ERR_REFUSED) << message;
  EXPECT_TRUE(growth_.grown.empty());
  EXPECT_FALSE(job().pending.command.has_value());
}

TEST_F(GrowthDeskTest, AJobWaitingForAnAllocationTakesNoCommand) {
  desk_.set_growth(&growth_);
  EXPECT_TRUE(jobs_.status(std::string("j")).at(0).at("allocating").is_null());
  job().allocating = Job::Allocating{"split of rank 0 into 2 (1 more slot(s))", "",
                                     std::chrono::steady_clock::now()};
  for (const auto& c : {split(0, 2), resize(4), migrate(1), merge({0, 1}), resize(1)}) {
    const auto [code, message] =
        error_of([&] { desk_.request(job(), c, {}, CommandDesk::From::kOperator); });
    EXPECT_EQ(code, PCM_ERR_REFUSED) << c.describe();
    EXPECT_NE(message.find("waits for a Slurm allocation"), std::string::npos) << message;
    EXPECT_NE(message.find("split of rank 0 into 2"), std::string::npos) << message;
  }
  EXPECT_TRUE(growth_.grown.empty());
  EXPECT_TRUE(growth_.queued.empty());
  EXPECT_FALSE(job().pending.command.has_value());
  // Status shows what it waits for.
  job().allocating->slurm_job = "8";
  const json shown = jobs_.status(std::string("j")).at(0).at("allocating");
  EXPECT_EQ(shown.at("text"), "split of rank 0 into 2 (1 more slot(s))");
  EXPECT_EQ(shown.at("slurm_job"), "8");
  EXPECT_GE(shown.at("seconds").get<double>(), 0.0);
  // Once it no longer waits, the job takes commands again.
  job().allocating.reset();
  desk_.request(job(), merge({0, 1}), {}, CommandDesk::From::kOperator);
  EXPECT_TRUE(job().pending.command.has_value());
}

namespace {

bool has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

bool has_prefix(const std::vector<std::string>& argv, const std::string& prefix) {
  return std::any_of(argv.begin(), argv.end(),
                     [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += a + " ";
  return s;
}

}  // namespace

TEST_F(GrowthDeskTest, SbatchAsksForTheSlotsMissingLikeTheParentAllocation) {
  inventory_.add("s1", 2, "default", std::nullopt);
  inventory_.add("s2", 2, "default", std::nullopt);
  inventory_.find("s1")->slurm_job = "7";
  inventory_.find("s2")->slurm_job = "7";
  SlurmAllocation parent;
  parent.job_id = "7";
  parent.state = "RUNNING";
  parent.partition = "main";
  parent.qos = "normal";
  parent.end_time = std::time(nullptr) + 600;
  SlurmGrowth g(parent, std::chrono::seconds(30), "localhost", false, jobs_, inventory_, desk_,
                changes_, log_);
  EXPECT_EQ(g.grow_name(), "pcm-grow.7");
  const std::vector<std::string> argv = g.sbatch_argv(3);
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], "sbatch");
  EXPECT_TRUE(has(argv, "--parsable")) << joined(argv);
  EXPECT_TRUE(has(argv, "--output=/dev/null")) << joined(argv);
  // The batch script watches the parent job: the allocation ends with it.
  EXPECT_EQ(argv.back(), "--wrap=" + SlurmGrowth::watcher_script("7")) << joined(argv);
  EXPECT_TRUE(has(argv, "--job-name=pcm-grow.7")) << joined(argv);
  EXPECT_TRUE(has(argv, "--ntasks=3")) << joined(argv);
  EXPECT_TRUE(has(argv, "--exclude=s1,s2")) << joined(argv);  // not h1: Slurm's nodes only
  EXPECT_TRUE(has(argv, "--partition=main")) << joined(argv);
  EXPECT_TRUE(has(argv, "--qos=normal")) << joined(argv);
  EXPECT_FALSE(has_prefix(argv, "--account")) << joined(argv);
  EXPECT_TRUE(has(argv, "--time=9") || has(argv, "--time=10")) << joined(argv);
  EXPECT_TRUE(has(g.sbatch_argv(1), "--ntasks=1"));
}

TEST_F(GrowthDeskTest, SbatchCopiesOnlyWhatTheParentAllocationShows) {
  // No host held by Slurm, an account, no partition, QOS or end.
  SlurmAllocation parent;
  parent.job_id = "12";
  parent.account = "physics";
  SlurmGrowth g(parent, std::chrono::seconds(5), "localhost", false, jobs_, inventory_, desk_,
                changes_, log_);
  const std::vector<std::string> argv = g.sbatch_argv(2);
  EXPECT_TRUE(has(argv, "--job-name=pcm-grow.12")) << joined(argv);
  EXPECT_TRUE(has(argv, "--ntasks=2")) << joined(argv);
  EXPECT_TRUE(has(argv, "--account=physics")) << joined(argv);
  for (const char* absent : {"--exclude", "--partition", "--qos", "--time"})
    EXPECT_FALSE(has_prefix(argv, absent)) << joined(argv);
  // An allocation whose end has passed: at least a minute, never 0 (no limit) or less.
  parent.end_time = std::time(nullptr) - 30;
  SlurmGrowth late(parent, std::chrono::seconds(5), "localhost", false, jobs_, inventory_, desk_,
                   changes_, log_);
  EXPECT_TRUE(has(late.sbatch_argv(1), "--time=1")) << joined(late.sbatch_argv(1));
}

// sinfo lists a node once per partition; a node without a reason says so.
TEST(SlurmWatch, TheNodesBeingTakenAwayAreReadOncePerNode) {
  const auto leaving = pcm::daemon::parse_leaving_nodes(
      "n2|draining|maintenance at 14:00\nn2|draining|maintenance at 14:00\nn3|failing|none\n"
      "garbage line\n|drained|x\n");
  ASSERT_EQ(leaving.size(), 2u);
  EXPECT_EQ(leaving.at("n2"), "draining (maintenance at 14:00)");
  EXPECT_EQ(leaving.at("n3"), "failing (no reason given)");
  EXPECT_TRUE(pcm::daemon::parse_leaving_nodes("").empty());
}

// pcmd's own requests (pcm-grow.*) are not jobs that wait; idle nodes once each, at least 1 CPU.
TEST(SlurmWatch, TheQueueLeavesPcmdsOwnRequestsOut) {
  const pcm::daemon::PolicyQueue q =
      pcm::daemon::parse_queue("41|big|2\n42|pcm-grow.7|1\n43|zero|0\n", "n1|4\nn1|4\nn2|0\nbad\n");
  ASSERT_EQ(q.waiting.size(), 1u);
  EXPECT_EQ(q.waiting[0].id, "41");
  EXPECT_EQ(q.waiting[0].nodes, 2);
  ASSERT_EQ(q.idle.size(), 2u);
  EXPECT_EQ(q.idle[0].name, "n1");
  EXPECT_EQ(q.idle[0].cpus, 4);
  EXPECT_EQ(q.idle[1].cpus, 1);
  EXPECT_LT(q.seconds_left, 0);
}
