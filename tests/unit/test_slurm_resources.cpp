// test_slurm_resources.cpp — unit tests of pcmd --resources slurm: scontrol's job record parsed
// into the inventory (with what a second allocation copies: partition, account, QOS, end time),
// Slurm's time stamps, the refusals outside an allocation or without Slurm, the bounded command
// runner, the background program (Child), the environment Slurm's commands get, and the
// inventory's Slurm job column kept across a restart.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "pcm_types.h"
#include "server_fixture.h"
#include "slurm/slurm_resources.h"

using pcm::common::HostSlots;
using pcm::daemon::Child;
using pcm::daemon::CommandResult;
using pcm::daemon::count_cpu_ids;
using pcm::daemon::environment_outside_slurm;
using pcm::daemon::parse_scontrol_job;
using pcm::daemon::parse_slurm_time;
using pcm::daemon::run_command;
using pcm::daemon::slurm_allocation;
using pcm::daemon::SlurmAllocation;

namespace {

// `scontrol show job -o -d 1` of a 2-node sbatch job (-N2 --ntasks-per-node=2) on the test
// cluster of testbed/slurm.sh (Slurm 22.05), shortened in the middle.
const char* kRecord =
    "JobId=1 JobName=probe.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 "
    "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:00 "
    "Partition=main AllocNode:Sid=localhost:28685 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList=sxa[1-2] BatchHost=sxa1 NumNodes=2 NumCPUs=4 NumTasks=4 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=4,node=2,billing=4 Socks/Node=* NtasksPerN:B:S:C=2:0:*:* "
    "CoreSpec=* JOB_GRES=(null)   Nodes=sxa[1-2] CPU_IDs=0-1 Mem=0 GRES= MinCPUsNode=2 "
    "MinMemoryNode=0 Command=/tmp/sx/probe.sh WorkDir=/tmp/sx StdOut=/tmp/sx/out-1.txt Power= \n";

std::vector<HostSlots> hs(std::vector<std::pair<std::string, int>> v) {
  std::vector<HostSlots> out;
  for (auto& [n, s] : v) out.push_back(HostSlots{n, s});
  return out;
}

bool same(const std::vector<HostSlots>& a, const std::vector<HostSlots>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].slots != b[i].slots) return false;
  return true;
}

std::string describe(const std::vector<HostSlots>& v) {
  std::string s;
  for (const auto& h : v) s += h.name + ":" + std::to_string(h.slots) + " ";
  return s;
}

// A Slurm that answers as told: the environment, then each command's result by its argv[0].
struct FakeSlurm {
  std::map<std::string, std::string> env{{"SLURM_JOB_ID", "1"}};
  std::map<std::string, CommandResult> results{
      {"scontrol", CommandResult{true, false, 0, kRecord}},
      {"srun", CommandResult{true, false, 0, "slurm-wlm 22.05.8\n"}}};
  std::vector<std::vector<std::string>> ran;

  SlurmAllocation allocation() {
    return slurm_allocation(
        [this](const char* name) -> const char* {
          auto it = env.find(name);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        [this](const std::vector<std::string>& argv) {
          ran.push_back(argv);
          return results.at(argv.at(0));
        });
  }
  // The refusal's message ("" if none); its code must be PCM_ERR_CONFIG.
  std::string refusal() {
    try {
      allocation();
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_CONFIG) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("--resources slurm: ", 0), 0u) << e.what();
      return e.what();
    }
    return "";
  }
};

#define EXPECT_HAS(text, part)                               \
  EXPECT_NE(std::string(text).find(part), std::string::npos) \
      << "'" << (text) << "' lacks " << (part)

}  // namespace

TEST(SlurmCpuIds, CountsListsAndRanges) {
  EXPECT_EQ(count_cpu_ids("0"), 1);
  EXPECT_EQ(count_cpu_ids("0-1"), 2);
  EXPECT_EQ(count_cpu_ids("0,2-3"), 3);
  EXPECT_EQ(count_cpu_ids("4-7,12,14-15"), 7);
  for (const char* bad : {"", "a", "1-0", "1,,2", "1-", "-1", "0-2000000", "1,"})
    EXPECT_EQ(code_of([&] { count_cpu_ids(bad); }), PCM_ERR_ARG) << bad;
}

