// test_relay.cpp — pcm-relay's core (relay/relay.h) on loopback: bytes both ways with
// half-closes, CURVE end to end through it with each client keeping its identity, resets passed
// on, the connection limit, an unreachable pcmd, its port specs, and two relays that carry two
// ports over one (--mux, --demux) and refuse a bad header.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "auth.h"
#include "error.h"
#include "log.h"
#include "mux.h"
#include "relay.h"

namespace {

using pcm::relay::Relay;
using pcm::relay::RelayOptions;

// A listening socket on 127.0.0.1, any port ("pcmd" for the relay).
struct Upstream {
  int fd = -1;
  int port = 0;
  Upstream() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(::listen(fd, 16), 0);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Upstream() { ::close(fd); }
  int accept_one() const { return ::accept(fd, nullptr, nullptr); }
};

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  return fd;
}

void send_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    ASSERT_GT(n, 0) << std::strerror(errno);
    done += static_cast<std::size_t>(n);
  }
}

// Everything until EOF; errno_out: the error that ended it (0 for EOF).
std::string read_all(int fd, int* errno_out = nullptr) {
  std::string s;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      s.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (errno_out) *errno_out = n == 0 ? 0 : errno;
    return s;
  }
}

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) >> 3);
  return s;
}

// A relay on 127.0.0.1 (any port) to the given ports there, served by a thread.
struct RunningRelay {
  std::unique_ptr<Relay> relay;
  std::thread thread;
  explicit RunningRelay(std::vector<int> to_ports, RelayOptions o = {}) {
    for (int p : to_ports)
      o.routes.push_back(
          pcm::relay::parse_relay_port("0:" + std::to_string(p), "127.0.0.1", "127.0.0.1"));
    start(std::move(o));
  }
  // Routes as given: PORT or PORT:TOPORT specs on 127.0.0.1.
  RunningRelay(RelayOptions o, const std::vector<std::string>& specs) {
    for (const auto& spec : specs)
      o.routes.push_back(pcm::relay::parse_relay_port(spec, "127.0.0.1", "127.0.0.1"));
    start(std::move(o));
  }
  void start(RelayOptions o) {
    relay = std::make_unique<Relay>(o, pcm::common::logger("pcm-relay", spdlog::level::warn));
    thread = std::thread([this] { relay->run(); });
  }
  ~RunningRelay() {
    relay->stop();
    thread.join();
  }
  int port(std::size_t i = 0) const { return relay->listen_ports().at(i); }
};

}  // namespace

TEST(Relay, PortSpecs) {
  auto r = pcm::relay::parse_relay_port("4000", "10.0.0.254", "10.1.0.1");
  EXPECT_EQ(r.listen_port, 4000);
  EXPECT_EQ(r.to_port, 4000);
  EXPECT_EQ(r.listen_host, "10.0.0.254");
  EXPECT_EQ(r.to_host, "10.1.0.1");
  r = pcm::relay::parse_relay_port("0:5000", "a", "b");
  EXPECT_EQ(r.listen_port, 0);
  EXPECT_EQ(r.to_port, 5000);
  for (const char* bad : {"", "x", "0", "70000", "1:0", "1:", ":1", "-1", "1:2:3"})
    EXPECT_THROW(pcm::relay::parse_relay_port(bad, "a", "b"), pcm::Error) << bad;
}

