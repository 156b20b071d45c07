// test_inventory.cpp — pcmd's inventory in-process: agents, the auto policy, hosts added and
// removed, topology, placement, drains.
#include "server_fixture.h"

namespace {
json agent_report(const std::string& host, int cores, double busy, bool join) {
  return json{{"op", "agent_report"}, {"host", host}, {"cores", cores},
              {"busy", busy},         {"load1", 0.5}, {"join", join}};
}
}  // namespace

// A host's agent (pcmd --agent) joins the inventory with its first report, reports its cores and
// how busy they are, and on leaving has the host drained; pcmd then refuses its reports until an
// agent joins again. An agent that falls silent for agent_timeout (1.5 s here) loses its host:
// drained like any, removed once empty.
TEST_F(ServerTest, AgentsJoinReportLeaveAndTheirSilentHostsAreLost) {
  EXPECT_EQ(code(agent_report("nodec", 2, 0.5, true)), PCM_SUCCESS);
  auto hosts = [&] {
    std::map<std::string, json> by_name;
    const json list = client_->request({{"op", "host_list"}}).header.at("hosts");
    for (const auto& h : list) by_name[h.at("host").get<std::string>()] = h;
    return by_name;
  };
  auto h = hosts();
  ASSERT_TRUE(h.count("nodec"));
  EXPECT_EQ(h["nodec"]["slots"], 2);  // one per core unless the agent says
  EXPECT_EQ(h["nodec"]["state"], "up");
  EXPECT_EQ(h["nodec"]["agent"]["cores"], 2);
  EXPECT_DOUBLE_EQ(h["nodec"]["agent"]["busy"].get<double>(), 0.5);
  EXPECT_TRUE(h["nodeb"]["agent"].is_null());
  // Reports are checked like any request.
  EXPECT_EQ(code(agent_report("nodec", 2, 2.5, false)), PCM_ERR_ARG);  // busier than its cores
  EXPECT_EQ(code(agent_report("nodec", 0, 0, false)), PCM_ERR_ARG);
  EXPECT_EQ(code(agent_report("-nodec", 2, 0, false)), PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "agent_leave"}, {"host", "nodeb"}}), PCM_ERR_REFUSED);  // no agent
  // A job with a process there: the agent's leave drains it (a migration off nodec).
  register_job("a", 2);
  auto m = client_->request({{"op", "migrate"}, {"job", "a"}, {"rank", 1}, {"host", "nodec"}});
  reconfigured("a", m.header.at("command"), {"localhost", "nodec"});
  EXPECT_EQ(code({{"op", "agent_leave"}, {"host", "nodec"}}), PCM_SUCCESS);
  EXPECT_EQ(hosts()["nodec"]["state"], "draining");
  auto st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  ASSERT_TRUE(st["pending"].is_object());
  EXPECT_EQ(st["pending"]["kind"], "migrate");
  EXPECT_NE(st["pending"]["host"], "nodec");
  EXPECT_EQ(code(agent_report("nodec", 2, 0.1, false)), PCM_SUCCESS);  // still reporting
  reconfigured("a", st["pending"]["id"], {"localhost", st["pending"]["host"]});
  EXPECT_FALSE(hosts().count("nodec"));  // drained: it left
  EXPECT_EQ(code(agent_report("nodec", 2, 0.1, false)), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("drained"), std::string::npos) << last_error_;
  // A new agent joins again; then it falls silent.
  EXPECT_EQ(code(agent_report("nodec", 2, 0.1, true)), PCM_SUCCESS);
  auto st2 = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  auto m2 = client_->request({{"op", "migrate"}, {"job", "a"}, {"rank", 0}, {"host", "nodec"}});
  reconfigured("a", m2.header.at("command"), {"nodec", st2["hosts"][1]});
  const auto silent_since = std::chrono::steady_clock::now();
  std::string state = "up";
  while (state == "up" &&
         std::chrono::steady_clock::now() - silent_since < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    state = hosts()["nodec"]["state"].get<std::string>();
  }
  EXPECT_EQ(state, "lost");
  EXPECT_GE(std::chrono::steady_clock::now() - silent_since, std::chrono::milliseconds(1400));
  // Lost and drained: the job's process there is moved off.
  auto st3 = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  ASSERT_TRUE(st3["pending"].is_object());
  EXPECT_EQ(st3["pending"]["rank"], 0);
  // Its agent comes back before the host left: the host is back.
  EXPECT_EQ(code(agent_report("nodec", 2, 0.1, false)), PCM_SUCCESS);
  EXPECT_EQ(hosts()["nodec"]["state"], "up");
}

