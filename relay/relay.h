// relay.h — pcm-relay's core: a TCP forwarder that a site's front-end runs so that the site's
// ranks, pcmctl and host agents reach pcmd through it (issue 26, QCG-OMPI's relays). It copies
// bytes and nothing else: each accepted connection gets a connection of its own to pcmd, so
// CURVE stays end to end (pcmd authenticates the real client; the relay holds no key), each
// connection keeps its identity, and a closed or reset connection closes or resets its twin
// (the watch port learns of a lost process as it would directly).
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pcm::relay {

// One listening port and where its connections go.
struct RelayRoute {
  std::string listen_host;  // an IPv4/IPv6 literal or name to listen on
  int listen_port = 0;      // 0: any free port (tests); listen_ports() tells which
  std::string to_host;
  int to_port = 0;
};

// "PORT" (the same port on both sides) or "PORT:TOPORT", ports 0-65535 (0 only on the left).
// Throws pcm::Error(PCM_ERR_ARG) with the reason.
RelayRoute parse_relay_port(const std::string& spec, const std::string& listen_host,
                            const std::string& to_host);

struct RelayOptions {
  std::vector<RelayRoute> routes;
  std::size_t max_connections = 512;      // pairs open at once; more are accepted and closed
  std::size_t buffer_bytes = 256 * 1024;  // per direction and connection
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::seconds stats_every{0};  // the counters in the log this often (0: at the end only)
  // TCP keepalive on both sides (idle, interval, probes): a client host that vanishes is
  // noticed, and its twin toward pcmd closed, as pcmd's watch port would notice it (watch.cpp).
  int keepalive_idle_s = 4, keepalive_interval_s = 2, keepalive_count = 3;
  // Relays that reach one another on one port (mux.h). mux_port > 0 (--mux): every
  // route's connections go to to_host:mux_port, led by a header naming the route's to_port.
  // demux_port > 0 (--demux; 0 in tests: any free port): listen on that port only, not on the
  // routes' ports; a connection's header names a route's listen_port, and it goes to that
  // route's to_port. A header that is not one, names no route, or takes longer than
  // header_timeout closes the connection (counted as bad_headers); nothing reaches pcmd.
  int mux_port = 0;
  int demux_port = -1;
  std::chrono::milliseconds header_timeout{3000};
};

struct RelayCounters {
  std::atomic<std::uint64_t> accepted{0};     // connections taken on
  std::atomic<std::uint64_t> refused{0};      // closed at once: max_connections reached
  std::atomic<std::uint64_t> failed{0};       // pcmd could not be reached (or in time)
  std::atomic<std::uint64_t> bad_headers{0};  // --demux: closed, the header malformed or late
  std::atomic<std::uint64_t> closed{0};       // pairs ended
  std::atomic<std::uint64_t> open{0};         // pairs open now
  std::atomic<std::uint64_t> bytes_up{0};     // client -> pcmd
  std::atomic<std::uint64_t> bytes_down{0};
};

class Relay {
 public:
  // Binds every route's port; throws pcm::Error(PCM_ERR_CONFIG) if one cannot be bound.
  Relay(RelayOptions options, std::shared_ptr<spdlog::logger> log);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // The ports bound, in the order of the routes (--demux: the one port).
  std::vector<int> listen_ports() const;
  // Serves until stop() (from any thread or a signal handler): then closes every connection and
  // listener and returns.
  void run();
  void stop();
  const RelayCounters& counters() const { return counters_; }
  // One line: the counters.
  std::string summary() const;

 private:
  struct Pair;
  struct Listener;
  void accept_from(Listener& l);
  void connect_upstream(Pair& p, const Listener& to);
  void read_header(Pair& p);
  void refuse_header(Pair& p, const std::string& why);
  void pump(Pair& p, short client_events, short upstream_events);
  void close_pair(Pair& p, const std::string& why, bool reset);

  RelayOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Listener>> targets_;  // --demux: the routes, not listened on
  std::vector<std::unique_ptr<Pair>> pairs_;
  RelayCounters counters_;
  std::uint64_t next_id_ = 1;
  int wake_fd_ = -1;  // an eventfd: stop() wakes run() with it
  std::atomic<bool> stopping_{false};
};

}  // namespace pcm::relay
