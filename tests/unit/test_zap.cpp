// test_zap.cpp — pcmd with CURVE (zap.h): only the configured client key is admitted.
#include "server_fixture.h"

// CURVE: with keys, pcmd answers only clients that hold the client key pair of its configuration;
// one without keys, or with another pair, gets no answer (the handshake is refused).
TEST(CurveServer, AdmitsOnlyTheConfiguredClientKey) {
  TempDir dir;
  zmq::context_t ctx;
  auto server_keys = pcm::common::curve_keypair();
  auto client_keys = pcm::common::curve_keypair();
  auto other_keys = pcm::common::curve_keypair();
  pcm::daemon::ServerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.data_dir = dir.path().string();
  o.secret = "right-secret";
  o.probe_port = 0;
  o.curve = {server_keys.secret_key, client_keys.public_key};
  auto server = std::make_unique<pcm::daemon::Server>(ctx, o);
  std::atomic<bool> stop{false};
  std::thread thread([&] { server->run(stop); });
  auto ping = [&](const pcm::common::CurveClientKeys& keys) {
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