// --policy auto: from the iteration rate rank 0's polls show and the free slots of quiet hosts,
// pcmd queues a growth by itself and says why in the job's events.
TEST_F(ServerTest, AutoPolicyGrowsAJobOntoAnAgentsFreeSlotAndSaysWhy) {
  stop();
  policy_auto_ = true;
  start(dir_);
  register_job("p", 2);  // on localhost
  EXPECT_EQ(code(agent_report("nodec", 2, 0.0, true)), PCM_SUCCESS);
  json pending;
  std::int64_t it = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (pending.is_null() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15)) {
    it += 50;
    client_->request({{"op", "poll"}, {"job", "p"}, {"iteration", it}});
    client_->request(agent_report("nodec", 2, 0.0, false));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pending = client_->request({{"op", "status"}, {"job", "p"}}).header["jobs"][0]["pending"];
  }
  ASSERT_TRUE(pending.is_object()) << "no decision within 15 s";
  EXPECT_EQ(pending["kind"], "resize");
  EXPECT_EQ(pending["size"], 3);
  EXPECT_EQ(pending["hosts"].size(), 3u);  // the new process on a host with a free slot
  // The job is told why (PCM_Reconfig_reason).
  const std::string reason = pending["why"].get<std::string>();
  EXPECT_EQ(reason.rfind("policy: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("free slot"), std::string::npos) << reason;
  // At least 2 s of polls were needed to know the rate.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto events = client_->request({{"op", "status"}, {"job", "p"}}).header["jobs"][0]["events"];
  bool why = false;
  for (const auto& e : events)
    why = why || (e.get<std::string>().find("policy: resize to 3") != std::string::npos &&
                  e.get<std::string>().find("iterations/s") != std::string::npos);
  EXPECT_TRUE(why) << events.dump();
}

TEST_F(ServerTest, HostsAreAddedUpdatedListedAndRemoved) {
  EXPECT_EQ(
      code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 3}, {"site", "b"}, {"latency", 2.5}}),
      PCM_SUCCESS);
  auto list = client_->request({{"op", "host_list"}}).header;
  auto c = host_row(list, "nodec");
  ASSERT_FALSE(c.is_null()) << list.dump();
  EXPECT_EQ(c.at("slots"), 3);
  EXPECT_EQ(c.at("used"), 0);
  EXPECT_EQ(c.at("free"), 3);
  EXPECT_EQ(c.at("site"), "b");
  EXPECT_EQ(c.at("latency"), 2.5);
  EXPECT_EQ(c.at("state"), "up");
  EXPECT_EQ(host_row(list, "localhost").at("site"), "default");
  EXPECT_TRUE(host_row(list, "localhost").at("latency").is_null());
  // Update in place; refusals.
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 1}}), PCM_SUCCESS);
  EXPECT_EQ(host_row(client_->request({{"op", "host_list"}}).header, "nodec").at("slots"), 1);
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "bad host"}, {"slots", 1}}), PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 0}}), PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 1}, {"latency", -1}}),
            PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "nodec"}, {"slots", 1}, {"site", "a/b"}}),
            PCM_ERR_ARG);
  register_job("busy", 2);  // two processes on localhost
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "localhost"}, {"slots", 1}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("busy"), std::string::npos) << last_error_;
  EXPECT_EQ(code({{"op", "host_remove"}, {"host", "localhost"}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "host_remove"}, {"host", "nowhere"}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "host_remove"}, {"host", "nodec"}}), PCM_SUCCESS);
  EXPECT_TRUE(host_row(client_->request({{"op", "host_list"}}).header, "nodec").is_null());
}

