// probe.h — round-trip times to hosts, measured by pcmd with a message of its own (P2P-MPI
// measures latency with an application-level message, not ICMP): the time a TCP connection
// attempt takes to be answered, whether by a connection (SYN-ACK) or a refusal (RST). A
// background thread measures; the request loop only reads the results. In common/ since
// `pcmctl run` checks with tcp_round_trip_ms that a host answers before it runs there.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "namespaces.h"

namespace pcm::common {

// One measurement: resolves host (IPv4/IPv6), connects to port without blocking and returns the
// milliseconds until the attempt was answered (accepted or refused); nullopt when the name does
// not resolve or nothing answers within timeout_ms (a firewall that drops, a host that is gone).
std::optional<double> tcp_round_trip_ms(const std::string& host, int port, int timeout_ms);

class RttProber {
 public:
  // Measures every host given to watch() now and then every period: the median of three tries.
  // Port 0: measures nothing (every rtt_ms is nullopt).
  RttProber(int port, std::chrono::milliseconds period, int timeout_ms = 1000);
  ~RttProber();
  RttProber(const RttProber&) = delete;
  RttProber& operator=(const RttProber&) = delete;

  void watch(const std::string& host);   // measured soon, then every period
  void forget(const std::string& host);  // no longer measured; its result is dropped
  // Drops host's result and measures it again soon (a process on it was lost).
  void remeasure(const std::string& host);
  // Whether host has a result (rtt_ms tells which), since watch or the last remeasure.
  bool measured(const std::string& host) const;
  bool on() const { return port_ > 0; }
  // The last measurement of host (nullopt: none yet, or unreachable).
  std::optional<double> rtt_ms(const std::string& host) const;

 private:
  void loop();

  const int port_;
  const std::chrono::milliseconds period_;
  const int timeout_ms_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::set<std::string> hosts_;
  std::set<std::string> due_;  // added since the last round: measured first
  std::map<std::string, std::optional<double>> results_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pcm::common