TEST(SlurmJobRecord, GivesTheWholeAllocationWithEachNodesCpus) {
  const SlurmAllocation a = parse_scontrol_job(kRecord);
  EXPECT_EQ(a.job_id, "1");
  EXPECT_EQ(a.state, "RUNNING");
  EXPECT_TRUE(same(a.hosts, hs({{"sxa1", 2}, {"sxa2", 2}}))) << describe(a.hosts);
}

TEST(SlurmJobRecord, NodesWithDifferentCpusAndNoDetail) {
  // One detail word per group of nodes with the same CPUs.
  auto a = parse_scontrol_job(
      "JobId=77 JobState=RUNNING ReqNodeList=x[1-9] ExcNodeList=y NodeList=n[1-3],gpu01 "
      "NumNodes=4 NumCPUs=9 Nodes=n1 CPU_IDs=0-3 Mem=0 GRES= Nodes=n[2-3],gpu01 CPU_IDs=1,5 "
      "Mem=0 GRES=");
  EXPECT_EQ(a.job_id, "77");
  EXPECT_TRUE(same(a.hosts, hs({{"n1", 4}, {"n2", 2}, {"n3", 2}, {"gpu01", 2}})))
      << describe(a.hosts);
  // Without detail words (scontrol without -d): the CPUs spread evenly.
  a = parse_scontrol_job("JobId=5 JobState=RUNNING NodeList=c[7-9] NumNodes=3 NumCPUs=6");
  EXPECT_TRUE(same(a.hosts, hs({{"c7", 2}, {"c8", 2}, {"c9", 2}}))) << describe(a.hosts);
  // Only the first record (line) counts.
  a = parse_scontrol_job("JobId=5 JobState=RUNNING NodeList=c1 NumNodes=1 NumCPUs=1\nJobId=6");
  EXPECT_EQ(a.job_id, "5");
}

TEST(SlurmJobRecord, RefusesRecordsWithoutTheFields) {
  for (const char* bad :
       {"", "JobState=RUNNING NodeList=n1", "JobId=x JobState=RUNNING NodeList=n1",
        "JobId=3 NodeList=n1", "JobId=3 JobState=PENDING NodeList=(null)",
        "JobId=3 JobState=RUNNING NodeList=n[2-1]",
        "JobId=3 JobState=RUNNING NodeList=n1 Nodes=n1 CPU_IDs=3-1"})
    EXPECT_EQ(code_of([&] { parse_scontrol_job(bad); }), PCM_ERR_ARG) << bad;
}

TEST(SlurmTime, AStampIsLocalTimeAndAnythingElseIsNothing) {
  const auto t = parse_slurm_time("2026-11-25T21:30:00");
  ASSERT_TRUE(t.has_value());
  std::tm tm{};
  ASSERT_NE(::localtime_r(&*t, &tm), nullptr);
  EXPECT_EQ(tm.tm_year, 2026 - 1900);
  EXPECT_EQ(tm.tm_mon, 10);
  EXPECT_EQ(tm.tm_mday, 25);
  EXPECT_EQ(tm.tm_hour, 21);
  EXPECT_EQ(tm.tm_min, 30);
  EXPECT_EQ(tm.tm_sec, 0);
  // One second later is one second later.
  const auto next = parse_slurm_time("2026-11-25T21:30:01");
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next - *t, 1);
  for (const char* bad :
       {"Unknown", "None", "", "garbage", "2026-11-25", "2026-11-25T21:30", "2026-11-25T21:30:000",
        " 2026-11-25T21:30:00", "2026-11-25 21:30:00", "2026-11-25T21:30:0x", "2026-13-25T21:30:00",
        "2026-11-25T25:30:00", "xxxx-xx-xxTxx:xx:xx"})
    EXPECT_FALSE(parse_slurm_time(bad).has_value()) << bad;
}

