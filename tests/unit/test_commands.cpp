// test_commands.cpp — pcmd's command desk in-process: migrate, split, merge and resize validated,
// placed and delivered by poll; reasons; a program no longer there.
#include "server_fixture.h"

TEST_F(ServerTest, MigrateIsValidatedThenDeliveredByPoll) {
  register_job("j", 2);
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "nojob"}, {"rank", 0}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "j"}, {"rank", 2}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "j"}, {"rank", -1}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "j"}, {"rank", 1}, {"host", "elsewhere"}}),
            PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("inventory"), std::string::npos);
  // Without --host, the inventory host with fewest of the job's other processes.
  auto r = client_->request({{"op", "migrate"}, {"job", "j"}, {"rank", 1}});
  EXPECT_EQ(r.header.at("host"), "nodeb");
  // With the world afterwards, which libpcm needs should it respawn the world instead.
  EXPECT_EQ(r.header.at("hosts"), json({"localhost", "nodeb"}));
  auto id = r.header.at("command").get<long>();
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "j"}, {"rank", 0}}),
            PCM_ERR_REFUSED);  // one at a time
  auto p = client_->request({{"op", "poll"}, {"job", "j"}, {"iteration", 7}});
  ASSERT_TRUE(p.header.at("command").is_object());
  EXPECT_EQ(p.header["command"]["rank"], 1);
  EXPECT_EQ(p.header["command"]["id"], id);
  EXPECT_EQ(code({{"op", "reconfigured"},
                  {"job", "j"},
                  {"command", id + 1},
                  {"size", 2},
                  {"hosts", {"localhost", "nodeb"}}}),
            PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "reconfigured"},
                  {"job", "j"},
                  {"command", id},
                  {"size", 2},
                  {"hosts", {"localhost", "nodeb"}}}),
            PCM_SUCCESS);
  auto s = client_->request({{"op", "status"}, {"job", "j"}});
  const auto& job = s.header.at("jobs").at(0);
  EXPECT_EQ(job.at("reconfigurations"), 1);
  EXPECT_EQ(job.at("iteration"), 7);
  EXPECT_TRUE(job.at("pending").is_null());
  EXPECT_EQ(job.at("hosts").at(1), "nodeb");
  auto p2 = client_->request({{"op", "poll"}, {"job", "j"}, {"iteration", 8}});
  EXPECT_TRUE(p2.header.at("command").is_null());
}