TEST_F(ServerTest, TopologyGivesTheInventorySites) {
  client_->request({{"op", "host_add"}, {"host", "nodeb"}, {"slots", 2}, {"site", "west"}});
  auto r = client_->request({{"op", "topology"}, {"hosts", {"localhost", "nodeb", "other"}}});
  EXPECT_EQ(r.header.at("sites"), json({"default", "west", ""}));
  EXPECT_EQ(code({{"op", "topology"}, {"hosts", {"bad host"}}}), PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "topology"}, {"hosts", "localhost"}}), PCM_ERR_ARG);
}

TEST_F(ServerTest, PlacementComesFromTheCommandThenTheJobThenPcmd) {
  // pcmd's default (concentrate): localhost (nearest by name when nothing is measured) first.
  register_job("c", 1);
  auto r = client_->request({{"op", "split"}, {"job", "c"}, {"rank", 0}, {"into", 2}});
  EXPECT_EQ(r.header.at("hosts"), json({"localhost", "localhost"}));
  // The command's own.
  client_->request({{"op", "register"}, {"job", "s"}, {"size", 1}, {"hosts", {"localhost"}}});
  r = client_->request(
      {{"op", "split"}, {"job", "s"}, {"rank", 0}, {"into", 2}, {"placement", "spread"}});
  EXPECT_EQ(r.header.at("hosts"), json({"localhost", "nodeb"}));
  // The job's (PCM_PLACEMENT at launch), and a command overriding it.
  client_->request({{"op", "register"},
                    {"job", "j"},
                    {"size", 1},
                    {"hosts", {"nodeb"}},
                    {"placement", "spread"}});
  r = client_->request({{"op", "resize"}, {"job", "j"}, {"size", 2}});
  EXPECT_EQ(r.header.at("hosts"), json({"localhost", "nodeb"}));
  EXPECT_EQ(code({{"op", "register"},
                  {"job", "k"},
                  {"size", 1},
                  {"hosts", {"localhost"}},
                  {"placement", "scatter"}}),
            PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("scatter"), std::string::npos) << last_error_;
  // Migration without a host: another host with room.
  client_->request({{"op", "register"}, {"job", "m"}, {"size", 1}, {"hosts", {"localhost"}}});
  r = client_->request({{"op", "migrate"}, {"job", "m"}, {"rank", 0}});
  EXPECT_EQ(r.header.at("host"), "nodeb");
}

