// test_server.cpp — pcmd's server in-process on a loopback port: validation, refusals, malformed
// messages (each gets an error reply and the next request is still served), job table, store.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "auth.h"
#include "client.h"
#include "error.h"
#include "pcm_types.h"
#include "probe.h"
#include "server.h"
#include "test_util.h"
#include "watch.h"

namespace fs = std::filesystem;
using pcm::detail::Client;
using pcm::proto::json;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start(dir_); }
  void start(const fs::path& data_dir) {
    pcm::detail::ServerOptions o;
    o.bind = "tcp://127.0.0.1:*";
    o.data_dir = data_dir.string();
    o.secret = "right-secret";
    o.hosts = {"localhost:4", "nodeb:2"};
    o.probe_port = 0;  // made-up host names: no lookups (they could leave the machine)
    stop_ = false;
    o.transfer_timeout = transfer_timeout_;
    o.agent_timeout = std::chrono::milliseconds(1500);
    o.policy_auto = policy_auto_;
    o.policy.min_interval_s = 0;
    server_ = std::make_unique<pcm::detail::Server>(ctx_, o);
    thread_ = std::thread([this] { server_->run(stop_); });
    client_ = std::make_unique<Client>(ctx_, server_->endpoint(), "right-secret");
  }
  void stop() {
    stop_ = true;
    thread_.join();
    client_.reset();
    server_.reset();
  }
  void TearDown() override { stop(); }
  // The job table's file in data_dir, parsed.
  json table(const fs::path& data_dir) {
    std::ifstream in(data_dir / "pcmd-jobs.json");
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }
  static const json* table_job(const json& t, const std::string& name) {
    for (const auto& j : t.at("jobs"))
      if (j.at("name") == name) return &j;
    return nullptr;
  }
  // The error code of a request, PCM_SUCCESS if it succeeded.
  int code(const json& req, Client* c = nullptr) {
    try {
      (c ? c : client_.get())->request(req, nullptr, 0, 5000);
    } catch (const pcm::Error& e) {
      last_error_ = e.what();
      return e.code();
    }
    return PCM_SUCCESS;
  }
  std::string register_job(const std::string& name, int size) {
    json req{{"op", "register"}, {"size", size}, {"hosts", json::array()}};
    for (int i = 0; i < size; ++i) req["hosts"].push_back("localhost");
    if (!name.empty()) req["job"] = name;
    return client_->request(req).header.at("job");
  }
  // Reports command id of job done, the new world on hosts (as rank 0 does).
  void reconfigured(const std::string& job, const json& id, const std::vector<std::string>& hosts) {
    client_->request({{"op", "reconfigured"},
                      {"job", job},
                      {"command", id},
                      {"success", true},
                      {"size", hosts.size()},
                      {"hosts", hosts}});
  }
  // Sends raw frames from a DEALER that mimics REQ, returns the reply header.
  json raw(const std::vector<std::string>& frames) {
    zmq::socket_t s(ctx_, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, 5000);
    s.connect(server_->endpoint());
    s.send(zmq::message_t(), zmq::send_flags::sndmore);
    for (std::size_t i = 0; i < frames.size(); ++i)
      s.send(zmq::buffer(frames[i]),
             i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    zmq::message_t delim, head;
    if (!s.recv(delim) || !s.recv(head)) return json{{"timeout", true}};
    return pcm::proto::decode(head.data(), head.size());
  }

  std::chrono::milliseconds transfer_timeout_{60000};
  bool policy_auto_ = false;
  zmq::context_t ctx_{1};
  TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<pcm::detail::Server> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::unique_ptr<Client> client_;
  std::string last_error_;
};