TEST_F(ServerTest, SplitMergeResizeAreValidatedBeforeAnythingHappens) {
  register_job("r", 2);  // both ranks on localhost (4 slots), nodeb has 2
  EXPECT_EQ(code({{"op", "split"}, {"job", "r"}, {"rank", 5}, {"into", 2}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "split"}, {"job", "r"}, {"rank", 0}, {"into", 1}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "split"}, {"job", "r"}, {"rank", 0}, {"into", 6}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("free slot"), std::string::npos) << last_error_;
  EXPECT_EQ(code({{"op", "split"}, {"job", "r"}, {"rank", 0}, {"into", 2}, {"host", "nowhere"}}),
            PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "merge"}, {"job", "r"}, {"ranks", {0}}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "merge"}, {"job", "r"}, {"ranks", {0, 0}}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "merge"}, {"job", "r"}, {"ranks", {0, 2}}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "merge"}, {"job", "r"}, {"ranks", "0,1"}}), PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "resize"}, {"job", "r"}, {"size", 0}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "resize"}, {"job", "r"}, {"size", 2}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "resize"}, {"job", "r"}, {"size", 7}}), PCM_ERR_REFUSED);  // 6 slots
  // Nothing was queued by the refusals.
  auto st = client_->request({{"op", "status"}, {"job", "r"}});
  EXPECT_TRUE(st.header["jobs"][0]["pending"].is_null());

  // A valid split: the new world fills localhost first, then nodeb; one command at a time.
  auto r = client_->request({{"op", "split"}, {"job", "r"}, {"rank", 1}, {"into", 4}});
  EXPECT_EQ(r.header.at("size"), 5);
  EXPECT_EQ(r.header.at("hosts"),
            json({"localhost", "localhost", "localhost", "localhost", "nodeb"}));
  EXPECT_EQ(code({{"op", "merge"}, {"job", "r"}, {"ranks", {0, 1}}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("in flight"), std::string::npos) << last_error_;
  auto p = client_->request({{"op", "poll"}, {"job", "r"}, {"iteration", 3}});
  EXPECT_EQ(p.header["command"]["kind"], "split");
  EXPECT_EQ(p.header["command"]["into"], 4);
  EXPECT_EQ(code({{"op", "reconfigured"},
                  {"job", "r"},
                  {"command", r.header.at("command")},
                  {"size", 5},
                  {"hosts", {"localhost", "localhost", "localhost", "localhost", "nodeb"}}}),
            PCM_SUCCESS);
  // A merge names the survivors' hosts in their new order (the lowest listed rank keeps the
  // data); a shrinking resize the first ranks' hosts.
  auto m = client_->request({{"op", "merge"}, {"job", "r"}, {"ranks", {4, 1}}});
  EXPECT_EQ(m.header.at("hosts"), json({"localhost", "localhost", "localhost", "localhost"}));
  client_->request({{"op", "reconfigured"},
                    {"job", "r"},
                    {"command", m.header.at("command")},
                    {"respawned", true},
                    {"size", 4},
                    {"hosts", {"localhost", "nodeb", "localhost", "localhost"}}});
  auto st2 = client_->request({{"op", "status"}, {"job", "r"}});
  EXPECT_NE(st2.header["jobs"][0]["last_event"].get<std::string>().find("by respawning"),
            std::string::npos);
  auto s = client_->request({{"op", "resize"}, {"job", "r"}, {"size", 2}});
  EXPECT_EQ(s.header.at("hosts"), json({"localhost", "nodeb"}));
}

// A command carries who asked and why to the job: the sender's text (made printable and cut to
// Command::kMaxWhy) or "operator command".
TEST_F(ServerTest, CommandsCarryTheirReason) {
  auto pending_why = [&](const std::string& job) {
    return client_->request({{"op", "status"}, {"job", job}})
        .header["jobs"][0]["pending"]["why"]
        .get<std::string>();
  };
  for (const char* job : {"w1", "w2", "w3", "w4"}) register_job(job, 1);
  client_->request({{"op", "migrate"}, {"job", "w1"}, {"rank", 0}});
  EXPECT_EQ(pending_why("w1"), "operator command");
  client_->request(
      {{"op", "split"}, {"job", "w2"}, {"rank", 0}, {"into", 2}, {"why", "night\nshift"}});
  EXPECT_EQ(pending_why("w2"), "night\\nshift");
  client_->request({{"op", "resize"}, {"job", "w3"}, {"size", 2}, {"why", std::string(1000, 'y')}});
  EXPECT_LE(pending_why("w3").size(), pcm::proto::Command::kMaxWhy);
  EXPECT_EQ(code({{"op", "resize"}, {"job", "w4"}, {"size", 2}, {"why", {1, 2}}}), PCM_ERR_ARG);
}

TEST_F(ServerTest, AMissingProgramIsRefusedBeforeSpawning) {
  fs::path exe = dir_ / "prog";
  std::ofstream(exe.string()) << "#!/bin/sh\n";
  fs::permissions(exe, fs::perms::owner_all);
  client_->request({{"op", "register"},
                    {"job", "e"},
                    {"size", 1},
                    {"hosts", {"localhost"}},
                    {"executable", exe.string()}});
  fs::remove(exe);
  EXPECT_EQ(code({{"op", "split"}, {"job", "e"}, {"rank", 0}, {"into", 2}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("no longer executable"), std::string::npos) << last_error_;
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "e"}, {"rank", 0}}), PCM_ERR_REFUSED);
}
