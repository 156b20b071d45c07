// test_jobs.cpp — pcmd's table of jobs in-process: registration, names, rank 0 vanishing, the table
// on disk across pcmd restarts, ended jobs forgotten, profiles.
#include "server_fixture.h"

TEST_F(ServerTest, RegisterNamesJobsAndRefusesADuplicateRunningName) {
  EXPECT_EQ(register_job("heat", 2), "heat");
  EXPECT_EQ(code({{"op", "register"}, {"job", "heat"}, {"size", 1}, {"hosts", {"localhost"}}}),
            PCM_ERR_REFUSED);
  // The refusal says what to do.
  EXPECT_NE(last_error_.find("pcmctl status heat"), std::string::npos) << last_error_;
  auto auto_name = register_job("", 1);
  EXPECT_EQ(auto_name.rfind("job-", 0), 0u);
  EXPECT_EQ(code({{"op", "register"}, {"job", "../x"}, {"size", 1}, {"hosts", {"localhost"}}}),
            PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "register"}, {"size", 2}, {"hosts", {"localhost"}}}), PCM_ERR_ARG);
  // A finished job's name can be used again.
  EXPECT_EQ(code({{"op", "finished"}, {"job", "heat"}, {"iteration", 10}}), PCM_SUCCESS);
  EXPECT_EQ(register_job("heat", 3), "heat");
}

TEST_F(ServerTest, AJobWhoseRank0VanishedIsMarkedFailed) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // a pid that no longer exists
  client_->request(
      {{"op", "register"}, {"job", "gone"}, {"size", 1}, {"hosts", {"localhost"}}, {"pid", child}});
  client_->request({{"op", "resize"}, {"job", "gone"}, {"size", 2}});
  std::string state;
  for (int i = 0; i < 50 && state != "failed"; ++i) {  // pcmd checks once a second
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state = client_->request({{"op", "status"}, {"job", "gone"}}).header["jobs"][0]["state"];
  }
  auto job = client_->request({{"op", "status"}, {"job", "gone"}}).header["jobs"][0];
  EXPECT_EQ(job["state"], "failed");
  EXPECT_NE(job["last_event"].get<std::string>().find("resize to 2 (command"), std::string::npos)
      << job.dump();
}

// ---- the job table survives pcmd ----------------------------------------------------------

// A pcmd that stops (SIGTERM) and a new one on the same data directory: the jobs, their pending
// command, the inventory and the numbering carry on, and a command is never done twice.
TEST_F(ServerTest, TheJobTableSurvivesARestart) {
  auto reg = client_->request(
      {{"op", "register"}, {"job", "j"}, {"size", 2}, {"hosts", {"localhost", "localhost"}}});
  const long long incarnation = reg.header.at("incarnation");
  auto m = client_->request({{"op", "migrate"}, {"job", "j"}, {"rank", 1}});
  const long long id = m.header.at("command");
  register_job("k", 1);
  ASSERT_EQ(code({{"op", "finished"}, {"job", "k"}, {"iteration", 9}}), PCM_SUCCESS);
  ASSERT_EQ(code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 3}, {"site", "b"}}),
            PCM_SUCCESS);

  stop();
  start(dir_);
  auto st = client_->request({{"op", "status"}}).header;
  ASSERT_EQ(st.at("jobs").size(), 2u) << st.dump();
  auto j = client_->request({{"op", "status"}, {"job", "j"}}).header.at("jobs").at(0);
  EXPECT_EQ(j.at("state"), "running");
  EXPECT_EQ(j.at("size"), 2);
  ASSERT_TRUE(j.at("pending").is_object());
  EXPECT_EQ(j.at("pending").at("id"), id);
  EXPECT_NE(j.at("last_event").get<std::string>().find("pcmd restarted"), std::string::npos);
  EXPECT_EQ(client_->request({{"op", "status"}, {"job", "k"}}).header.at("jobs").at(0).at("state"),
            "finished");
  auto hosts = client_->request({{"op", "host_list"}}).header;
  EXPECT_EQ(host_row(hosts, "nodec").at("site"), "b");
  // The job's rank 0 polls the new pcmd and finds its command.
  auto p = client_->request({{"op", "poll"}, {"job", "j"}, {"iteration", 50}});
  EXPECT_EQ(p.header.at("command").at("id"), id);
  reconfigured("j", id, {"localhost", "localhost"});
  // Its report sent again (the reply was lost with a pcmd): taken once, acknowledged again.
  json again{{"op", "reconfigured"}, {"job", "j"}, {"command", id},
             {"success", true},      {"size", 2},  {"hosts", {"localhost", "localhost"}}};
  EXPECT_EQ(code(again), PCM_ERR_REFUSED);
  again["retry"] = true;
  EXPECT_EQ(code(again), PCM_SUCCESS);
  j = client_->request({{"op", "status"}, {"job", "j"}}).header.at("jobs").at(0);
  EXPECT_EQ(j.at("reconfigurations"), 1);
  // Numbers are never given twice.
  auto m2 = client_->request({{"op", "migrate"}, {"job", "j"}, {"rank", 0}});
  EXPECT_GT(m2.header.at("command").get<long long>(), id);
  auto reg2 =
      client_->request({{"op", "register"}, {"job", "n"}, {"size", 1}, {"hosts", {"localhost"}}});
  EXPECT_GT(reg2.header.at("incarnation").get<long long>(), incarnation);
}