// Megabytes each way (more than the buffers: the relay must stop reading while it cannot write),
// the client's half-close passed on before pcmd answers, pcmd's close passed back.
TEST(Relay, ForwardsBytesBothWaysWithHalfCloses) {
  Upstream up;
  RelayOptions o;
  o.buffer_bytes = 16 * 1024;
  RunningRelay relay({up.port}, o);
  const std::string request = pattern(3 << 20, 1), reply = pattern(5 << 20, 7);
  int c = connect_to(relay.port());
  std::thread client([&] {
    send_all(c, request);
    ::shutdown(c, SHUT_WR);
  });
  int s = up.accept_one();
  EXPECT_EQ(read_all(s), request);  // EOF came after all of it
  client.join();
  std::thread server([&] {
    send_all(s, reply);
    ::close(s);
  });
  EXPECT_EQ(read_all(c), reply);
  server.join();
  ::close(c);
  const auto& k = relay.relay->counters();
  for (int i = 0; i < 200 && k.closed.load() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(k.accepted.load(), 1u);
  EXPECT_EQ(k.closed.load(), 1u);
  EXPECT_EQ(k.open.load(), 0u);
  EXPECT_EQ(k.bytes_up.load(), request.size());
  EXPECT_EQ(k.bytes_down.load(), reply.size());
}

// A client that resets its connection (a killed process) resets the one to pcmd: the watch port
// tells a lost process from a clean leave by that.
TEST(Relay, PassesResetsOn) {
  Upstream up;
  RunningRelay relay({up.port});
  int c = connect_to(relay.port());
  int s = up.accept_one();
  send_all(c, "hello");
  char buf[5];
  ASSERT_EQ(::recv(s, buf, sizeof buf, MSG_WAITALL), 5);
  linger l{1, 0};
  ::setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(c);
  int err = -1;
  EXPECT_EQ(read_all(s, &err), "");
  EXPECT_EQ(err, ECONNRESET);
  ::close(s);
}

// CURVE through the relay: the relay never holds a key, the server authenticates the client's
// (ZAP is not needed for the handshake itself), and two clients keep their own identities: each
// gets the reply to its own request.
TEST(Relay, CurveEndToEndKeepsEachClientsIdentity) {
  zmq::context_t ctx;
  const auto server_keys = pcm::common::curve_keypair();
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::curve_server, 1);
  router.set(zmq::sockopt::curve_secretkey, server_keys.secret_key);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:*");
  const std::string ep = router.get(zmq::sockopt::last_endpoint);
  const int port = std::stoi(ep.substr(ep.rfind(':') + 1));
  RunningRelay relay({port});
  std::vector<zmq::socket_t> clients;
  for (int i = 0; i < 2; ++i) {
    const auto keys = pcm::common::curve_keypair();
    zmq::socket_t req(ctx, zmq::socket_type::req);
    req.set(zmq::sockopt::curve_serverkey, server_keys.public_key);
    req.set(zmq::sockopt::curve_publickey, keys.public_key);
    req.set(zmq::sockopt::curve_secretkey, keys.secret_key);
    req.set(zmq::sockopt::linger, 0);
    req.set(zmq::sockopt::rcvtimeo, 10000);
    req.connect("tcp://127.0.0.1:" + std::to_string(relay.port()));
    clients.push_back(std::move(req));
  }
  for (int i = 0; i < 2; ++i) clients[static_cast<std::size_t>(i)].send(zmq::str_buffer("x"));
  router.set(zmq::sockopt::rcvtimeo, 10000);
  for (int i = 0; i < 2; ++i) {
    std::vector<zmq::message_t> parts(3);  // identity, empty, body
    for (auto& m : parts) ASSERT_TRUE(router.recv(m));
    parts[2] = zmq::message_t(std::string("reply to ") + parts[0].to_string());
    router.send(parts[0], zmq::send_flags::sndmore);
    router.send(parts[1], zmq::send_flags::sndmore);
    router.send(parts[2], zmq::send_flags::none);
  }
  std::vector<std::string> replies;
  for (auto& c : clients) {
    zmq::message_t m;
    ASSERT_TRUE(c.recv(m));
    replies.push_back(m.to_string());
  }
  EXPECT_NE(replies[0], replies[1]);  // each its own
  EXPECT_EQ(relay.relay->counters().accepted.load(), 2u);
}

// Beyond max_connections a connection is closed at once and counted; a pcmd that cannot be
// reached closes the client's connection with a reset.
TEST(Relay, RefusesBeyondTheLimitAndWhenPcmdIsAway) {
  Upstream up;
  RelayOptions o;
  o.max_connections = 1;
  RunningRelay relay({up.port}, o);
  int c1 = connect_to(relay.port());
  int s1 = up.accept_one();
  int c2 = connect_to(relay.port());
  int err = -1;
  EXPECT_EQ(read_all(c2, &err), "");  // closed by the relay
  EXPECT_EQ(relay.relay->counters().refused.load(), 1u);
  ::close(c2);
  ::close(c1);
  ::close(s1);

  int away = Upstream().port;  // closed again: nothing listens there now
  RunningRelay nowhere({away});
  int c3 = connect_to(nowhere.port());
  EXPECT_EQ(read_all(c3, &err), "");
  EXPECT_EQ(err, ECONNRESET);
  EXPECT_EQ(nowhere.relay->counters().failed.load(), 1u);
  ::close(c3);
}

