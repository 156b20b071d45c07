// test_data_ops.cpp — pcmd's data requests in-process: store and load, disk work off the request
// loop, commits sent again, versions in the making across restarts, unknown jobs, a full disk.
#include "server_fixture.h"
#include "shard.h"

using pcm::common::ShardHeader;
using pcm::common::ShardItem;
using pcm::common::ShardRecord;
using pcm::common::write_shard;

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

// Background checkpoints: each rank reports its shard (shard_done); the version is committed when
// the last one has, also by a pcmd started again in between (it takes up the reports kept beside
// the shards); reports that do not fit are refused; a rank's reported failure makes no version.
TEST_F(ServerTest, ShardReportsMakeAVersionAcrossARestart) {
  register_job("sd", 2);
  std::vector<double> x(1000, 1.25);
  auto report = [&](int iteration, int rank, int size, const ShardRecord* rec,
                    const char* error = nullptr) {
    json r{{"op", "shard_done"},
           {"job", "sd"},
           {"iteration", iteration},
           {"rank", rank},
           {"size", size}};
    if (error) r["error"] = error;
    const std::string bytes = rec ? pcm::proto::encode(rec->to_json()) : std::string();
    try {
      client_->request(r, bytes.data(), bytes.size());
      return PCM_SUCCESS;
    } catch (const pcm::Error& e) {
      last_error_ = e.what();
      return e.code();
    }
  };
  auto write = [&](const std::string& dir, int iteration, int rank) {
    const ShardItem item{"x", PCM_DOUBLE, x.size(), {{x.data(), x.size() * sizeof(double)}}};
    return write_shard(dir, ShardHeader{"sd", iteration, rank, 2}, {item});
  };
  auto versions = [&] {
    std::set<std::int64_t> out;
    const json all = client_->request({{"op", "checkpoints"}, {"job", "sd"}}).header.at("versions");
    for (const auto& v : all)
      if (v.at("valid").get<bool>()) out.insert(v.at("iteration").get<std::int64_t>());
    return out;
  };
  const std::string dir =
      client_->request({{"op", "checkpoint_begin"}, {"job", "sd"}, {"iteration", 4}})
          .header.at("dir")
          .get<std::string>();
  const ShardRecord r0 = write(dir, 4, 0), r1 = write(dir, 4, 1);
  EXPECT_EQ(report(4, 0, 3, &r0), PCM_ERR_REFUSED) << "a version of 3 for a job of 2";
  EXPECT_EQ(report(4, 2, 2, &r0), PCM_ERR_ARG) << "rank 2 of 2";
  EXPECT_EQ(report(4, 1, 2, &r0), PCM_ERR_ARG) << "rank 1 sending rank 0's record";
  ASSERT_EQ(report(4, 0, 2, &r0), PCM_SUCCESS) << last_error_;
  EXPECT_TRUE(versions().empty());
  EXPECT_TRUE(fs::exists(fs::path(dir) / "records.log")) << "rank 0's report kept for a restart";
  stop();
  start(dir_);
  ASSERT_EQ(report(4, 1, 2, &r1), PCM_SUCCESS) << last_error_;
  EXPECT_EQ(versions(), (std::set<std::int64_t>{4}));
  // The reports kept beside the shards while the version was made are gone with the commit.
  EXPECT_FALSE(fs::exists(fs::path(dir).parent_path() / "v00000000000000000004" / "records.log"));
  // Sent again (a retry after the commit): the same answer, no second version.
  EXPECT_EQ(report(4, 1, 2, &r1), PCM_SUCCESS) << last_error_;
  // A rank that could not write its shard: no version, whatever the others report.
  const std::string dir6 =
      client_->request({{"op", "checkpoint_begin"}, {"job", "sd"}, {"iteration", 6}})
          .header.at("dir")
          .get<std::string>();
  const ShardRecord s1 = write(dir6, 6, 1);
  ASSERT_EQ(report(6, 0, 2, nullptr, "disk full"), PCM_SUCCESS);
  ASSERT_EQ(report(6, 1, 2, &s1), PCM_SUCCESS);
  EXPECT_EQ(versions(), (std::set<std::int64_t>{4}));
  // A report of a version never begun is refused.
  EXPECT_EQ(report(9, 0, 2, &r0), PCM_ERR_REFUSED);
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
    pcm::daemon::ServerOptions o;
    o.bind = "tcp://127.0.0.1:*";
    o.data_dir = (mnt / "data").string();
    o.secret = "right-secret";
    o.probe_port = 0;
    auto server = std::make_unique<pcm::daemon::Server>(ctx, o);
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

// pcmd's fence (ops::Fence): a request stamped with another run of the job is refused, and one
// that writes the job's data also once its run has ended; an unstamped one (pcmctl's) is not
// fenced. (integration.epoch_fence shows it with a surviving rank.)
TEST_F(ServerTest, EpochFenceRefusesAnotherRunAndAnEndedRunsWrites) {
  auto reg =
      client_->request({{"op", "register"}, {"job", "f"}, {"size", 1}, {"hosts", {"localhost"}}});
  const long long run = reg.header.at("incarnation");
  const json begin{{"op", "checkpoint_begin"}, {"job", "f"}, {"iteration", 10}};
  json other = begin;
  other["incarnation"] = run + 1;
  EXPECT_EQ(code(other), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("run " + std::to_string(run) + " is the job's now"), std::string::npos)
      << last_error_;
  json poll{{"op", "poll"}, {"job", "f"}, {"iteration", 3}, {"incarnation", run + 1}};
  EXPECT_EQ(code(poll), PCM_ERR_REFUSED);
  poll["incarnation"] = run;
  EXPECT_EQ(code(poll), PCM_SUCCESS) << last_error_;
  json mine = begin;
  mine["incarnation"] = run;
  EXPECT_EQ(code(mine), PCM_SUCCESS) << last_error_;
  EXPECT_EQ(code(begin), PCM_SUCCESS) << last_error_;
  EXPECT_EQ(code({{"op", "finished"}, {"job", "f"}, {"iteration", 9}, {"incarnation", run}}),
            PCM_SUCCESS)
      << last_error_;
  // The run has finished: its writes are refused, in pieces too; reads and pcmctl's are not.
  EXPECT_EQ(code(mine), PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("has finished; its processes may no longer write"), std::string::npos)
      << last_error_;
  json store{{"op", "store"}, {"job", "f"}, {"rank", 0},  {"key", "k"},  {"type", 1},
             {"count", 1},    {"xfer", 1},  {"total", 4}, {"offset", 0}, {"incarnation", run}};
  EXPECT_EQ(code(store), PCM_ERR_REFUSED);
  EXPECT_EQ(code({{"op", "checkpoints"}, {"job", "f"}, {"incarnation", run}}), PCM_SUCCESS)
      << last_error_;
  EXPECT_EQ(code({{"op", "checkpoints"}, {"job", "f"}, {"incarnation", "x"}}), PCM_SUCCESS)
      << "not fenced: the stamp is not read";
  EXPECT_EQ(code({{"op", "shard_done"},
                  {"job", "f"},
                  {"iteration", 10},
                  {"rank", 0},
                  {"size", 1},
                  {"incarnation", "x"}}),
            PCM_ERR_ARG);
}

// A version of many ranks (issue 39): the ranks' records go to one log beside the shards, not a
// file each; the job restarted from it keeps the manifest by reference in the job table, and a
// pcmd started again reads it back from the version's directory.
TEST_F(ServerTest, AManyRankVersionKeepsOneRecordLogAndItsManifestByReference) {
  constexpr int kRanks = 80;  // more than the 64 shards a table keeps whole
  register_job("big", kRanks);
  const std::string dir =
      client_->request({{"op", "checkpoint_begin"}, {"job", "big"}, {"iteration", 7}})
          .header.at("dir")
          .get<std::string>();
  for (int r = 0; r < kRanks; ++r) {
    const std::string file = pcm::common::shard_file_name(r);
    std::ofstream(fs::path(dir) / file, std::ios::binary) << std::string(8, '\0');
    pcm::common::ShardDataset d;
    d.key = "x";
    d.type = PCM_DOUBLE;
    d.count = 1;
    d.xxh3 = {42};
    const ShardRecord rec{r, file, 8, {d}};
    const std::string bytes = pcm::proto::encode(rec.to_json());
    client_->request(
        {{"op", "shard_done"}, {"job", "big"}, {"iteration", 7}, {"rank", r}, {"size", kRanks}},
        bytes.data(), bytes.size());
    if (r == kRanks / 2) {
      EXPECT_TRUE(fs::exists(fs::path(dir) / "records.log"));
      EXPECT_FALSE(fs::exists(fs::path(dir) / "r0.record"));
    }
  }
  const json v = client_->request({{"op", "checkpoints"}, {"job", "big"}}).header.at("versions");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(v[0].at("valid").get<bool>());
  EXPECT_FALSE(fs::exists(fs::path(dir).parent_path() / "v00000000000000000007" / "records.log"));
  client_->request({{"op", "finished"}, {"job", "big"}});
  json req{{"op", "register"},
           {"size", kRanks},
           {"hosts", json::array()},
           {"job", "big"},
           {"restart", true}};
  for (int i = 0; i < kRanks; ++i) req["hosts"].push_back("localhost");
  client_->request(req);
  stop();
  start(dir_);
  const auto m =
      client_->request({{"op", "checkpoint_manifest"}, {"job", "big"}, {"iteration", 7}});
  EXPECT_EQ(m.header.at("format"), 2);
  const json table = pcm::proto::decode_large(m.data.data(), m.data.size(), m.data.size());
  EXPECT_EQ(table.at("shards").size(), static_cast<std::size_t>(kRanks));
}

// PCM_STORE_ASYNC's commit survives a restart of pcmd: rank 0's commit and rank 1's stores reached
// the pcmd before; rank 0's stores reach the next one, whose reply is the commit's. A request of
// the last rank sent again once the commit is made gets the commit's reply again, and the events
// kept beside the store are replaced by the next commit's, and are gone once the job has ended.
TEST_F(ServerTest, ADeferredCommitIsTakenUpByAPcmdThatRestarted) {
  register_job("dr", 2);
  std::vector<double> x(64, 2.5);
  for (int r = 0; r < 2; ++r)
    client_->request({{"op", "store"},
                      {"job", "dr"},
                      {"rank", r},
                      {"key", "x"},
                      {"type", PCM_DOUBLE},
                      {"count", x.size()}},
                     x.data(), x.size() * sizeof(double));
  auto done = [&](int rank) {
    return client_->request(
        {{"op", "stores_done"}, {"job", "dr"}, {"iteration", 3}, {"rank", rank}, {"size", 2}});
  };
  EXPECT_TRUE(client_
                  ->request({{"op", "commit"},
                             {"job", "dr"},
                             {"iteration", 3},
                             {"size", 2},
                             {"after_stores", true}})
                  .header.value("deferred", false));
  EXPECT_TRUE(done(1).header.value("deferred", false));
  const fs::path events = dir_ / "jobs" / "dr" / "deferred.log";
  EXPECT_TRUE(fs::exists(events));
  stop();
  start(dir_);
  EXPECT_EQ(done(0).header.value("iteration", -1), 3);  // the last: the commit's reply
  auto v = client_->request({{"op", "checkpoints"}, {"job", "dr"}}).header.at("versions");
  ASSERT_EQ(v.size(), 1u) << v.dump();
  EXPECT_EQ(v[0].at("iteration"), 3);
  EXPECT_TRUE(v[0].at("valid").get<bool>());
  // The last report sent again (its reply lost), to this pcmd and to one that restarted: the
  // commit's reply each time, no second version.
  EXPECT_EQ(done(0).header.value("iteration", -1), 3);
  stop();
  start(dir_);
  EXPECT_EQ(done(0).header.value("iteration", -1), 3);
  EXPECT_EQ(client_->request({{"op", "checkpoints"}, {"job", "dr"}}).header.at("versions").size(),
            1u);
  // The next commit replaces the events kept.
  EXPECT_TRUE(
      client_
          ->request(
              {{"op", "stores_done"}, {"job", "dr"}, {"iteration", 4}, {"rank", 1}, {"size", 2}})
          .header.value("deferred", false));
  std::ifstream in(events);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(json::parse(line).at("iteration"), 4) << line;
  }
  EXPECT_EQ(lines, 1);
  in.close();
  // The run ends: its commit and the events kept go at pcmd's next check of its jobs (every
  // second), and so do the events an earlier pcmd left for a job that has ended since.
  auto gone = [&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fs::exists(events) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return !fs::exists(events);
  };
  client_->request({{"op", "finished"}, {"job", "dr"}});
  EXPECT_TRUE(gone());
  stop();
  std::ofstream(events) << json{{"iteration", 4}, {"incarnation", 1}, {"size", 2}, {"rank", 1}}
                        << "\n";
  start(dir_);
  EXPECT_TRUE(gone());
}