// What a job waits for is in the table too (issue 38 item 2): a checkpoint asked of a running job
// is asked again by the next pcmd, with its id, until a version is committed.
TEST_F(ServerTest, PendingStateSurvivesARestart) {
  register_job("j", 1);
  auto asked = client_->request({{"op", "checkpoint_request"}, {"job", "j"}, {"why", "test"}});
  const long long id = asked.header.at("id");
  stop();
  start(dir_);
  auto j = client_->request({{"op", "status"}, {"job", "j"}}).header.at("jobs").at(0);
  ASSERT_TRUE(j.at("checkpoint_wanted").is_object()) << j.dump();
  EXPECT_EQ(j.at("checkpoint_wanted").at("id"), id);
  EXPECT_EQ(j.at("checkpoint_wanted").at("why"), "test");
  auto p = client_->request({{"op", "poll"}, {"job", "j"}, {"iteration", 5}});
  EXPECT_EQ(p.header.at("checkpoint"), id) << p.header.dump();
  // Asked again after the restart: a new id, never one given before.
  register_job("k", 1);
  auto again = client_->request({{"op", "checkpoint_request"}, {"job", "k"}});
  EXPECT_GT(again.header.at("id").get<long long>(), id);
}

// A reply says the change is on disk: the table file holds it as soon as the reply arrives, so a
// pcmd killed right after (its table copied as a kill -9 would leave it) still knows it.
TEST_F(ServerTest, AChangeIsOnDiskBeforeItsReply) {
  register_job("j", 2);
  const json* j = nullptr;
  json t = table(dir_);
  ASSERT_NE(j = table_job(t, "j"), nullptr) << t.dump();
  EXPECT_EQ(j->at("state"), "running");
  auto m = client_->request({{"op", "migrate"}, {"job", "j"}, {"rank", 1}});
  t = table(dir_);
  ASSERT_NE(j = table_job(t, "j"), nullptr);
  ASSERT_TRUE(j->at("pending").is_object()) << j->dump();
  EXPECT_EQ(j->at("pending").at("id"), m.header.at("command"));

  TempDir crashed;
  fs::copy_file(dir_ / "pcmd-jobs.json", crashed.path() / "pcmd-jobs.json");
  stop();
  start(crashed.path());
  auto st = client_->request({{"op", "status"}, {"job", "j"}}).header.at("jobs").at(0);
  EXPECT_EQ(st.at("pending").at("id"), m.header.at("command"));
}