TEST_F(ServerTest, ADrainMigratesThenTheHostLeaves) {
  client_->request(
      {{"op", "register"}, {"job", "d"}, {"size", 2}, {"hosts", {"localhost", "nodeb"}}});
  EXPECT_EQ(code({{"op", "host_drain"}, {"host", "nowhere"}}), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "host_drain"}, {"host", "nodeb"}}), PCM_SUCCESS);
  auto list = client_->request({{"op", "host_list"}}).header;
  EXPECT_EQ(host_row(list, "nodeb").at("state"), "draining");
  // Nothing goes to a draining host.
  EXPECT_EQ(code({{"op", "host_add"}, {"host", "nodeb"}, {"slots", 2}}), PCM_ERR_REFUSED);
  auto p = client_->request({{"op", "poll"}, {"job", "d"}, {"iteration", 1}}).header;
  ASSERT_FALSE(p.at("command").is_null());
  EXPECT_EQ(p["command"]["kind"], "migrate");
  EXPECT_EQ(p["command"]["rank"], 1);
  EXPECT_EQ(p["command"]["host"], "localhost");
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "d"}, {"rank", 0}}), PCM_ERR_REFUSED);  // in flight
  reconfigured("d", p["command"]["id"], {"localhost", "localhost"});
  list = client_->request({{"op", "host_list"}}).header;
  EXPECT_TRUE(host_row(list, "nodeb").is_null()) << list.dump();
  // The last host cannot be drained.
  EXPECT_EQ(code({{"op", "host_drain"}, {"host", "localhost"}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("nowhere"), std::string::npos) << last_error_;
}

TEST_F(ServerTest, ADrainMergesWhenNoHostHasRoomAndRefusesWhenNothingCan) {
  // localhost (4 slots) is full: job f holds 3 of them, job m 1; m also has two on nodeb.
  client_->request({{"op", "register"},
                    {"job", "f"},
                    {"size", 3},
                    {"hosts", {"localhost", "localhost", "localhost"}}});
  client_->request(
      {{"op", "register"}, {"job", "m"}, {"size", 3}, {"hosts", {"nodeb", "localhost", "nodeb"}}});
  ASSERT_EQ(code({{"op", "host_drain"}, {"host", "nodeb"}}), PCM_SUCCESS);
  auto p = client_->request({{"op", "poll"}, {"job", "m"}, {"iteration", 1}}).header;
  EXPECT_EQ(p["command"]["kind"], "merge");
  EXPECT_EQ(p["command"]["ranks"], json({0, 1, 2}));
  reconfigured("m", p["command"]["id"], {"nodeb"});
  // The merged process stayed on nodeb; the merge freed a slot on localhost: it migrates there.
  p = client_->request({{"op", "poll"}, {"job", "m"}, {"iteration", 2}}).header;
  EXPECT_EQ(p["command"]["kind"], "migrate");
  EXPECT_EQ(p["command"]["host"], "localhost");
  reconfigured("m", p["command"]["id"], {"localhost"});
  EXPECT_TRUE(host_row(client_->request({{"op", "host_list"}}).header, "nodeb").is_null());
  // A job wholly on one host with no free slot anywhere else: nowhere to go.
  client_->request({{"op", "host_add"}, {"host", "nodec"}, {"slots", 1}});
  client_->request({{"op", "register"}, {"job", "c"}, {"size", 1}, {"hosts", {"nodec"}}});
  EXPECT_EQ(code({{"op", "host_drain"}, {"host", "nodec"}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("nowhere to go"), std::string::npos) << last_error_;
}

TEST_F(ServerTest, AFailedDrainStepStopsThatJobsDrain) {
  client_->request(
      {{"op", "register"}, {"job", "x"}, {"size", 2}, {"hosts", {"localhost", "nodeb"}}});
  ASSERT_EQ(code({{"op", "host_drain"}, {"host", "nodeb"}}), PCM_SUCCESS);
  auto p = client_->request({{"op", "poll"}, {"job", "x"}, {"iteration", 1}}).header;
  client_->request({{"op", "reconfigured"},
                    {"job", "x"},
                    {"command", p["command"]["id"]},
                    {"success", false},
                    {"error", "spawn failed"}});
  // No new step is queued; the host stays, draining, and says so.
  p = client_->request({{"op", "poll"}, {"job", "x"}, {"iteration", 2}}).header;
  EXPECT_TRUE(p.at("command").is_null());
  EXPECT_EQ(host_row(client_->request({{"op", "host_list"}}).header, "nodeb").at("state"),
            "draining");
  auto st = client_->request({{"op", "status"}, {"job", "x"}}).header;
  EXPECT_NE(st["jobs"][0]["last_event"].get<std::string>().find("drain stopped"),
            std::string::npos);
}

// pcmd --hosts NAME[:SLOTS][@SITE] (issue 26): each host's site comes from pcmd's own host list,
// and shows in host_list and in the topology request.
class SiteHostsTest : public ServerTest {
 protected:
  void SetUp() override {
    hosts_ = {"localhost:4", "nodeb:2@west", "nodec:3@east"};
    ServerTest::SetUp();
  }
};

TEST_F(SiteHostsTest, HostsCarryTheSiteOfTheHostList) {
  const json list = client_->request({{"op", "host_list"}}).header;
  EXPECT_EQ(host_row(list, "localhost").at("site"), "default");
  EXPECT_EQ(host_row(list, "nodeb").at("site"), "west");
  EXPECT_EQ(host_row(list, "nodeb").at("slots"), 2);
  EXPECT_EQ(host_row(list, "nodec").at("site"), "east");
  EXPECT_EQ(host_row(list, "nodec").at("slots"), 3);
  auto r = client_->request({{"op", "topology"}, {"hosts", {"nodec", "nodeb", "localhost"}}});
  EXPECT_EQ(r.header.at("sites"), json({"east", "west", "default"}));
}

// Open sites (the default): a site is a topology level, and a job spans sites freely.
TEST_F(SiteHostsTest, OpenSitesLetAJobSpanThem) {
  register_job("a", 2);
  auto m = client_->request({{"op", "migrate"}, {"job", "a"}, {"rank", 1}, {"host", "nodeb"}});
  EXPECT_EQ(m.header.at("hosts"), json({"localhost", "nodeb"}));
}

// The broker's choice (issue 26 item 3), with --closed-sites: a command that would spread a job
// over sites with no MPI port range open between them is refused with the reason; placement
// keeps to the job's site by itself; a --site-link between two sites lets a job span them.
class ClosedSitesTest : public SiteHostsTest {
 protected:
  void SetUp() override {
    closed_sites_ = true;
    SiteHostsTest::SetUp();
  }
};

TEST_F(ClosedSitesTest, CommandsDoNotSpreadAJobOverUnlinkedSites) {
  register_job("a", 2);  // on localhost, site default
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "a"}, {"rank", 1}, {"host", "nodeb"}}),
            PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("span sites default (localhost) and west (nodeb)"), std::string::npos)
      << last_error_;
  EXPECT_NE(last_error_.find("--site-link default:west:LOW-HIGH"), std::string::npos)
      << last_error_;
  EXPECT_EQ(code({{"op", "split"}, {"job", "a"}, {"rank", 0}, {"into", 2}, {"host", "nodec"}}),
            PCM_ERR_REFUSED);
  // Unnamed: the new processes stay in the job's site (localhost's 2 free slots), not refused.
  auto r = client_->request({{"op", "resize"}, {"job", "a"}, {"size", 4}, {"placement", "spread"}});
  EXPECT_EQ(r.header.at("hosts"), json({"localhost", "localhost", "localhost", "localhost"}));
}

