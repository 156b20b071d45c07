// test_runtime_state.cpp — unit tests of the state libpcm's runtime holds (no mpiexec, no pcmd):
// the bound on parked processes, the reconfiguration in flight, the restart's state, what a
// reconfiguration spawns, a rank's outcome before the agreement, and the checkpoint interval.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.h"
#include "error.h"
#include "mpi_util.h"
#include "pcm_types.h"
#include "program.h"
#include "reconfig.h"
#include "restart_state.h"
#include "test_util.h"
#include "world.h"
#include "young_daly.h"

using pcm::proto::Command;
namespace d = pcm::lib;
using Verdict = d::Parking::Verdict;

namespace {

Command migration(int rank, int size) {
  Command c;
  c.id = 5;
  c.kind = Command::Kind::kMigrate;
  c.rank = rank;
  c.size = size;
  c.host = "h1";
  c.hosts.assign(static_cast<std::size_t>(size), "h1");
  return c;
}

Command resize(int size, bool every_host) {
  Command c;
  c.id = 6;
  c.kind = Command::Kind::kResize;
  c.size = size;
  if (every_host) c.hosts.assign(static_cast<std::size_t>(size), "h1");
  return c;
}

}  // namespace

// ---- parked processes ----------------------------------------------------------------------

TEST(Parking, NothingToBoundWhereASplitCannotLeave) {
  d::Parking p;
  p.parked = 100;
  p.split_leaves = false;
  EXPECT_EQ(p.bound(migration(0, 4), 4, 1, true).verdict, Verdict::kKeep);
  p.split_leaves = true;
  Command again = migration(0, 4);
  again.respawn = true;  // already a respawn
  EXPECT_EQ(p.bound(again, 4, 1, true).verdict, Verdict::kKeep);
}

TEST(Parking, WithinTheCapKeepsTheCommand) {
  d::Parking p;
  p.split_leaves = true;
  p.parked = 2;
  p.largest = 4;
  EXPECT_EQ(p.bound(migration(1, 4), 4, 3, false).verdict, Verdict::kKeep);  // 3 <= 3
  EXPECT_EQ(p.bound(resize(4, true), 4, 2, true).verdict, Verdict::kKeep);   // parks nobody
  // No PCM_MAX_PARKED and no PCM_Adapt: no cap at all.
  EXPECT_EQ(p.bound(migration(1, 4), 4, 0, false).verdict, Verdict::kKeep);
}

TEST(Parking, OverTheCapRespawnsAnAdaptJobAndRefusesOthers) {
  d::Parking p;
  p.split_leaves = true;
  p.parked = 4;
  p.largest = 2;
  // PCM_Adapt without PCM_MAX_PARKED: the cap is the largest size (4 here, the world's).
  auto r = p.bound(migration(0, 4), 4, 0, true);
  EXPECT_EQ(r.verdict, Verdict::kRespawn);
  EXPECT_EQ(r.would_park, 5);
  EXPECT_EQ(r.cap, 4);
  // A shrink parks the difference; without a host for every new rank it cannot be respawned.
  r = p.bound(resize(2, false), 4, 4, true);
  EXPECT_EQ(r.verdict, Verdict::kRefuse);
  EXPECT_EQ(r.would_park, 6);
  EXPECT_EQ(r.cap, 4);
  EXPECT_EQ(p.bound(resize(2, true), 4, 4, true).verdict, Verdict::kRespawn);
  // The paper's calls cannot respawn: refused once PCM_MAX_PARKED is set.
  EXPECT_EQ(p.bound(migration(0, 4), 4, 3, false).verdict, Verdict::kRefuse);
}

// ---- the reconfiguration in flight ---------------------------------------------------------

TEST(Reconfig, StatusOfThePendingCommand) {
  d::Reconfig r;
  r.current = migration(2, 4);
  EXPECT_EQ(r.status_of(2, 4, true), PCM_MIGRATE);
  EXPECT_EQ(r.status_of(0, 4, false), PCM_RECONFIGURE);
  r.current = resize(6, true);
  EXPECT_EQ(r.status_of(0, 4, false), PCM_SPLIT);
  r.current = resize(2, true);
  EXPECT_EQ(r.status_of(0, 4, true), PCM_MERGE);
  r.current->respawn = true;
  EXPECT_EQ(r.status_of(0, 4, true), PCM_SPLIT);   // PCM_Adapt spawns the whole world
  EXPECT_EQ(r.status_of(0, 4, false), PCM_MERGE);  // the paper's PCM_Merge respawns it
}

TEST(Reconfig, CheckPendingNamesTheRightCall) {
  d::Reconfig r;
  EXPECT_EQ(code_of([&] { r.check_pending(true, 4, false); }), PCM_ERR_STATE);
  r.current = migration(1, 4);
  EXPECT_EQ(code_of([&] { r.check_pending(false, 4, false); }), PCM_ERR_STATE);
  r.current = resize(2, true);
  EXPECT_NO_THROW(r.check_pending(false, 4, false));
  try {
    r.check_pending(true, 4, false);
    FAIL() << "a merge passed for a split";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_STATE);
    EXPECT_NE(std::string(e.what()).find("call PCM_Merge"), std::string::npos) << e.what();
  }
  r.current->respawn = true;  // PCM_Adapt's respawn is carried out as a split
  EXPECT_NO_THROW(r.check_pending(true, 4, true));
  // Under the paper's calls a respawned merge stays PCM_Merge's (it spawns inside it).
  EXPECT_NO_THROW(r.check_pending(false, 4, false));
  EXPECT_EQ(code_of([&] { r.check_pending(true, 4, false); }), PCM_ERR_STATE);
}