TEST(SlurmJobRecord, GivesWhatASecondAllocationCopies) {
  SlurmAllocation a = parse_scontrol_job(
      "JobId=9 JobName=x Account=(null) QOS=normal JobState=RUNNING Partition=main "
      "TimeLimit=01:00:00 StartTime=2026-11-25T20:30:00 EndTime=2026-11-25T21:30:00 "
      "NodeList=n1 NumNodes=1 NumCPUs=2");
  EXPECT_EQ(a.partition, "main");
  EXPECT_EQ(a.account, "");
  EXPECT_EQ(a.qos, "normal");
  ASSERT_TRUE(a.end_time.has_value());
  EXPECT_EQ(*a.end_time, *parse_slurm_time("2026-11-25T21:30:00"));
  // A job without a time limit ends Unknown; an account named is copied.
  a = parse_scontrol_job(
      "JobId=9 Account=physics QOS=(null) JobState=RUNNING Partition=gpu EndTime=Unknown "
      "NodeList=n1 NumNodes=1 NumCPUs=2");
  EXPECT_EQ(a.partition, "gpu");
  EXPECT_EQ(a.account, "physics");
  EXPECT_EQ(a.qos, "");
  EXPECT_FALSE(a.end_time.has_value());
  // The record from the test cluster: no EndTime shown, Account and QOS (null).
  a = parse_scontrol_job(kRecord);
  EXPECT_EQ(a.partition, "main");
  EXPECT_EQ(a.account, "");
  EXPECT_EQ(a.qos, "");
  EXPECT_FALSE(a.end_time.has_value());
}

TEST(SlurmResources, ReadsTheAllocationThroughScontrolAndChecksSrun) {
  FakeSlurm s;
  const SlurmAllocation a = s.allocation();
  EXPECT_EQ(a.job_id, "1");
  EXPECT_TRUE(same(a.hosts, hs({{"sxa1", 2}, {"sxa2", 2}}))) << describe(a.hosts);
  ASSERT_EQ(s.ran.size(), 2u);
  EXPECT_EQ(s.ran[0], (std::vector<std::string>{"scontrol", "show", "job", "-o", "-d", "1"}));
  EXPECT_EQ(s.ran[1], (std::vector<std::string>{"srun", "--version"}));
}

TEST(SlurmResources, RefusesOutsideAnAllocationWithoutAskingSlurm) {
  FakeSlurm s;
  s.env.clear();
  const std::string why = s.refusal();
  EXPECT_HAS(why, "SLURM_JOB_ID is not set");
  EXPECT_HAS(why, "sbatch");
  EXPECT_HAS(why, "--hosts");
  EXPECT_TRUE(s.ran.empty());
  s.env["SLURM_JOB_ID"] = "12;rm";
  EXPECT_HAS(s.refusal(), "is not a job id");
  s.env["SLURM_JOB_ID"] = "12";
  s.env["SLURM_CONF"] = "/nonexistent/pcm-test/slurm.conf";
  EXPECT_HAS(s.refusal(), "SLURM_CONF=/nonexistent/pcm-test/slurm.conf names no file");
  EXPECT_TRUE(s.ran.empty());
}

TEST(SlurmResources, RefusesWithoutScontrolOrSrunOrWhenTheyRefuse) {
  FakeSlurm s;
  s.results["scontrol"] = CommandResult{false, false, 127, ""};
  std::string why = s.refusal();
  EXPECT_HAS(why, "scontrol is not on PATH");
  EXPECT_HAS(why, "slurm-client");

  s = FakeSlurm{};
  s.results["scontrol"] =
      CommandResult{true, false, 1, "slurm_load_jobs error: Invalid job id specified\n"};
  why = s.refusal();
  EXPECT_HAS(why, "'scontrol show job -o -d 1' failed (exit 1)");
  EXPECT_HAS(why, "Invalid job id specified");
  EXPECT_HAS(why, "squeue -j 1");

  s = FakeSlurm{};
  s.results["scontrol"] = CommandResult{true, true, 137, ""};
  why = s.refusal();
  EXPECT_HAS(why, "did not answer within");
  EXPECT_HAS(why, "scontrol ping");

  s = FakeSlurm{};
  s.results["scontrol"].output = "JobId=1 JobState=PENDING NodeList=(null)\n";
  EXPECT_HAS(s.refusal(), "holds no nodes");
  s.results["scontrol"].output = "JobId=1 JobState=COMPLETING NodeList=n1 NumNodes=1 NumCPUs=1\n";
  EXPECT_HAS(s.refusal(), "job 1 is COMPLETING, not RUNNING");

  s = FakeSlurm{};
  s.results["srun"] = CommandResult{false, false, 127, ""};
  why = s.refusal();
  EXPECT_HAS(why, "srun is not on PATH");
  s.results["srun"] = CommandResult{true, false, 1, "srun: fatal: broken\n"};
  why = s.refusal();
  EXPECT_HAS(why, "'srun --version' failed (exit 1)");
  EXPECT_HAS(why, "new processes are started with srun");
}

