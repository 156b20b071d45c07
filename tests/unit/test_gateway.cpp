// test_gateway.cpp — pcmd's gateway in-process: malformed requests, secrets, versions, refusals
// logged and rate limited, oversized frames, and bulk data in pieces (transfers.h).
#include "server_fixture.h"

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