// PCM_STORE_ASYNC's commits: made once rank 0's commit (after_stores) and every rank's
// stores_done have come, in either order, the reply to the last being the commit's; a rank's
// failure makes no version; an older iteration than the one under way, or another size, is refused.
TEST_F(ServerTest, ACommitAfterStoresWaitsForEveryRanksStores) {
  register_job("d", 2);
  std::vector<double> x(100, 1.5);
  for (int r = 0; r < 2; ++r)
    client_->request({{"op", "store"},
                      {"job", "d"},
                      {"rank", r},
                      {"key", "x"},
                      {"type", PCM_DOUBLE},
                      {"count", x.size()}},
                     x.data(), x.size() * sizeof(double));
  auto versions = [&] {
    std::vector<std::int64_t> out;
    auto r = client_->request({{"op", "checkpoints"}, {"job", "d"}});
    for (const auto& v : r.header.at("versions")) {
      EXPECT_TRUE(v.at("valid").get<bool>()) << v.dump();
      out.push_back(v.at("iteration").get<std::int64_t>());
    }
    return out;
  };
  auto done = [&](int iteration, int rank) {
    return client_->request({{"op", "stores_done"},
                             {"job", "d"},
                             {"iteration", iteration},
                             {"rank", rank},
                             {"size", 2}});
  };
  json commit{
      {"op", "commit"}, {"job", "d"}, {"iteration", 5}, {"size", 2}, {"after_stores", true}};
  EXPECT_TRUE(client_->request(commit).header.value("deferred", false));
  EXPECT_TRUE(done(5, 1).header.value("deferred", false));
  EXPECT_TRUE(versions().empty());
  EXPECT_EQ(done(5, 0).header.value("iteration", -1), 5);  // the last: the commit's reply
  EXPECT_EQ(versions(), std::vector<std::int64_t>{5});
  // The stores first, then rank 0's commit.
  EXPECT_TRUE(done(6, 0).header.value("deferred", false));
  EXPECT_TRUE(done(6, 1).header.value("deferred", false));
  commit["iteration"] = 6;
  EXPECT_EQ(client_->request(commit).header.value("iteration", -1), 6);
  // A rank whose stores failed: no version, the last request refused with the reason.
  commit["iteration"] = 7;
  EXPECT_TRUE(client_->request(commit).header.value("deferred", false));
  EXPECT_EQ(code({{"op", "stores_done"},
                  {"job", "d"},
                  {"iteration", 7},
                  {"rank", 0},
                  {"size", 2},
                  {"error", "disk full"}}),
            PCM_SUCCESS);
  EXPECT_EQ(code({{"op", "stores_done"}, {"job", "d"}, {"iteration", 7}, {"rank", 1}, {"size", 2}}),
            PCM_ERR_REFUSED);
  EXPECT_NE(last_error_.find("disk full"), std::string::npos) << last_error_;
  EXPECT_EQ(versions(), (std::vector<std::int64_t>{6, 5}));  // newest first
  // Iteration 9 under way: a late report of 8 is refused; so is a commit of another size.
  done(9, 0);
  EXPECT_EQ(code({{"op", "stores_done"}, {"job", "d"}, {"iteration", 8}, {"rank", 1}, {"size", 2}}),
            PCM_ERR_REFUSED);
  commit["iteration"] = 9;
  commit["size"] = 3;
  EXPECT_EQ(code(commit), PCM_ERR_REFUSED);
}