TEST_F(ServerTest, BindsLoopbackOnAFreePort) {
  EXPECT_EQ(server_->endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  EXPECT_EQ(code({{"op", "ping"}}), PCM_SUCCESS);
}

TEST_F(ServerTest, MalformedMessagesGetErrorRepliesAndServingGoesOn) {
  std::vector<std::vector<std::string>> bad = {
      {"\xc1garbage"},                             // not MessagePack
      {pcm::proto::encode(json::array({1, 2}))},   // not a map
      {pcm::proto::encode(json{{"op", "ping"}})},  // no version, no secret
      {pcm::proto::encode(json{{"v", 1}, {"op", 5}, {"secret", "right-secret"}})},
      {pcm::proto::encode(json{{"v", 1}, {"op", "nosuchop"}, {"secret", "right-secret"}})},
      {pcm::proto::encode(json{{"v", 99}, {"op", "ping"}, {"secret", "right-secret"}})},
      {pcm::proto::encode(json{
          {"v", 1}, {"op", "store"}, {"secret", "right-secret"}, {"job", "x"}, {"rank", "zero"}})},
      {"a", "b", "c"},  // too many frames
  };
  for (const auto& frames : bad) {
    json r = raw(frames);
    EXPECT_FALSE(r.value("timeout", false));
    EXPECT_FALSE(r.value("ok", true)) << r.dump();
    EXPECT_LT(r.value("code", 0), 0) << r.dump();
    EXPECT_FALSE(r.value("error", "").empty());
    EXPECT_EQ(code({{"op", "ping"}}), PCM_SUCCESS);  // still serving
  }
}

TEST_F(ServerTest, WrongSecretIsRefused) {
  Client wrong(ctx_, server_->endpoint(), "wrong-secret");
  EXPECT_EQ(code({{"op", "status"}}, &wrong), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("secret"), std::string::npos);
  Client empty(ctx_, server_->endpoint(), "");
  EXPECT_EQ(code({{"op", "status"}}, &empty), PCM_ERR_REFUSED);
}

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

TEST_F(ServerTest, StoreAndLoadWithSizeChecks) {
  register_job("s", 1);
  std::vector<double> v(10, 3.5);
  json st{{"op", "store"}, {"job", "s"},         {"rank", 0},
          {"key", "grid"}, {"type", PCM_DOUBLE}, {"count", 10}};
  client_->request(st, v.data(), v.size() * sizeof(double));
  try {
    client_->request(st, v.data(), 9 * sizeof(double));  // data shorter than announced
    ADD_FAILURE() << "short store accepted";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_ARG);
  }
  auto r = client_->request({{"op", "load"}, {"job", "s"}, {"rank", 0}, {"key", "grid"}});
  EXPECT_EQ(r.header.at("count"), 10);
  ASSERT_EQ(r.data.size(), 10 * sizeof(double));
  // A ZeroMQ frame's bytes need not be aligned for a double (UBSan): copy them out, as libpcm does.
  double last;
  std::memcpy(&last, static_cast<const char*>(r.data.data()) + 9 * sizeof(double), sizeof last);
  EXPECT_EQ(last, 3.5);
  EXPECT_EQ(code({{"op", "load"}, {"job", "s"}, {"rank", 0}, {"key", "nokey"}}), PCM_ERR_NOT_FOUND);
  EXPECT_EQ(code({{"op", "load"}, {"job", "nojob"}, {"rank", 0}, {"key", "grid"}}),
            PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "store"},
                  {"job", "s"},
                  {"rank", 0},
                  {"key", "../../x"},
                  {"type", PCM_INT},
                  {"count", 0}}),
            PCM_ERR_ARG);
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

// ---- the host inventory, placement and drains ----------------------------------------------

namespace {
json host_row(const json& list, const std::string& name) {
  for (const auto& h : list.at("hosts"))
    if (h.at("host") == name) return h;
  return nullptr;
}
}  // namespace

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