// A registration sent twice (pcmd restarted before it answered) is one job.
TEST_F(ServerTest, ARegistrationSentTwiceIsOneJob) {
  json req{{"op", "register"}, {"size", 1}, {"hosts", {"localhost"}}, {"nonce", "n-1"}};
  auto a = client_->request(req).header;
  auto b = client_->request(req).header;
  EXPECT_EQ(a.at("job"), b.at("job"));
  EXPECT_EQ(a.at("incarnation"), b.at("incarnation"));
  req["nonce"] = "n-2";
  EXPECT_NE(client_->request(req).header.at("job"), a.at("job"));
  req["job"] = "named";
  req["nonce"] = "n-3";
  EXPECT_EQ(client_->request(req).header.at("job"), "named");
  EXPECT_EQ(client_->request(req).header.at("job"), "named");  // not "in use"
  req["nonce"] = "n-4";
  EXPECT_EQ(code(req), PCM_ERR_REFUSED);  // another registration of a running name
}

// A command that waited for a second Slurm allocation when pcmd stopped is given up by the next
// pcmd, which says so (its sweep cancels the allocation); a move keeps its state and age.
TEST(JobTable, AnAllocationAskedForIsGivenUpByTheNextPcmd) {
  pcm::daemon::Changes changes;
  auto log = std::make_shared<spdlog::logger>("quiet");
  pcm::daemon::JobTable before(changes, log, "localhost");
  pcm::daemon::Job& job = before.all()["j"];
  job.name = "j";
  job.size = 1;
  job.hosts = {"localhost"};
  const auto now = std::chrono::steady_clock::now();
  job.allocating = pcm::daemon::Job::Allocating{"split of rank 0 into 2 (1 more slot(s))", "4242",
                                                now - std::chrono::seconds(3)};
  job.move = pcm::daemon::Job::Move{"west", "under way", "", now - std::chrono::seconds(7)};
  json t{{"jobs", before.jobs_json()}};
  before.put_counters(t);
  pcm::daemon::JobTable after(changes, log, "localhost");
  after.take_over(pcm::daemon::JobTable::parse_jobs(t), t, false);
  const pcm::daemon::Job& j = after.find("j");
  EXPECT_FALSE(j.allocating);
  std::string said;
  for (const auto& e : j.events) said += e.text + "\n";
  EXPECT_NE(said.find("pcmd restarted while split of rank 0 into 2 (1 more slot(s)) waited for a "
                      "Slurm allocation (Slurm job 4242): that command is not carried out"),
            std::string::npos)
      << said;
  ASSERT_TRUE(j.move);
  EXPECT_EQ(j.move->site, "west");
  EXPECT_EQ(j.move->state, "under way");
  const double age =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - j.move->since).count();
  EXPECT_GE(age, 7.0);
  EXPECT_LT(age, 60.0);
}

// A table that cannot be used is set aside, and pcmd starts with no job.
TEST(JobTable, ADamagedTableIsSetAside) {
  for (const std::string& bad :
       {std::string("{not json"), std::string(R"({"version": 1, "jobs": [{"name": "../x"}]})"),
        std::string(R"({"version": 99})")}) {
    TempDir d;
    std::ofstream(d.path() / "pcmd-jobs.json") << bad;
    zmq::context_t ctx(1);
    pcm::daemon::ServerOptions o;
    o.data_dir = d.path().string();
    o.secret = "right-secret";
    o.probe_port = 0;
    {
      pcm::daemon::Server server(ctx, o);
      std::vector<char> data;
      auto st =
          server.handle({{"v", pcm::proto::kVersion}, {"op", "status"}, {"secret", "right-secret"}},
                        nullptr, 0, data);
      EXPECT_TRUE(st.at("jobs").empty()) << bad;
    }
    EXPECT_TRUE(fs::exists(d.path() / "pcmd-jobs.json.bad")) << bad;
  }
}