TEST(RunCommand, CapturesOutputAndExitAndKillsAfterTheTimeout) {
  CommandResult r =
      run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::milliseconds(10000));
  EXPECT_TRUE(r.found);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_HAS(r.output, "out\n");
  EXPECT_HAS(r.output, "err\n");
  r = run_command({"pcm-test-no-such-program"}, std::chrono::milliseconds(10000));
  EXPECT_FALSE(r.found);
  const auto t0 = std::chrono::steady_clock::now();
  r = run_command({"sleep", "30"}, std::chrono::milliseconds(200));
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // A command that closes its output but does not end is bounded too.
  r = run_command({"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, std::chrono::milliseconds(300));
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

// A command gets pcmd's standard descriptors only: one it inherited would keep a store file's
// HDF5 lock (flock) while it runs.
TEST(RunCommand, TheCommandInheritsNoOtherDescriptor) {
  const int fd = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC, as HDF5 opens its files
  ASSERT_GE(fd, 3);
  const CommandResult r =
      run_command({"sh", "-c", "ls /proc/$$/fd"}, std::chrono::milliseconds(10000));
  ::close(fd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream names(r.output);
  std::vector<std::string> open;
  for (std::string n; names >> n;) open.push_back(n);
  EXPECT_EQ(std::count(open.begin(), open.end(), std::to_string(fd)), 0) << r.output;
  EXPECT_EQ(std::count(open.begin(), open.end(), "1"), 1) << r.output;
}

namespace {

// Polls c until it has ended (true) or 5 s have passed (false).
bool ends(Child& c) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (c.poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The first line of file once it has one (up to 5 s), else "".
std::string first_line_of(const fs::path& file) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    if (const auto nl = s.find('\n'); nl != std::string::npos) return s.substr(0, nl);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

TEST(Child, RunsInTheBackgroundAndGivesItsOutputAndExit) {
  Child c;
  EXPECT_FALSE(c.running());
  ASSERT_TRUE(c.start({"true"}, environment_outside_slurm()));
  ASSERT_TRUE(ends(c));
  EXPECT_FALSE(c.running());
  EXPECT_EQ(c.exit_code(), std::optional<int>(0));
  EXPECT_EQ(c.output(), "");

  // Started again: a fresh output and exit.
  ASSERT_TRUE(c.start({"sh", "-c", "echo hi; exit 3"}, environment_outside_slurm()));
  EXPECT_FALSE(c.exit_code().has_value());
  ASSERT_TRUE(ends(c));
  EXPECT_EQ(c.output(), "hi\n");
  EXPECT_EQ(c.exit_code(), std::optional<int>(3));
  // Polling an ended program changes nothing.
  EXPECT_FALSE(c.poll());
  EXPECT_EQ(c.exit_code(), std::optional<int>(3));

  // The environment given is the program's.
  ASSERT_TRUE(c.start({"sh", "-c", "echo \"$PCM_CHILD_TEST\""}, {"PCM_CHILD_TEST=given"}));
  ASSERT_TRUE(ends(c));
  EXPECT_EQ(c.output(), "given\n");
}

TEST(Child, AMissingProgramDoesNotStart) {
  Child c;
  EXPECT_FALSE(c.start({"pcm-test-no-such-program"}, environment_outside_slurm()));
  EXPECT_FALSE(c.running());
  EXPECT_FALSE(c.poll());
  EXPECT_EQ(c.exit_code(), std::optional<int>(127));
}

TEST(Child, StopEndsItAtOnce) {
  Child c;
  ASSERT_TRUE(c.start({"sleep", "30"}, environment_outside_slurm()));
  EXPECT_TRUE(c.poll());
  EXPECT_TRUE(c.running());
  const auto t0 = std::chrono::steady_clock::now();
  c.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_FALSE(c.running());
  EXPECT_EQ(c.exit_code(), std::optional<int>(128 + SIGTERM));
}

TEST(Child, ItsDestructorEndsTheProgram) {
  TempDir tmp;
  const fs::path file = tmp.path() / "pid";
  pid_t pid = 0;
  {
    Child c;
    ASSERT_TRUE(c.start({"sh", "-c", "echo $$ > " + file.string() + "; exec sleep 30"},
                        environment_outside_slurm()));
    const std::string line = first_line_of(file);
    ASSERT_FALSE(line.empty());
    pid = static_cast<pid_t>(std::stol(line));
    ASSERT_GT(pid, 0);
    EXPECT_EQ(::kill(pid, 0), 0);  // it runs (sleep, in sh's place)
    EXPECT_TRUE(c.poll());
  }
  // Ended and reaped: no such process, not even a zombie.
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(SlurmEnvironment, SlurmsOwnVariablesAreLeftOutButSlurmConf) {
  struct Unset {
    ~Unset() {
      for (const char* n : {"SLURM_JOB_ID", "SLURM_CONF", "SALLOC_PARTITION", "SBATCH_QOS",
                            "SRUN_CPUS_PER_TASK", "PCM_X"})
        ::unsetenv(n);
    }
  } unset;
  ASSERT_EQ(::setenv("SLURM_JOB_ID", "5", 1), 0);
  ASSERT_EQ(::setenv("SLURM_CONF", "/x", 1), 0);
  ASSERT_EQ(::setenv("SALLOC_PARTITION", "p", 1), 0);
  ASSERT_EQ(::setenv("SBATCH_QOS", "q", 1), 0);
  ASSERT_EQ(::setenv("SRUN_CPUS_PER_TASK", "2", 1), 0);
  ASSERT_EQ(::setenv("PCM_X", "1", 1), 0);
  const std::vector<std::string> env = environment_outside_slurm();
  auto has = [&](const std::string& e) {
    return std::find(env.begin(), env.end(), e) != env.end();
  };
  auto names = [&](const std::string& prefix) {
    return std::any_of(env.begin(), env.end(),
                       [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("SLURM_CONF=/x"));
  EXPECT_TRUE(has("PCM_X=1"));
  EXPECT_FALSE(names("SLURM_JOB_ID="));
  EXPECT_FALSE(names("SALLOC_PARTITION="));
  EXPECT_FALSE(names("SBATCH_QOS="));
  EXPECT_FALSE(names("SRUN_CPUS_PER_TASK="));
  // The rest of the environment is kept.
  if (const char* path = std::getenv("PATH")) EXPECT_TRUE(has(std::string("PATH=") + path));
}

// The hosts of --resources slurm carry their job in host_list and in the job table on disk.
class SlurmInventoryTest : public ServerTest {
 protected:
  void SetUp() override {
    more_hosts_ = {HostSlots{"sn1", 2}, HostSlots{"sn2", 2}};
    slurm_jobs_ = {{"sn1", "42"}, {"sn2", "42"}};
    ServerTest::SetUp();
  }
};

TEST_F(SlurmInventoryTest, HostsShowTheirSlurmJobAndKeepItAcrossARestart) {
  auto list = client_->request({{"op", "host_list"}}).header;
  ASSERT_FALSE(host_row(list, "sn1").is_null()) << list.dump();
  EXPECT_EQ(host_row(list, "sn1").at("slurm_job"), "42");
  EXPECT_EQ(host_row(list, "sn2").at("slots"), 2);
  EXPECT_TRUE(host_row(list, "localhost").at("slurm_job").is_null());
  ASSERT_EQ(code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 1}}), PCM_SUCCESS);
  const json* t = nullptr;
  json table_now = table(dir_);
  for (const auto& h : table_now.at("inventory"))
    if (h.at("name") == "sn2") t = &h;
  ASSERT_NE(t, nullptr) << table_now.dump();
  EXPECT_EQ(t->at("slurm_job"), "42");
  // A pcmd started again without the allocation's hosts takes them, with their job, from disk.
  stop();
  more_hosts_.clear();
  slurm_jobs_.clear();
  start(dir_);
  list = client_->request({{"op", "host_list"}}).header;
  ASSERT_FALSE(host_row(list, "sn2").is_null()) << list.dump();
  EXPECT_EQ(host_row(list, "sn2").at("slurm_job"), "42");
  EXPECT_TRUE(host_row(list, "nodec").at("slurm_job").is_null());
}