TEST(Probe, TimesAnAcceptedAndARefusedConnection) {
  // A listener on loopback answers with SYN-ACK; a closed port with RST: both are round trips.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int open_port = ntohs(a.sin_port);
  auto t = pcm::detail::tcp_round_trip_ms("127.0.0.1", open_port, 1000);
  ASSERT_TRUE(t.has_value());
  EXPECT_GE(*t, 0.0);
  EXPECT_LT(*t, 1000.0);
  ::close(fd);  // now nothing listens there: refused
  t = pcm::detail::tcp_round_trip_ms("127.0.0.1", open_port, 1000);
  ASSERT_TRUE(t.has_value());
  // The prober measures a watched host soon after it is watched.
  pcm::detail::RttProber prober(open_port, std::chrono::milliseconds(60000), 500);
  prober.watch("localhost");
  std::optional<double> got;
  for (int i = 0; i < 100 && !got; ++i) {
    got = prober.rtt_ms("localhost");
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(got.has_value());
  prober.forget("localhost");
  EXPECT_FALSE(prober.rtt_ms("localhost").has_value());
}

// ---- the watch port --------------------------------------------------------------------------

namespace {

// A TCP connection to tcp://HOST:PORT; -1 on failure.
int connect_to(const std::string& endpoint) {
  auto rest = endpoint.substr(6);
  auto colon = rest.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(rest.substr(colon + 1))));
  ::inet_pton(AF_INET, rest.substr(0, colon).c_str(), &a.sin_addr);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void say(int fd, const std::string& text) {
  ASSERT_EQ(::send(fd, text.data(), text.size(), MSG_NOSIGNAL), static_cast<ssize_t>(text.size()));
}

// The nonce of the challenge pcmd's watch port sends on connecting ("" if none within 3 s).
std::string challenge_nonce(int fd) {
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string line;
  char c;
  while (line.size() < 256 && ::recv(fd, &c, 1, 0) == 1 && c != '\n') line += c;
  const std::string prefix = "PCM-WATCH 2 ";
  return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : "";
}

// Answers the challenge on fd with a hello for FIELDS ("JOB PID HOST INCARNATION") signed with
// secret, as libpcm does.
void greet(int fd, const std::string& secret, const std::string& fields) {
  const std::string nonce = challenge_nonce(fd);
  ASSERT_EQ(nonce.size(), 32u);
  say(fd, "PCM-WATCH 2 " + pcm::detail::watch_proof(secret, nonce, fields) + " " + fields + "\n");
}

// Events until n have come or 3 s have passed.
std::vector<pcm::detail::WatchEvent> events(pcm::detail::Watcher& w, std::size_t n) {
  std::vector<pcm::detail::WatchEvent> all;
  for (int i = 0; i < 300 && all.size() < n; ++i) {
    auto e = w.take_events();
    all.insert(all.end(), e.begin(), e.end());
    if (all.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return all;
}

// Whether the peer closed fd within 3 s (FIN; or RST when it closed with our bytes unread).
bool closed_by_peer(int fd) {
  timeval tv{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

}  // namespace

TEST(Watcher, HelloByeAndLoss) {
  using Kind = pcm::detail::WatchEvent::Kind;
  pcm::detail::Watcher w("127.0.0.1", "s3cret");
  ASSERT_EQ(w.endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << w.endpoint();
  int a = connect_to(w.endpoint()), b = connect_to(w.endpoint());
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  greet(a, "s3cret", "job-a 4242 node1 1");
  greet(b, "s3cret", "job-a 4343 node2 1");
  auto e = events(w, 2);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].kind, Kind::kHello);
  EXPECT_EQ(e[0].job, "job-a");
  // a leaves normally; b is lost.
  say(a, "bye\n");
  ::close(a);
  ::close(b);
  e = events(w, 2);
  ASSERT_EQ(e.size(), 2u);
  std::map<long, Kind> by_pid{{e[0].pid, e[0].kind}, {e[1].pid, e[1].kind}};
  EXPECT_EQ(by_pid[4242], Kind::kBye);
  EXPECT_EQ(by_pid[4343], Kind::kLost);
  for (const auto& x : e)
    if (x.pid == 4343) EXPECT_EQ(x.host, "node2");
}

TEST(Watcher, RefusesWrongSecretsMalformedAndOversizedHellos) {
  using pcm::detail::watch_proof;
  pcm::detail::Watcher w("127.0.0.1", "s3cret");
  // Each case: the hello for this connection's nonce.
  std::vector<std::function<std::string(const std::string&)>> hellos{
      // The old hello that carried the secret in clear.
      [](const std::string&) { return std::string("PCM-WATCH 1 s3cret job-a 1 node1 1\n"); },
      // The secret itself where the proof goes.
      [](const std::string&) { return std::string("PCM-WATCH 2 s3cret job-a 1 node1 1\n"); },
      // Signed with another secret.
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("wrong", n, "job-a 1 node1 1") + " job-a 1 node1 1\n";
      },
      // A proof recorded on another connection (another nonce): no replay.
      [](const std::string&) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", std::string(32, '0'), "job-a 1 node1 1") +
               " job-a 1 node1 1\n";
      },
      // Signed fields other than those sent.
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", n, "job-a 1 node1 1") + " job-b 1 node1 1\n";
      },
      // Correctly signed but malformed.
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", n, "../x 1 node1 1") + " ../x 1 node1 1\n";
      },
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", n, "job-a -1 node1 1") +
               " job-a -1 node1 1\n";
      },
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", n, "job-a 1 bad/host 1") +
               " job-a 1 bad/host 1\n";
      },
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", n, "job-a 1 node1") + " job-a 1 node1\n";
      },
      [](const std::string& n) {
        return "PCM-WATCH 2 " + watch_proof("s3cret", n, "job-a 1 node1 1") +
               " job-a 1 node1 1 extra\n";
      },
      [](const std::string&) { return std::string("hello\n"); },
      [](const std::string&) { return std::string(4000, 'x'); }};
  std::set<std::string> nonces;
  for (std::size_t i = 0; i < hellos.size(); ++i) {
    int fd = connect_to(w.endpoint());
    ASSERT_GE(fd, 0);
    const std::string nonce = challenge_nonce(fd);
    ASSERT_EQ(nonce.size(), 32u);
    nonces.insert(nonce);
    say(fd, hellos[i](nonce));
    EXPECT_TRUE(closed_by_peer(fd)) << "case " << i;
    ::close(fd);
  }
  EXPECT_EQ(nonces.size(), hellos.size()) << "a nonce came twice";
  EXPECT_TRUE(w.take_events().empty());
  // Still serving.
  int fd = connect_to(w.endpoint());
  greet(fd, "s3cret", "job-a 7 node1 1");
  EXPECT_EQ(events(w, 1).size(), 1u);
  ::close(fd);
}