// pcmd keeps the jobs that run and the last 64 that ended, not every job it ever served (its
// table is written after every change).
TEST_F(ServerTest, OnlyTheLastEndedJobsAreKept) {
  register_job("runs", 1);
  for (int i = 0; i < 70; ++i) {
    const std::string name = "ended-" + std::to_string(i);
    register_job(name, 1);
    ASSERT_EQ(code({{"op", "finished"}, {"job", name}}), PCM_SUCCESS);
  }
  register_job("last", 1);
  auto jobs = client_->request({{"op", "status"}}).header.at("jobs");
  EXPECT_EQ(jobs.size(), 66u);  // 2 running, 64 ended
  EXPECT_EQ(code({{"op", "status"}, {"job", "runs"}}), PCM_SUCCESS);
  EXPECT_EQ(code({{"op", "status"}, {"job", "ended-69"}}), PCM_SUCCESS);
  EXPECT_EQ(code({{"op", "status"}, {"job", "ended-0"}}), PCM_ERR_REFUSED);
}

// A poll carries the job's profile; pcmd keeps the last valid one for `pcmctl profile`, and a bad
// one costs the job its profile, never its poll.
TEST_F(ServerTest, PollCarriesTheProfileAndABadOneIsDropped) {
  register_job("p", 2);
  auto none = client_->request({{"op", "profile"}, {"job", "p"}}).header;
  EXPECT_TRUE(none.at("profile").is_null());
  const json profile{
      {"interval_s", 1.5},
      {"iteration", 40},
      {"ranks", {{10, 0.1, 0.009, 0.011, 0.02, 30, 100}, {10, 0.1, 0.01, 0.01, 0.03, 30, 0}}},
      {"bytes", {0, 100, 0, 0}},
      {"messages", {0, 10, 0, 0}}};
  client_->request({{"op", "poll"}, {"job", "p"}, {"iteration", 40}, {"profile", profile}});
  auto got = client_->request({{"op", "profile"}, {"job", "p"}}).header;
  EXPECT_EQ(got.at("profile"), profile);
  EXPECT_GE(got.at("age_s").get<double>(), 0.0);
  json bad = profile;
  bad["ranks"].erase(1);  // one rank for a job of two
  auto p = client_->request({{"op", "poll"}, {"job", "p"}, {"iteration", 41}, {"profile", bad}});
  EXPECT_TRUE(p.header.at("ok").get<bool>());
  EXPECT_EQ(client_->request({{"op", "profile"}, {"job", "p"}}).header.at("profile"), profile);
  EXPECT_EQ(code({{"op", "profile"}, {"job", "nosuch"}}), PCM_ERR_REFUSED);  // as every job op
}

