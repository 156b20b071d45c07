// zap.h — pcmd's CURVE server side: the keys on its socket and a ZAP handler (RFC 27) that
// admits only clients holding the key pair from pcmd's configuration file.
#pragma once

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace pcm::daemon {

struct CurveServerKeys {
  std::string secret_key;     // pcmd's own (Z85)
  std::string client_public;  // the one client key admitted (Z85)
  bool enabled() const { return !secret_key.empty(); }
};

class ZapHandler {
 public:
  // Binds inproc://zeromq.zap.01 in context and answers there until destroyed. Throws
  // pcm::Error(PCM_ERR_CONFIG) if it cannot (another handler in this context).
  ZapHandler(zmq::context_t& context, const std::string& client_public_z85);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Handshakes refused so far.
  std::uint64_t refused() const { return refused_.load(); }

 private:
  void loop();

  zmq::socket_t socket_;
  std::string client_key_;  // 32 raw bytes
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> refused_{0};
  std::shared_ptr<spdlog::logger> log_;
  std::chrono::steady_clock::time_point last_log_{};
  std::uint64_t unlogged_ = 0;
  std::thread thread_;
};

// Makes socket (not yet bound) a CURVE server with keys.secret_key, every handshake checked by
// the returned handler. Nothing (nullptr) if keys are disabled.
std::unique_ptr<ZapHandler> make_curve_server(zmq::context_t& context, zmq::socket_t& socket,
                                              const CurveServerKeys& keys);

}  // namespace pcm::daemon