namespace {

// Waits for the relay's counter to reach n (or 2 s).
void wait_for(const std::atomic<std::uint64_t>& c, std::uint64_t n) {
  for (int i = 0; i < 200 && c.load() < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

bool pending_connection(int listen_fd) {
  pollfd p{listen_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

// Two targets ("pcmd's" request and watch ports) through a --mux relay and a --demux one that
// reach one another on one port: each client's connection comes out at its own target, bytes
// both ways and half-closes, and the demux relay listens on that one port only.
TEST(Relay, MuxDemuxCarryTwoPortsOverOne) {
  Upstream up1, up2;
  const std::string p1 = std::to_string(up1.port), p2 = std::to_string(up2.port);
  RelayOptions d;
  d.demux_port = 0;
  RunningRelay demux(d, {p1, p2});
  ASSERT_EQ(demux.relay->listen_ports().size(), 1u);
  RelayOptions m;
  m.mux_port = demux.port();
  RunningRelay mux(m, {"0:" + p1, "0:" + p2});
  const std::string req1 = pattern(1 << 20, 3), req2 = "watch hello", rep1 = pattern(2 << 20, 5),
                    rep2 = "watch ok";
  int c1 = connect_to(mux.port(0)), c2 = connect_to(mux.port(1));
  std::thread client([&] {
    send_all(c2, req2);
    ::shutdown(c2, SHUT_WR);
    send_all(c1, req1);
    ::shutdown(c1, SHUT_WR);
  });
  int s1 = up1.accept_one(), s2 = up2.accept_one();
  EXPECT_EQ(read_all(s2), req2);
  EXPECT_EQ(read_all(s1), req1);
  client.join();
  std::thread server([&] {
    send_all(s1, rep1);
    ::close(s1);
    send_all(s2, rep2);
    ::close(s2);
  });
  EXPECT_EQ(read_all(c1), rep1);
  EXPECT_EQ(read_all(c2), rep2);
  server.join();
  ::close(c1);
  ::close(c2);
  wait_for(demux.relay->counters().closed, 2);
  wait_for(mux.relay->counters().closed, 2);
  for (const auto* r : {demux.relay.get(), mux.relay.get()}) {
    EXPECT_EQ(r->counters().accepted.load(), 2u);
    EXPECT_EQ(r->counters().closed.load(), 2u);
    EXPECT_EQ(r->counters().bad_headers.load(), 0u);
    EXPECT_EQ(r->counters().bytes_up.load(), req1.size() + req2.size());  // headers not counted
    EXPECT_EQ(r->counters().bytes_down.load(), rep1.size() + rep2.size());
  }
}

// A --demux relay closes, with a reset and counted, a connection whose header is not one, is of
// another version, names a port not in its list, or does not come in time: none reaches the
// target. A good header after them still does.
TEST(Relay, DemuxRefusesBadHeadersWithoutReachingTheTarget) {
  Upstream up;
  const std::string p = std::to_string(up.port);
  RelayOptions d;
  d.demux_port = 0;
  d.header_timeout = std::chrono::milliseconds(200);
  RunningRelay demux(d, {p});
  auto other = pcm::relay::encode_mux_header(up.port == 65535 ? 1 : up.port + 1);
  auto version = pcm::relay::encode_mux_header(up.port);
  version[4] = 2;
  for (const std::string& bad :
       {std::string("GET / HTTP/1.1\r\n\r\n"), std::string(other.data(), other.size()),
        std::string(version.data(), version.size()), std::string("PCM")}) {
    int c = connect_to(demux.port());
    send_all(c, bad);
    int err = -1;
    EXPECT_EQ(read_all(c, &err), "");
    EXPECT_EQ(err, ECONNRESET) << bad;
    ::close(c);
  }
  const auto& k = demux.relay->counters();
  EXPECT_EQ(k.bad_headers.load(), 4u);
  EXPECT_EQ(k.failed.load(), 0u);
  EXPECT_FALSE(pending_connection(up.fd));
  auto good = pcm::relay::encode_mux_header(up.port);
  int c = connect_to(demux.port());
  send_all(c, std::string(good.data(), good.size()) + "hi");
  int s = up.accept_one();
  char buf[2];
  ASSERT_EQ(::recv(s, buf, sizeof buf, MSG_WAITALL), 2);
  EXPECT_EQ(std::string(buf, 2), "hi");
  ::close(s);
  ::close(c);
  std::string why;
  EXPECT_EQ(pcm::relay::decode_mux_header(good, why), up.port);
  EXPECT_EQ(pcm::relay::decode_mux_header(version, why), 0);
  EXPECT_FALSE(why.empty());
  RelayOptions both;
  both.mux_port = 1;
  both.demux_port = 0;
  both.routes.push_back(pcm::relay::parse_relay_port(p, "127.0.0.1", "127.0.0.1"));
  EXPECT_THROW(Relay r(both, pcm::common::logger("pcm-relay", spdlog::level::warn)), pcm::Error);
}