// A job that reshapes by restart (PCM_RESHAPE=restart) is never handed a command: its commands
// are refused unless pcmctl run supervises it, and wait pending for pcmctl run, which ends the run
// (reshape_stop: its losses are expected) and relaunches it; the relaunch takes the name over at
// once and counts the command done.
TEST_F(ServerTest, ARestartReshapeIsLeftToPcmctlRun) {
  json reg{{"op", "register"},
           {"size", 2},
           {"hosts", {"localhost", "localhost"}},
           {"job", "u"},
           {"reshape", "restart"}};
  client_->request(reg);
  EXPECT_EQ(code({{"op", "split"}, {"job", "u"}, {"rank", 0}, {"into", 2}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("reshapes by restart"), std::string::npos) << last_error_;

  reg["job"] = "r";
  reg["supervised"] = true;
  client_->request(reg);
  auto c = client_->request({{"op", "split"}, {"job", "r"}, {"rank", 0}, {"into", 2}}).header;
  const long long id = c.at("command");
  auto p = client_->request({{"op", "poll"}, {"job", "r"}, {"iteration", 3}}).header;
  EXPECT_TRUE(p.at("command").is_null()) << p.dump();
  auto st = client_->request({{"op", "status"}, {"job", "r"}}).header.at("jobs").at(0);
  EXPECT_EQ(st.at("reshape"), "restart");
  EXPECT_EQ(st.at("pending").at("id"), id);
  EXPECT_EQ(st.at("pending").at("size"), 3);
  EXPECT_FALSE(st.at("pending").at("delivered").get<bool>());

  // No relaunch yet: a second run of the name is refused, the relaunch is not.
  json again{{"op", "register"},
             {"size", 3},
             {"hosts", {"localhost", "localhost", "localhost"}},
             {"job", "r"},
             {"reshape", "restart"},
             {"reshaped_command", id},
             {"supervised", true}};
  EXPECT_EQ(code(again), PCM_ERR_REFUSED);
  client_->request({{"op", "job_move"}, {"job", "r"}, {"action", "reshape_stop"}});
  // A rank that outlives the first killed one sees MPI fail: the end of this run, not the job's.
  EXPECT_EQ(code({{"op", "finished"}, {"job", "r"}, {"error", "MPI_Bcast failed"}}), PCM_SUCCESS);
  st = client_->request({{"op", "status"}, {"job", "r"}}).header.at("jobs").at(0);
  EXPECT_EQ(st.at("state"), "running");
  EXPECT_EQ(st.at("reshaping"), id);
  client_->request(again);
  st = client_->request({{"op", "status"}, {"job", "r"}}).header.at("jobs").at(0);
  EXPECT_EQ(st.at("size"), 3);
  EXPECT_EQ(st.at("reconfigurations"), 1);
  EXPECT_TRUE(st.at("pending").is_null());
  EXPECT_TRUE(st.at("reshaping").is_null());
  bool done = false;
  for (const auto& e : st.at("events"))
    done = done || e.get<std::string>().find("split of rank 0 into 2 done by a restart reshape") !=
                       std::string::npos;
  EXPECT_TRUE(done) << st.dump();

  // A command pcmctl run could not carry out is given up, and the job goes on.
  c = client_->request({{"op", "merge"}, {"job", "r"}, {"ranks", {1, 2}}}).header;
  client_->request(
      {{"op", "job_move"}, {"job", "r"}, {"action", "reshape_failed"}, {"text", "no version"}});
  st = client_->request({{"op", "status"}, {"job", "r"}}).header.at("jobs").at(0);
  EXPECT_TRUE(st.at("pending").is_null());
  EXPECT_EQ(st.at("last_event"), "merge of ranks 1,2 failed: no version");
  EXPECT_EQ(st.at("state"), "running");
}

// PCM_RESHAPE=auto: a command whose live attempt failed, or whose reconfiguration hung (the
// watchdog's event names it), is left to pcmctl run's restart reshape, never handed again.
TEST_F(ServerTest, AnAutoJobsFailedOrHungCommandIsLeftToARestart) {
  client_->request({{"op", "register"},
                    {"size", 2},
                    {"hosts", {"localhost", "localhost"}},
                    {"job", "a"},
                    {"reshape", "auto"},
                    {"supervised", true}});
  auto c = client_->request({{"op", "split"}, {"job", "a"}, {"rank", 0}, {"into", 2}}).header;
  auto p = client_->request({{"op", "poll"}, {"job", "a"}, {"iteration", 3}}).header;
  ASSERT_TRUE(p.at("command").is_object()) << p.dump();  // live first
  client_->request({{"op", "reconfigured"},
                    {"job", "a"},
                    {"command", c.at("command")},
                    {"success", false},
                    {"error", "MPI_Comm_spawn failed"}});
  p = client_->request({{"op", "poll"}, {"job", "a"}, {"iteration", 4}}).header;
  EXPECT_TRUE(p.at("command").is_null()) << p.dump();
  auto st = client_->request({{"op", "status"}, {"job", "a"}}).header.at("jobs").at(0);
  EXPECT_TRUE(st.at("pending").at("by_restart").get<bool>()) << st.dump();
  EXPECT_NE(st.at("last_event").get<std::string>().find("left to pcmctl run's restart reshape"),
            std::string::npos);
  client_->request({{"op", "job_move"}, {"job", "a"}, {"action", "reshape_failed"}});

  c = client_->request({{"op", "merge"}, {"job", "a"}, {"ranks", {0, 1}}}).header;
  client_->request({{"op", "poll"}, {"job", "a"}, {"iteration", 5}});
  client_->request(
      {{"op", "job_event"}, {"job", "a"}, {"text", "stuck"}, {"stuck_command", c.at("command")}});
  st = client_->request({{"op", "status"}, {"job", "a"}}).header.at("jobs").at(0);
  EXPECT_TRUE(st.at("pending").at("by_restart").get<bool>()) << st.dump();
}