// A one-process job is on one site before and after a migration, but its mover sends its data to
// the replacement over MPI: a migration to an unlinked site is refused too, named or not.
TEST_F(ClosedSitesTest, AOneProcessJobDoesNotMigrateToAnUnlinkedSite) {
  register_job("u", 1);  // on localhost, site default
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "u"}, {"rank", 0}, {"host", "nodeb"}}),
            PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("span sites default (localhost) and west (nodeb)"), std::string::npos)
      << last_error_;
  // Unnamed: no host of its site has room, and the others are named with why.
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "u"}, {"rank", 0}}), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("no other host of the job's sites"), std::string::npos) << last_error_;
  EXPECT_NE(last_error_.find("nodeb, nodec have"), std::string::npos) << last_error_;
}

class SiteLinkTest : public ClosedSitesTest {
 protected:
  void SetUp() override {
    site_links_ = {pcm::common::parse_site_link("west:default:50000-50100")};
    ClosedSitesTest::SetUp();
  }
};

TEST_F(SiteLinkTest, LinkedSitesMaySpanAJob) {
  register_job("a", 2);
  auto m = client_->request({{"op", "migrate"}, {"job", "a"}, {"rank", 1}, {"host", "nodeb"}});
  EXPECT_EQ(m.header.at("hosts"), json({"localhost", "nodeb"}));
  reconfigured("a", m.header.at("command"), {"localhost", "nodeb"});
  // east is linked with neither.
  EXPECT_EQ(code({{"op", "migrate"}, {"job", "a"}, {"rank", 0}, {"host", "nodec"}}),
            PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("(pcmd --site-link"), std::string::npos) << last_error_;
}