TEST_F(ServerTest, ALostProcessFailsItsJobNamingTheHost) {
  auto w = client_->request(
      {{"op", "register"}, {"job", "w"}, {"size", 2}, {"hosts", {"localhost", "nodeb"}}});
  auto ok =
      client_->request({{"op", "register"}, {"job", "ok"}, {"size", 1}, {"hosts", {"localhost"}}});
  const std::string wi = std::to_string(w.header.at("incarnation").get<long long>());
  const std::string oki = std::to_string(ok.header.at("incarnation").get<long long>());
  EXPECT_NE(wi, oki);
  int a = connect_to(server_->watch_endpoint()), b = connect_to(server_->watch_endpoint());
  int c = connect_to(server_->watch_endpoint());
  greet(a, "right-secret", "w 100 localhost " + wi);
  greet(b, "right-secret", "w 101 nodeb " + wi);
  greet(c, "right-secret", "ok 102 localhost " + oki);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::close(b);  // lost without bye
  json st;
  for (int i = 0; i < 50; ++i) {
    st = client_->request({{"op", "status"}, {"job", "w"}}).header["jobs"][0];
    if (st["state"] == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(st["state"], "failed");
  const std::string why = st["last_event"];
  EXPECT_NE(why.find("process 101 on host nodeb"), std::string::npos) << why;
  // The job's other process goes down after it (MPI tearing the job down): listed after it.
  ::close(a);
  for (int i = 0; i < 50 && st["lost"].size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    st = client_->request({{"op", "status"}, {"job", "w"}}).header["jobs"][0];
  }
  EXPECT_EQ(st["lost"], json({"101 on nodeb", "100 on localhost"}));
  EXPECT_NE(st["last_event"].get<std::string>().find("nodeb"), std::string::npos);
  // The other job is untouched, and finishes normally after its process says bye.
  EXPECT_EQ(client_->request({{"op", "status"}, {"job", "ok"}}).header["jobs"][0]["state"],
            "running");
  client_->request({{"op", "finished"}, {"job", "ok"}});
  say(c, "bye\n");
  ::close(c);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(client_->request({{"op", "status"}, {"job", "ok"}}).header["jobs"][0]["state"],
            "finished");
}

TEST_F(ServerTest, OnlyAJobsOwnProcessesCanFailIt) {
  // Processes of another run of the same job name (an earlier incarnation, or one that greeted
  // before this run registered) are not this run's: their losses change nothing.
  int early = connect_to(server_->watch_endpoint());
  greet(early, "right-secret", "later 300 localhost 1");
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  auto r = client_->request(
      {{"op", "register"}, {"job", "later"}, {"size", 1}, {"hosts", {"localhost"}}});
  const long long inc = r.header.at("incarnation").get<long long>();
  int other = connect_to(server_->watch_endpoint());
  greet(other, "right-secret", "later 301 localhost " + std::to_string(inc + 1000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  ::close(early);
  ::close(other);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(client_->request({{"op", "status"}, {"job", "later"}}).header["jobs"][0]["state"],
            "running");
}

TEST_F(ServerTest, ADrainedHostLeavesWhenItsLastJobIsLost) {
  auto r = client_->request(
      {{"op", "register"}, {"job", "x"}, {"size", 2}, {"hosts", {"localhost", "nodeb"}}});
  const std::string inc = std::to_string(r.header.at("incarnation").get<long long>());
  int fd = connect_to(server_->watch_endpoint());
  greet(fd, "right-secret", "x 500 nodeb " + inc);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  ASSERT_EQ(code({{"op", "host_drain"}, {"host", "nodeb"}}), PCM_SUCCESS);
  ::close(fd);  // the job dies before its drain step runs
  json row = json::object();
  for (int i = 0; i < 40 && !row.is_null(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    row = host_row(client_->request({{"op", "host_list"}}).header, "nodeb");
  }
  EXPECT_TRUE(row.is_null()) << row.dump();
  EXPECT_EQ(client_->request({{"op", "status"}, {"job", "x"}}).header["jobs"][0]["state"],
            "failed");
}

// While one job's disk work is under way (here held on the data thread until released), pcmd
// answers everything else: status, another job's registration and polls, a ping. Nothing is
// timed: the store's reply must simply still be outstanding while the others come back.
TEST_F(ServerTest, DiskWorkNeverHoldsUpTheRequestLoop) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> held{false};
  server_->run_on_data_thread([&] {
    held = true;
    released.wait();
  });
  while (!held) std::this_thread::yield();
  register_job("big", 1);
  std::atomic<bool> stored{false};
  std::thread storer([&] {
    Client c(ctx_, server_->endpoint(), "right-secret");
    std::vector<double> x(1 << 16, 1.5);
    c.request({{"op", "store"},
               {"job", "big"},
               {"rank", 0},
               {"key", "x"},
               {"type", PCM_DOUBLE},
               {"count", x.size()}},
              x.data(), x.size() * sizeof(double), 30000);
    stored = true;
  });
  Client other(ctx_, server_->endpoint(), "right-secret");
  auto r =
      other.request({{"op", "register"}, {"job", "small"}, {"size", 1}, {"hosts", {"localhost"}}},
                    nullptr, 0, 5000);
  EXPECT_EQ(r.header["job"], "small");
  EXPECT_TRUE(other.request({{"op", "poll"}, {"job", "small"}, {"iteration", 3}}, nullptr, 0, 5000)
                  .header.value("ok", false));
  auto st = other.request({{"op", "status"}}, nullptr, 0, 5000).header;
  EXPECT_EQ(st["jobs"].size(), 2u);
  EXPECT_FALSE(stored) << "the store was answered while the data thread was held";
  release.set_value();
  storer.join();
  EXPECT_TRUE(stored);
  // And the store took effect, in order, before the load that follows it.
  auto l =
      other.request({{"op", "load"}, {"job", "big"}, {"rank", 0}, {"key", "x"}}, nullptr, 0, 5000);
  EXPECT_EQ(l.data.size(), (1u << 16) * sizeof(double));
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

// A commit sent again after a pcmd restart, whose version was made: done, not refused.
TEST_F(ServerTest, ACommitSentAgainIsDoneOnce) {
  register_job("c", 1);
  std::vector<double> x(100, 2.5);
  client_->request({{"op", "store"},
                    {"job", "c"},
                    {"rank", 0},
                    {"key", "x"},
                    {"type", PCM_DOUBLE},
                    {"count", x.size()}},
                   x.data(), x.size() * sizeof(double));
  json commit{{"op", "commit"}, {"job", "c"}, {"iteration", 5}, {"size", 1}};
  ASSERT_EQ(code(commit), PCM_SUCCESS);
  EXPECT_NE(code(commit), PCM_SUCCESS);  // a second commit of an iteration is refused
  commit["retry"] = true;
  EXPECT_EQ(code(commit), PCM_SUCCESS) << last_error_;
  commit["iteration"] = 6;  // a retry of a commit that never happened makes it
  EXPECT_EQ(code(commit), PCM_SUCCESS) << last_error_;
  auto v = client_->request({{"op", "checkpoints"}, {"job", "c"}}).header.at("versions");
  EXPECT_EQ(v.size(), 2u) << v.dump();
}

// A running job's version being made survives a pcmd restart (its ranks may be writing shards);
// a finished job's is swept.
TEST_F(ServerTest, ARunningJobsVersionInTheMakingSurvivesARestart) {
  register_job("run", 1);
  register_job("done", 1);
  auto a = client_->request({{"op", "checkpoint_begin"}, {"job", "run"}, {"iteration", 3}});
  auto b = client_->request({{"op", "checkpoint_begin"}, {"job", "done"}, {"iteration", 3}});
  ASSERT_EQ(code({{"op", "finished"}, {"job", "done"}}), PCM_SUCCESS);
  const fs::path run_dir = a.header.at("dir").get<std::string>();
  const fs::path done_dir = b.header.at("dir").get<std::string>();
  ASSERT_TRUE(fs::is_directory(run_dir));
  ASSERT_TRUE(fs::is_directory(done_dir));
  stop();
  start(dir_);
  EXPECT_TRUE(fs::is_directory(run_dir));
  EXPECT_FALSE(fs::exists(done_dir));
}

// A table that cannot be used is set aside, and pcmd starts with no job.
TEST(JobTable, ADamagedTableIsSetAside) {
  for (const std::string& bad :
       {std::string("{not json"), std::string(R"({"version": 1, "jobs": [{"name": "../x"}]})"),
        std::string(R"({"version": 99})")}) {
    TempDir d;
    std::ofstream(d.path() / "pcmd-jobs.json") << bad;
    zmq::context_t ctx(1);
    pcm::detail::ServerOptions o;
    o.data_dir = d.path().string();
    o.secret = "right-secret";
    o.probe_port = 0;
    {
      pcm::detail::Server server(ctx, o);
      std::vector<char> data;
      auto st =
          server.handle({{"v", pcm::proto::kVersion}, {"op", "status"}, {"secret", "right-secret"}},
                        nullptr, 0, data);
      EXPECT_TRUE(st.at("jobs").empty()) << bad;
    }
    EXPECT_TRUE(fs::exists(d.path() / "pcmd-jobs.json.bad")) << bad;
  }
}

// CURVE: with keys, pcmd answers only clients that hold the client key pair of its configuration;
// one without keys, or with another pair, gets no answer (the handshake is refused).
TEST(CurveServer, AdmitsOnlyTheConfiguredClientKey) {
  TempDir dir;
  zmq::context_t ctx;
  auto server_keys = pcm::detail::curve_keypair();
  auto client_keys = pcm::detail::curve_keypair();
  auto other_keys = pcm::detail::curve_keypair();
  pcm::detail::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.data_dir = dir.path().string();
  o.secret = "right-secret";
  o.probe_port = 0;
  o.curve = {server_keys.secret_key, client_keys.public_key};
  auto server = std::make_unique<pcm::detail::Server>(ctx, o);
  std::atomic<bool> stop{false};
  std::thread thread([&] { server->run(stop); });
  auto ping = [&](const pcm::detail::CurveClientKeys& keys) {
    Client c(ctx, server->endpoint(), "right-secret", keys);
    try {
      c.request({{"op", "ping"}}, nullptr, 0, 1500);
      return PCM_SUCCESS;
    } catch (const pcm::Error& e) {
      return e.code();
    }
  };
  EXPECT_EQ(ping({server_keys.public_key, client_keys.public_key, client_keys.secret_key}),
            PCM_SUCCESS);
  EXPECT_EQ(ping({}), PCM_ERR_DAEMON);  // no CURVE at all
  EXPECT_EQ(ping({server_keys.public_key, other_keys.public_key, other_keys.secret_key}),
            PCM_ERR_DAEMON);  // a key pair pcmd does not know
  // A wrong server key: the client cannot even finish the handshake.
  EXPECT_EQ(ping({other_keys.public_key, client_keys.public_key, client_keys.secret_key}),
            PCM_ERR_DAEMON);
  // Still serving the right client.
  EXPECT_EQ(ping({server_keys.public_key, client_keys.public_key, client_keys.secret_key}),
            PCM_SUCCESS);
  stop = true;
  thread.join();
  server.reset();
}

// A mistyped job name is not "no versions" (issue 13): listing, verifying or pruning the
// checkpoints of a job that neither runs nor ever checkpointed is PCM_ERR_NOT_FOUND; a running
// job without versions has an empty list.
TEST_F(ServerTest, CheckpointsOfAnUnknownJobAreNotFound) {
  const std::string job = register_job("known", 1);
  for (const char* op : {"checkpoints", "verify", "prune"}) {
    json req{{"op", op}, {"job", "knwon"}};
    if (std::string(op) == "prune") req["keep"] = 1;
    EXPECT_EQ(code(req), PCM_ERR_NOT_FOUND) << op;
    EXPECT_NE(last_error_.find("mistyped"), std::string::npos) << last_error_;
  }
  auto r = client_->request({{"op", "checkpoints"}, {"job", job}});
  EXPECT_TRUE(r.header.at("versions").empty());
}

// A store on a full disk reaches the client as PCM_ERR_NOSPACE (not PCM_ERR_INTERNAL), with the
// message, and the data stored before is still loaded. pcmd's data directory is a 16 MiB tmpfs
// mounted here (root only; SKIPPED otherwise).
TEST(ServerNoSpace, AStoreOnAFullDiskIsNoSpaceAtTheClient) {
  if (::geteuid() != 0) GTEST_SKIP() << "SKIPPED: mounting a small tmpfs needs root";
  TempDir dir;
  const fs::path mnt = dir.path() / "small";
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m,mode=0700") != 0)
    GTEST_SKIP() << "SKIPPED: cannot mount a tmpfs here: " << std::strerror(errno);
  struct Unmount {
    fs::path p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt};
  {
    zmq::context_t ctx;
    pcm::detail::ServerOptions o;
    o.bind = "tcp://127.0.0.1:*";
    o.data_dir = (mnt / "data").string();
    o.secret = "right-secret";
    o.probe_port = 0;
    auto server = std::make_unique<pcm::detail::Server>(ctx, o);
    std::atomic<bool> stop{false};
    std::thread thread([&] { server->run(stop); });
    Client c(ctx, server->endpoint(), "right-secret");
    c.request({{"op", "register"}, {"job", "full"}, {"size", 1}, {"hosts", {"localhost"}}});
    std::vector<double> small(1000, 1.5), big(3 << 20, 2.5);  // 8 KB, then 24 MiB
    json req{{"op", "store"}, {"job", "full"}, {"rank", 0}, {"key", "x"}, {"type", PCM_DOUBLE}};
    req["count"] = small.size();
    c.request(req, small.data(), small.size() * sizeof(double));
    req["count"] = big.size();
    try {
      c.request(req, big.data(), big.size() * sizeof(double), 30000);
      ADD_FAILURE() << "24 MiB stored on a 16 MiB disk";
    } catch (const pcm::Error& e) {
      EXPECT_EQ(e.code(), PCM_ERR_NOSPACE) << e.what();
      EXPECT_NE(std::string(e.what()).find("no space left"), std::string::npos) << e.what();
    }
    auto r = c.request({{"op", "load"}, {"job", "full"}, {"rank", 0}, {"key", "x"}});
    EXPECT_EQ(r.header.value("count", 0), 1000);
    ASSERT_EQ(r.data.size(), small.size() * sizeof(double));
    double last = 0;  // a frame's bytes need not be aligned for a double
    std::memcpy(&last, static_cast<const char*>(r.data.data()) + 999 * sizeof(double), sizeof last);
    EXPECT_EQ(last, 1.5);
    stop = true;
    thread.join();
  }
}

// ---- bulk data in pieces, and what arrives before authentication --------------------------

namespace {
// A store of count doubles (x[i] = i + salt) under job/rank 0/key.
json store_req(const std::string& job, const std::string& key, std::size_t count) {
  return json{{"op", "store"}, {"job", job},         {"rank", 0},
              {"key", key},    {"type", PCM_DOUBLE}, {"count", count}};
}
std::vector<double> ramp(std::size_t count, double salt) {
  std::vector<double> x(count);
  for (std::size_t i = 0; i < count; ++i) x[i] = static_cast<double>(i) + salt;
  return x;
}
}  // namespace

TEST_F(ServerTest, BulkDataTravelsInPiecesAndLoadsBackWhole) {
  register_job("bulk", 1);
  // 10 MiB and a bit: three pieces, the last one short.
  const std::size_t count = (10u << 20) / sizeof(double) + 3;
  const auto x = ramp(count, 0.25);
  client_->request(store_req("bulk", "x", count), x.data(), count * sizeof(double));
  auto r = client_->request({{"op", "load"}, {"job", "bulk"}, {"rank", 0}, {"key", "x"}});
  ASSERT_EQ(r.data.size(), count * sizeof(double));
  EXPECT_EQ(std::memcmp(r.data.data(), x.data(), r.data.size()), 0);
  EXPECT_EQ(client_->request({{"op", "ping"}}).header.at("transfers"), 0);
  // A store whose pieces carry fewer bytes than its count says is refused at the end, as a whole
  // one would be, and the data stays as it was.
  try {
    client_->request(store_req("bulk", "x", count + 1), x.data(), count * sizeof(double));
    ADD_FAILURE() << "short store accepted";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_ARG);
  }
  r = client_->request({{"op", "load"}, {"job", "bulk"}, {"rank", 0}, {"key", "x"}});
  EXPECT_EQ(r.header.at("count"), count);
}

TEST_F(ServerTest, AMissingPieceFailsTheTransferAndChangesNothing) {
  register_job("gap", 1);
  const std::size_t piece = pcm::proto::kMaxPiece, count = 3 * piece / sizeof(double);
  const auto old = ramp(16, 7.0);
  client_->request(store_req("gap", "x", 16), old.data(), 16 * sizeof(double));
  const auto x = ramp(count, 1.0);
  const char* bytes = reinterpret_cast<const char*>(x.data());
  json h = store_req("gap", "x", count);
  h["xfer"] = 42;
  h["total"] = 3 * piece;
  h["offset"] = 0;
  EXPECT_EQ(client_->request(h, bytes, piece).header.at("received"), piece);
  h["offset"] = 2 * piece;  // the piece at `piece` went missing
  try {
    client_->request(h, bytes + 2 * piece, piece);
    ADD_FAILURE() << "a piece out of order was taken";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_ARG);
    EXPECT_NE(std::string(e.what()).find("dropped"), std::string::npos) << e.what();
  }
  h["offset"] = piece;  // too late: the transfer is gone
  try {
    client_->request(h, bytes + piece, piece);
    ADD_FAILURE() << "a dropped transfer went on";
  } catch (const pcm::Error& e) {
    EXPECT_EQ(e.code(), PCM_ERR_REFUSED);
  }
  EXPECT_EQ(client_->request({{"op", "ping"}}).header.at("transfers"), 0);
  auto r = client_->request({{"op", "load"}, {"job", "gap"}, {"rank", 0}, {"key", "x"}});
  ASSERT_EQ(r.header.at("count"), 16);
  EXPECT_EQ(std::memcmp(r.data.data(), old.data(), 16 * sizeof(double)), 0);
  // Pieces only for data-carrying requests of a registered job.
  h["offset"] = 0;
  h["op"] = "status";
  EXPECT_EQ(code(h), PCM_ERR_ARG);
  h["op"] = "store";
  h["job"] = "nojob";
  EXPECT_EQ(code(h), PCM_ERR_REFUSED);
}

class ShortTransferTimeout : public ServerTest {
 protected:
  void SetUp() override {
    transfer_timeout_ = std::chrono::milliseconds(200);
    ServerTest::SetUp();
  }
};

TEST_F(ShortTransferTimeout, AnAbandonedTransferIsFreed) {
  register_job("quiet", 1);
  std::vector<char> piece(pcm::proto::kMaxPiece, 'p');
  json h = store_req("quiet", "x", 2 * piece.size() / sizeof(double));
  h["xfer"] = 7;
  h["total"] = 2 * piece.size();
  h["offset"] = 0;
  client_->request(h, piece.data(), piece.size());
  EXPECT_EQ(client_->request({{"op", "ping"}}).header.at("transfers"), 1);
  // pcmd looks at least every 200 ms: wait until it has dropped the transfer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (client_->request({{"op", "ping"}}).header.at("transfers") != 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(client_->request({{"op", "ping"}}).header.at("transfers"), 0);
  h["offset"] = piece.size();
  EXPECT_EQ(code(h), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("not under way"), std::string::npos) << last_error_;
}

TEST_F(ServerTest, APeerSendingAFrameLargerThanAnyRequestIsDroppedUnread) {
  // Watch the sender's connection: pcmd must close it on seeing the frame's declared size,
  // before reading it (and before any secret), not take it in and answer.
  zmq::socket_t s(ctx_, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  ASSERT_EQ(zmq_socket_monitor(s.handle(), "inproc://oversize-monitor", ZMQ_EVENT_DISCONNECTED), 0);
  zmq::socket_t events(ctx_, zmq::socket_type::pair);
  events.set(zmq::sockopt::rcvtimeo, 20000);
  events.connect("inproc://oversize-monitor");
  s.connect(server_->endpoint());
  const std::string ping = pcm::proto::encode(json{{"v", 1}, {"op", "ping"}, {"secret", "x"}});
  std::vector<char> big(pcm::proto::kMaxFrame + 1, 'b');
  s.send(zmq::message_t(), zmq::send_flags::sndmore);
  s.send(zmq::buffer(ping), zmq::send_flags::sndmore);
  s.send(zmq::buffer(big), zmq::send_flags::none);
  zmq::message_t event, address;
  ASSERT_TRUE(events.recv(event)) << "pcmd kept the connection of a peer sending a large frame";
  ASSERT_TRUE(events.recv(address));
  std::uint16_t id;
  std::memcpy(&id, event.data(), sizeof id);
  EXPECT_EQ(id, ZMQ_EVENT_DISCONNECTED);
  EXPECT_EQ(code({{"op", "ping"}}), PCM_SUCCESS);  // everyone else is still served
  zmq_socket_monitor(s.handle(), nullptr, 0);
}

// Log lines of refused requests: escaped (a newline in a request cannot forge a line) and at
// most 10 a second, the rest counted in one line. pcmd's stderr goes to a file meanwhile.
TEST_F(ServerTest, RefusalsAreLoggedEscapedAndRateLimited) {
  TempDir out;
  const fs::path file = out.path() / "stderr";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ::dup2(fd, 2);
  ::close(fd);
  auto read_log = [&] {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const auto t0 = std::chrono::steady_clock::now();
  json forged = raw(
      {pcm::proto::encode(json{{"v", 1}, {"op", "x\n[pcmd] [info] FORGED"}, {"secret", "no"}})});
  EXPECT_EQ(forged.value("code", 0), PCM_ERR_REFUSED);
  Client wrong(ctx_, server_->endpoint(), "wrong-secret");
  const int kRequests = 500;
  for (int i = 0; i < kRequests; ++i) code({{"op", "status"}}, &wrong);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int refused = 0, suppressed_lines = 0;
  long long suppressed = 0;
  auto count = [&](const std::string& log) {
    refused = suppressed_lines = 0;
    suppressed = 0;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("wrong secret") != std::string::npos) ++refused;
      if (auto at = line.find("more such lines suppressed"); at != std::string::npos) {
        ++suppressed_lines;
        suppressed += std::stoll(line.substr(line.rfind("] ", at) + 2));
      }
    }
  };
  // What was left out is counted once its second is over, even with no new refusal.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    count(read_log());
  } while (refused + suppressed < kRequests + 1 && std::chrono::steady_clock::now() < deadline);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  const std::string log = read_log();
  count(log);
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.compare(0, 1, "["), 0) << "not a line of pcmd's: " << line;
    if (line.find("FORGED") != std::string::npos)
      EXPECT_NE(line.find("x\\n[pcmd] [info] FORGED"), std::string::npos) << line;
  }
  EXPECT_NE(log.find("x\\n[pcmd] [info] FORGED"), std::string::npos) << log;
  EXPECT_LE(refused, 10 * (static_cast<int>(seconds) + 2)) << log;
  EXPECT_GE(suppressed_lines, 1);
  EXPECT_EQ(refused + suppressed, kRequests + 1);
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
