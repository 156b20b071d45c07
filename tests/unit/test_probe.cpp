// test_probe.cpp — pcmd's RTT prober (probe.h): an accepted and a refused connection timed.
#include "server_fixture.h"

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
  auto t = pcm::common::tcp_round_trip_ms("127.0.0.1", open_port, 1000);
  ASSERT_TRUE(t.has_value());
  EXPECT_GE(*t, 0.0);
  EXPECT_LT(*t, 1000.0);
  ::close(fd);  // now nothing listens there: refused
  t = pcm::common::tcp_round_trip_ms("127.0.0.1", open_port, 1000);
  ASSERT_TRUE(t.has_value());
  // The prober measures a watched host soon after it is watched.
  pcm::common::RttProber prober(open_port, std::chrono::milliseconds(60000), 500);
  prober.watch("localhost");
  std::optional<double> got;
  for (int i = 0; i < 100 && !got; ++i) {
    got = prober.rtt_ms("localhost");
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(got.has_value());
  EXPECT_TRUE(prober.measured("localhost"));
  // remeasure drops the result and measures again soon (a host that lost a process).
  prober.remeasure("localhost");
  got.reset();
  for (int i = 0; i < 100 && !got; ++i) {
    got = prober.rtt_ms("localhost");
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(got.has_value());
  prober.forget("localhost");
  EXPECT_FALSE(prober.rtt_ms("localhost").has_value());
}
