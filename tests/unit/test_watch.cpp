// test_watch.cpp — pcmd's watch port (watch.h): its protocol with raw sockets, and jobs failed by
// lost processes.
#include "server_fixture.h"

TEST(Watcher, HelloByeAndLoss) {
  using Kind = pcm::daemon::WatchEvent::Kind;
  pcm::daemon::Watcher w("127.0.0.1", "s3cret");
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

// Many processes at once (the rank emulator's storm, small): every hello counted, none refused;
// the hello common/auth.h builds for libpcm and the emulator is the one pcmd accepts.
TEST(Watcher, ManyConnectionsAtOnce) {
  pcm::daemon::Watcher w("127.0.0.1", "s3cret");
  constexpr int kN = 400;
  std::vector<int> fds;
  for (int i = 0; i < kN; ++i) {
    fds.push_back(connect_to(w.endpoint()));
    ASSERT_GE(fds.back(), 0);
  }
  for (int i = 0; i < kN; ++i) {
    const std::string line =
        "PCM-WATCH 2 " + challenge_nonce(fds[static_cast<std::size_t>(i)]) + "\n";
    const std::string nonce = pcm::common::watch_nonce(line);
    ASSERT_EQ(nonce.size(), 32u);
    say(fds[static_cast<std::size_t>(i)],
        pcm::common::watch_hello("s3cret", nonce, "job-a", 1000 + i, "node1", 1));
  }
  EXPECT_EQ(events(w, kN).size(), static_cast<std::size_t>(kN));
  EXPECT_EQ(w.refused(), 0u);
  EXPECT_EQ(w.connections(), static_cast<std::size_t>(kN));
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(events(w, kN).size(), static_cast<std::size_t>(kN));  // every one lost
  EXPECT_EQ(pcm::common::watch_nonce("PCM-WATCH 1 abc\n"), "");
  EXPECT_EQ(pcm::common::watch_nonce("PCM-WATCH 2 abc"), "");  // no newline yet
}

TEST(Watcher, RefusesWrongSecretsMalformedAndOversizedHellos) {
  using pcm::common::watch_proof;
  pcm::daemon::Watcher w("127.0.0.1", "s3cret");
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
