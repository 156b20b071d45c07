// main.cpp — pcm-relay: the relay a site's front-end runs between its site and pcmd
// (relay.h; docs/ops/sites.md).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "error.h"
#include "log.h"
#include "relay.h"

namespace {

pcm::relay::Relay* g_relay = nullptr;

void on_signal(int) {
  if (g_relay) g_relay->stop();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pcm::relay;
  CLI::App app{
      "pcm-relay: forwards a site's connections to pcmd, byte for byte (issue 26). It runs on "
      "the site's front-end, listens on the front-end's address inside the site on the ports of "
      "pcmd's configuration file (\"endpoint\" and \"watch\"), and opens one connection to pcmd "
      "(or to the next relay) for each connection it accepts. It never decrypts: CURVE stays "
      "between the client and pcmd, and the relay holds no key or secret. The site's "
      "configuration file is pcmd's with the relay's address in place of pcmd's "
      "(docs/ops/sites.md). Logs a line per connection opened and closed, and its counters "
      "every --stats-every-s and at the end; SIGTERM or SIGINT closes every connection and "
      "ends it. Two relays reach one another on one port with --mux on the one nearer the "
      "clients and --demux on the one nearer pcmd: each connection then starts with an 8-byte "
      "header naming its port, and the rest is the client's bytes, unchanged.",
      "pcm-relay"};
  std::string listen, to, pidfile;
  std::vector<std::string> ports;
  RelayOptions o;
  std::size_t buffer_kib = o.buffer_bytes / 1024;
  int connect_timeout_ms = static_cast<int>(o.connect_timeout.count());
  app.add_option("--listen", listen, "address to listen on (the front-end's inside the site)")
      ->required();
  app.add_option("--to", to, "address of pcmd (or of the relay nearer to it)")->required();
  app.add_option("--port", ports,
                 "PORT (the same on both sides) or PORT:TOPORT; give pcmd's request port and "
                 "its watch port (repeat the option or separate with commas)")
      ->required()
      ->delimiter(',');
  app.add_option("--mux", o.mux_port,
                 "send every connection to this one port of the next relay (which runs "
                 "--demux), led by a header naming its --port's TOPORT")
      ->check(CLI::Range(1, 65535));
  app.add_option("--demux", o.demux_port,
                 "listen on this one port only (not on the --port ports), for a relay that runs "
                 "--mux: a connection's header names a --port PORT, and it goes to its TOPORT; "
                 "a malformed, late or unknown header closes the connection")
      ->check(CLI::Range(1, 65535))
      ->excludes("--mux");
  int header_timeout_ms = static_cast<int>(o.header_timeout.count());
  app.add_option("--header-timeout-ms", header_timeout_ms,
                 "--demux: how long a connection's header may take before it is closed")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "connections open at once; more are refused (closed at once)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--buffer-kib", buffer_kib, "buffer per direction and connection, KiB")
      ->check(CLI::Range(4, 65536))
      ->capture_default_str();
  app.add_option("--connect-timeout-ms", connect_timeout_ms,
                 "how long a connection to pcmd may take before the client's is closed")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  int stats_s = 0;
  app.add_option("--stats-every-s", stats_s,
                 "log the counters this often when they changed (0: never)")
      ->check(CLI::Range(0, 86400));
  app.add_option("--pidfile", pidfile, "write the relay's pid here once it listens");
  CLI11_PARSE(app, argc, argv);
  o.buffer_bytes = buffer_kib * 1024;
  o.connect_timeout = std::chrono::milliseconds(connect_timeout_ms);
  o.stats_every = std::chrono::seconds(stats_s);
  o.header_timeout = std::chrono::milliseconds(header_timeout_ms);

  auto log = logger("pcm-relay", spdlog::level::info);
  try {
    for (const auto& p : ports) o.routes.push_back(parse_relay_port(p, listen, to));
    Relay relay(o, log);
    g_relay = &relay;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    struct sigaction usr {};
    usr.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &usr, nullptr);
    const auto bound = relay.listen_ports();
    for (std::size_t i = 0; i < o.routes.size(); ++i) {
      const auto& r = o.routes[i];
      const std::string line =
          o.demux_port > 0 ? fmt::format("listening on {}:{} (demux: port {}) -> {}:{}", listen,
                                         bound[0], r.listen_port, to, r.to_port)
          : o.mux_port > 0
              ? fmt::format("listening on {}:{} -> {}:{} (mux: port {})", listen, bound[i], to,
                            o.mux_port, r.to_port)
              : fmt::format("listening on {}:{} -> {}:{}", listen, bound[i], to, r.to_port);
      std::cout << "pcm-relay: " << line << std::endl;
      log->info("{}", line);
    }
    if (!pidfile.empty()) {
      const std::string tmp = pidfile + ".tmp";
      std::ofstream(tmp) << ::getpid() << "\n";
      std::rename(tmp.c_str(), pidfile.c_str());
    }
    relay.run();
    g_relay = nullptr;
    log->info("stopped: {}", relay.summary());
    if (!pidfile.empty()) ::unlink(pidfile.c_str());
  } catch (const std::exception& e) {
    g_relay = nullptr;
    log->error("{}", e.what());
    if (!pidfile.empty()) ::unlink(pidfile.c_str());
    return 1;
  }
  return 0;
}