TEST(Reconfig, DoneAndClearAndTheRecordOfTheLast) {
  d::Reconfig r;
  int kind = 0, before = 0;
  double started = 0;
  char why[8];
  EXPECT_EQ(code_of([&] { r.last_info(&kind, &before, &started); }), PCM_ERR_STATE);
  EXPECT_EQ(code_of([&] { r.reason(why, sizeof why); }), PCM_ERR_STATE);
  Command c = resize(2, true);
  c.why = "operator command";
  EXPECT_TRUE(r.is_new(c));
  r.current = c;
  r.note(c, 4);
  r.last_info(&kind, &before, &started);
  EXPECT_EQ(kind, PCM_MERGE);
  EXPECT_EQ(before, 4);
  EXPECT_GT(started, 0);
  r.reason(why, sizeof why);
  EXPECT_EQ(std::string(why), "oper...");  // cut at 7 bytes, ending in "..."
  EXPECT_EQ(code_of([&] { r.reason(why, 0); }), PCM_ERR_ARG);
  r.done(c.id);
  EXPECT_FALSE(r.current);
  EXPECT_FALSE(r.is_new(c));
  r.received = c;
  r.current = c;
  r.clear();
  EXPECT_FALSE(r.received);
  EXPECT_FALSE(r.current);
  r.t_spawn = 1;
  r.t_data = 2;
  r.t_rebuild = 3;
  double t[3] = {0, 0, 0};
  r.times(&t[0], &t[1], &t[2]);
  EXPECT_EQ(t[0] + t[1] + t[2], 6.0);
  r.times(nullptr, nullptr, nullptr);
}

// ---- the restart's state -------------------------------------------------------------------

TEST(RestartState, InfoAndTheVersionSpawnedProcessesReceive) {
  d::RestartState s;
  int it = 0, np = 0;
  EXPECT_FALSE(s.restarted());
  EXPECT_EQ(code_of([&] { s.info(&it, &np); }), PCM_ERR_STATE);
  s.resume_from(nlohmann::json{{"iteration", 300}, {"nprocs", 3}});
  EXPECT_TRUE(s.restarted());
  s.info(&it, &np);
  EXPECT_EQ(it, 300);
  EXPECT_EQ(np, 3);
  d::RestartState copy;
  copy.resume_from(s.version());
  EXPECT_EQ(copy.iteration, 300);
  EXPECT_EQ(copy.nprocs, 3);
}

// ---- what a reconfiguration spawns ---------------------------------------------------------

TEST(Program, SpawnCommand) {
  d::Program p;
  p.exe = "/opt/app/bin/heat";
  p.cwd = "/home/u/run";
  EXPECT_EQ(p.spawn_command(nullptr), "/opt/app/bin/heat");
  EXPECT_EQ(p.spawn_command(""), "/opt/app/bin/heat");
  EXPECT_EQ(p.spawn_command("heat2"), "heat2");  // through PATH, as mpiexec found it
  EXPECT_EQ(p.spawn_command("./bin/heat2"), "/home/u/run/./bin/heat2");
  EXPECT_EQ(p.spawn_command("/usr/bin/heat2"), "/usr/bin/heat2");
}

// ---- a rank's part before the agreement ----------------------------------------------------

TEST(Attempt, KeepsTheCodeAndMessageOfWhatWasThrown) {
  auto ok = d::attempt([] {});
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code, PCM_SUCCESS);
  auto failed = d::attempt([] { pcm::fail(PCM_ERR_SPAWN, "program '{}' is missing", "x"); });
  EXPECT_EQ(failed.code, PCM_ERR_SPAWN);
  EXPECT_EQ(failed.msg, "program 'x' is missing");
  auto other = d::attempt([] { throw std::out_of_range("key 'x' not found"); });
  EXPECT_EQ(other.code, PCM_ERR_INTERNAL);
  EXPECT_EQ(other.msg, "internal error: key 'x' not found");
}

// ---- the checkpoint interval (young_daly.h) ---------------------------------------------------

TEST(YoungDaly, DalysEstimateIsYoungsWithTheNextTermsAndBoundedByTheMtbf) {
  // Young's sqrt(2 c M) for a cheap checkpoint, a little less with Daly's terms (c = 1 s,
  // M = 1 h: sqrt(7200) = 84.85; Daly: 84.85 * (1 + sqrt(1/7200)/3 + 1/64800) - 1 = 84.18).
  EXPECT_NEAR(d::daly_interval(1, 3600), 84.18, 0.01);
  EXPECT_NEAR(d::daly_interval(1e-3, 1e6), std::sqrt(2 * 1e-3 * 1e6), 0.01);
  // Longer for a dearer checkpoint or a longer MTBF.
  EXPECT_GT(d::daly_interval(4, 3600), d::daly_interval(1, 3600));
  EXPECT_GT(d::daly_interval(1, 7200), d::daly_interval(1, 3600));
  // A checkpoint that costs twice the MTBF or more: every MTBF.
  EXPECT_EQ(d::daly_interval(20, 10), 10);
  EXPECT_EQ(d::daly_interval(0, 10), 0);
  EXPECT_EQ(d::daly_interval(1, 0), 0);
  EXPECT_EQ(d::daly_interval(-1, 10), 0);
}
