// watch.h — pcmd's watch port: every PCM process, on any host, holds one idle TCP connection to
// it for its whole life. A connection that ends without "bye" means its process is gone (killed,
// or its host vanished), which pcmd learns from the kernel (FIN or RST) or, for a host that
// disappears without a word, from TCP keepalive. A thread of its own serves the port; the request
// loop takes the events.
//
// Protocol: on connecting, pcmd sends `PCM-WATCH 2 NONCE\n` (NONCE: 32 random hex digits, new
// for each connection). The process answers with one line `PCM-WATCH 2 PROOF JOB PID HOST
// INCARNATION\n` (at most kMaxHello bytes, within kHelloTimeout of connecting), where PROOF is
// HMAC-SHA256 under the secret of "NONCE JOB PID HOST INCARNATION" (common/auth.h watch_proof):
// the secret never crosses the wire and a recorded hello cannot be replayed. Then nothing until
// the process leaves normally, when it sends `bye\n` and closes. Anything else closes the
// connection (and is logged).
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "log.h"

namespace pcm::daemon {

struct WatchEvent {
  enum class Kind { kHello, kBye, kLost };
  Kind kind = Kind::kHello;
  std::string job;
  long pid = 0;
  std::string host;
  long long incarnation = 0;  // the run of the job the process belongs to (register's reply)
  std::string why;            // kLost: what the connection said (EOF, reset, keepalive timeout)
};

class Watcher {
 public:
  static constexpr std::size_t kMaxHello = 1024;
  static constexpr std::chrono::seconds kHelloTimeout{5};

  // Listens on address (an IPv4/IPv6 literal or name; "*" or "" for every address), any free
  // port. Throws pcm::Error(PCM_ERR_CONFIG) if it cannot.
  Watcher(const std::string& address, std::string secret);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // tcp://ADDRESS:PORT, for the configuration file.
  const std::string& endpoint() const { return endpoint_; }
  // The events since the last call, oldest first.
  std::vector<WatchEvent> take_events();
  // Connections open now (hello received or not).
  std::size_t connections() const { return open_.load(); }
  // Connections refused since start (the limit reached, or out of file descriptors): each one
  // logged (rate-limited) and counted.
  std::size_t refused() const { return refused_.load(); }

 private:
  struct Conn;
  void loop();
  void accept_all(int ep, std::unordered_map<int, std::unique_ptr<Conn>>& conns,
                  std::chrono::steady_clock::time_point now);
  void handle_readable(Conn& c);
  void emit(WatchEvent e);

  const std::string secret_;
  std::shared_ptr<spdlog::logger> log_;
  LogLimiter refusals_{10};  // log lines about refused connections (the loop's thread only)
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: the destructor wakes the thread with it
  std::string endpoint_;
  std::size_t max_conns_ = 1024;
  int spare_fd_ = -1;  // given up to take (and refuse) a connection when out of descriptors
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> refused_{0};
  std::mutex mutex_;
  std::vector<WatchEvent> events_;
  std::thread thread_;
};

}  // namespace pcm::daemon