// A whole job's move (issue 26 item 4): pcmd records it for pcmctl run, which says it supervises
// the run; refused, with the reason, for a job not supervised, a site not known or with no free
// host that is up, a site the job runs in already, and while a move is under way. pcmctl run's
// news (begin, done) show in the job's status and events.
TEST_F(SiteHostsTest, AMoveIsRecordedForPcmctlRunOrRefusedWithWhy) {
  register_job("a", 2);  // on localhost, site default
  auto ask = [&](const std::string& site) {
    return code({{"op", "job_move"}, {"job", "a"}, {"action", "ask"}, {"site", site}});
  };
  EXPECT_EQ(ask("west"), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("does not run under `pcmctl run`"), std::string::npos) << last_error_;
  EXPECT_EQ(code({{"op", "job_move"}, {"job", "a"}, {"action", "supervise"}}), PCM_SUCCESS);
  EXPECT_EQ(ask("north"), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("no host of site 'north'"), std::string::npos) << last_error_;
  EXPECT_EQ(ask("default"), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("runs in site 'default' already"), std::string::npos) << last_error_;
  client_->request(
      {{"op", "register"}, {"job", "e"}, {"size", 3}, {"hosts", {"nodec", "nodec", "nodec"}}});
  EXPECT_EQ(ask("east"), PCM_ERR_REFUSED);  // nodec's 3 slots are taken
  EXPECT_NE(last_error_.find("no host that is up with a free slot (nodec has no free slot)"),
            std::string::npos)
      << last_error_;
  EXPECT_EQ(ask("west"), PCM_SUCCESS);
  EXPECT_EQ(ask("west"), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("a move to site 'west' is asked already"), std::string::npos)
      << last_error_;
  auto st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  EXPECT_TRUE(st["supervised"].get<bool>());
  EXPECT_EQ(st["move"]["site"], "west");
  EXPECT_EQ(st["move"]["state"], "asked");
  EXPECT_EQ(st["last_event"], "move to site west asked");
  EXPECT_EQ(code({{"op", "job_move"}, {"job", "a"}, {"action", "begin"}, {"site", "west"}}),
            PCM_SUCCESS);
  EXPECT_EQ(code({{"op", "job_move"}, {"job", "a"}, {"action", "done"}, {"text", "moved"}}),
            PCM_SUCCESS);
  st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  EXPECT_EQ(st["move"]["state"], "done");
  EXPECT_EQ(st["move"]["text"], "moved");
  EXPECT_EQ(st["last_event"], "moved");
  EXPECT_EQ(code({{"op", "job_move"}, {"job", "a"}, {"action", "go"}}), PCM_ERR_ARG);
  EXPECT_EQ(code({{"op", "job_move"}, {"job", "nope"}, {"site", "west"}}), PCM_ERR_REFUSED);
}

// A move stops its run through PCM (issue 38 item 8): pcmctl run's "stop" asks the job for a last
// version and its end, as a preemption does; a rank's own stop meanwhile is that stop (not refused
// as during a restart reshape); a move that fails withdraws the stop and the job goes on, and the
// job stopped for a move is relaunched under its name.
TEST_F(SiteHostsTest, AMoveStopsItsRunThroughPcmAndAFailedMoveWithdrawsItsStop) {
  register_job("a", 2);  // on localhost, site default
  auto move = [&](const std::string& action) {
    return code({{"op", "job_move"}, {"job", "a"}, {"action", action}, {"site", "west"}});
  };
  ASSERT_EQ(move("supervise"), PCM_SUCCESS);
  ASSERT_EQ(move("ask"), PCM_SUCCESS);
  EXPECT_EQ(move("stop"), PCM_ERR_REFUSED);  // not taken over by pcmctl run yet
  EXPECT_NE(last_error_.find("no move under way"), std::string::npos) << last_error_;
  ASSERT_EQ(move("begin"), PCM_SUCCESS);
  ASSERT_EQ(move("stop"), PCM_SUCCESS);
  auto p = client_->request({{"op", "poll"}, {"job", "a"}, {"iteration", 5}}).header;
  EXPECT_TRUE(p.value("stop", false)) << p.dump();
  EXPECT_TRUE(p.value("checkpoint_at_once", false)) << p.dump();
  // SIGTERM to a rank meanwhile: its stop is the move's.
  EXPECT_EQ(code({{"op", "checkpoint_request"},
                  {"job", "a"},
                  {"why", "SIGTERM received by rank 1"},
                  {"stop", true}}),
            PCM_SUCCESS);
  auto st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  EXPECT_EQ(st["checkpoint_wanted"]["why"], "move to site west") << st.dump();
  ASSERT_EQ(code({{"op", "job_move"},
                  {"job", "a"},
                  {"action", "failed"},
                  {"site", "west"},
                  {"text", "the run did not stop in time"}}),
            PCM_SUCCESS);
  p = client_->request({{"op", "poll"}, {"job", "a"}, {"iteration", 6}}).header;
  EXPECT_FALSE(p.value("stop", false)) << p.dump();
  st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  EXPECT_EQ(st["state"], "running");
  bool withdrawn = false;
  for (const auto& e : st["events"])
    withdrawn =
        withdrawn || e.get<std::string>().find("withdrawn: the move failed") != std::string::npos;
  EXPECT_TRUE(withdrawn) << st.dump();

  // Again, and this time the run stops: state stopped, the relaunch takes the name.
  ASSERT_EQ(move("ask"), PCM_SUCCESS);
  ASSERT_EQ(move("begin"), PCM_SUCCESS);
  ASSERT_EQ(move("stop"), PCM_SUCCESS);
  ASSERT_EQ(code({{"op", "finished"},
                  {"job", "a"},
                  {"iteration", 7},
                  {"stopped", "move to site west"},
                  {"stopped_version", 7}}),
            PCM_SUCCESS);
  st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  EXPECT_EQ(st["state"], "stopped");
  EXPECT_TRUE(st["checkpoint_wanted"].is_null()) << st.dump();
  register_job("a", 2);
  st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  EXPECT_EQ(st["state"], "running");
  EXPECT_EQ(st["move"]["state"], "under way");
}

// The policy when a drain leaves a job of a closed site nowhere to go in its own sites: a job
// under pcmctl run is asked to move whole to the site with the most free slots (pcmctl run then
// carries it out); one not supervised stays, its drain stalled.
TEST_F(ClosedSitesTest, ADrainWithNowhereToGoMovesASupervisedJobToAnotherSite) {
  register_job("a", 2);  // on localhost, site default
  ASSERT_EQ(code({{"op", "job_move"}, {"job", "a"}, {"action", "supervise"}}), PCM_SUCCESS);
  register_job("u", 2);
  ASSERT_EQ(code({{"op", "host_drain"}, {"host", "localhost"}}), PCM_SUCCESS);
  auto st = client_->request({{"op", "status"}, {"job", "a"}}).header["jobs"][0];
  ASSERT_TRUE(st["move"].is_object()) << st.dump();
  EXPECT_EQ(st["move"]["site"], "east");  // 3 free slots against west's 2
  EXPECT_EQ(st["move"]["state"], "asked");
  EXPECT_NE(st["last_event"].get<std::string>().find("move to site east asked by the drain of "
                                                     "localhost"),
            std::string::npos)
      << st["last_event"];
  auto su = client_->request({{"op", "status"}, {"job", "u"}}).header["jobs"][0];
  EXPECT_TRUE(su["move"].is_null());
  EXPECT_NE(su["last_event"].get<std::string>().find("drain of localhost stopped"),
            std::string::npos)
      << su["last_event"];
}
