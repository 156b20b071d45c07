// wire_flood.cpp — benchmark and attack tool for pcmd's request socket (bench/wire.sh).
//   wire_flood oversize MIB           one message whose data frame is MIB MiB, no secret
//   wire_flood frames N MIB           one message of N frames of MIB MiB each, no secret
//   wire_flood refused N              N requests with a wrong secret, one after the other
//   wire_flood storeload MIB REPS     registers a job, then REPS stores and loads of MIB MiB
//                                     through the same requests PCM_Store and PCM_Load make
// pcmd is the one of $PCM_CONFIG. Prints one line of figures per mode.
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "client.h"
#include "config.h"
#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace {

using pcm::proto::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Zero pages that cost no memory until written: the bytes of a large frame.
void* zeros(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  return p;
}

// Sends frames (the last without sndmore) from a fresh DEALER as one message, and waits up to
// 30 s for what pcmd does: a reply, or closing the connection. Returns what happened.
std::string send_unauthenticated(zmq::context_t& ctx, const std::string& endpoint,
                                 std::size_t frames, std::size_t frame_bytes) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, 0);
  zmq_socket_monitor(s.handle(), "inproc://flood-monitor", ZMQ_EVENT_DISCONNECTED);
  zmq::socket_t events(ctx, zmq::socket_type::pair);
  events.connect("inproc://flood-monitor");
  s.connect(endpoint);
  const std::string head = pcm::proto::encode(json{{"v", 1}, {"op", "ping"}, {"secret", "none"}});
  void* data = zeros(frame_bytes);
  s.send(zmq::message_t(), zmq::send_flags::sndmore);
  s.send(zmq::buffer(head), zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < frames; ++i)
    s.send(zmq::message_t(
               data, frame_bytes, [](void*, void*) {}, nullptr),
           i + 1 < frames ? zmq::send_flags::sndmore : zmq::send_flags::none);
  zmq::pollitem_t items[2] = {{s.handle(), 0, ZMQ_POLLIN, 0}, {events.handle(), 0, ZMQ_POLLIN, 0}};
  zmq::poll(items, 2, std::chrono::milliseconds(30000));
  std::string what = "no answer within 30 s";
  if (items[1].revents & ZMQ_POLLIN) what = "pcmd closed the connection";
  if (items[0].revents & ZMQ_POLLIN) what = "pcmd answered";
  zmq_socket_monitor(s.handle(), nullptr, 0);
  return what;
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: wire_flood oversize MIB | frames N MIB | refused N | "
                 "storeload MIB REPS\n");
    return 2;
  }
  const std::string mode = argv[1];
  const auto cfg = pcm::common::read_config(pcm::common::default_config_path());
  zmq::context_t ctx(1);
  if (mode == "oversize") {
    const std::size_t mib = std::strtoul(argv[2], nullptr, 10);
    const auto t0 = Clock::now();
    const std::string what = send_unauthenticated(ctx, cfg.endpoint, 1, mib << 20);
    std::printf("wire_flood: one %zu MiB frame without the secret: %s after %.3f s\n", mib,
                what.c_str(), seconds_since(t0));
  } else if (mode == "frames" && argc >= 4) {
    const std::size_t n = std::strtoul(argv[2], nullptr, 10);
    const std::size_t mib = std::strtoul(argv[3], nullptr, 10);
    const auto t0 = Clock::now();
    const std::string what = send_unauthenticated(ctx, cfg.endpoint, n, mib << 20);
    std::printf(
        "wire_flood: one message of %zu frames of %zu MiB without the secret: %s after "
        "%.3f s\n",
        n, mib, what.c_str(), seconds_since(t0));
  } else if (mode == "refused") {
    const long n = std::strtol(argv[2], nullptr, 10);
    pcm::common::Client wrong(ctx, cfg.endpoint, "wrong-secret");
    const auto t0 = Clock::now();
    long refused = 0;
    for (long i = 0; i < n; ++i) {
      try {
        wrong.request({{"op", "status"}}, nullptr, 0, 10000);
      } catch (const pcm::Error& e) {
        refused += e.code() == PCM_ERR_REFUSED;
      }
    }
    const double s = seconds_since(t0);
    std::printf("wire_flood: %ld requests with a wrong secret, %ld refused, in %.2f s (%.0f/s)\n",
                n, refused, s, n / s);
  } else if (mode == "storeload" && argc >= 4) {
    const std::size_t mib = std::strtoul(argv[2], nullptr, 10);
    const int reps = std::atoi(argv[3]);
    pcm::common::Client c(ctx, cfg.endpoint, cfg.secret);
    const std::string job =
        c.request({{"op", "register"}, {"size", 1}, {"hosts", {"localhost"}}}, nullptr, 0, 10000)
            .header.at("job");
    const long count = static_cast<long>((mib << 20) / sizeof(double));
    std::vector<double> x(static_cast<std::size_t>(count));
    for (long i = 0; i < count; ++i) x[static_cast<std::size_t>(i)] = static_cast<double>(i);
    const json store{{"op", "store"}, {"job", job},         {"rank", 0},
                     {"key", "x"},    {"type", PCM_DOUBLE}, {"count", count}};
    const json load{{"op", "load"}, {"job", job}, {"rank", 0}, {"key", "x"}};
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      c.request(store, x.data(), x.size() * sizeof(double), 600000);
      const double ts = seconds_since(t0);
      t0 = Clock::now();
      auto reply = c.request(load, nullptr, 0, 600000);
      const double tl = seconds_since(t0);
      if (reply.data.size() != x.size() * sizeof(double) ||
          std::memcmp(reply.data.data(), x.data(), reply.data.size()) != 0) {
        std::fprintf(stderr, "wire_flood: the load differs from the store\n");
        return 1;
      }
      std::printf("wire_flood: %zu MiB store %.3f s (%.2f GB/s), load %.3f s (%.2f GB/s)\n", mib,
                  ts, (mib << 20) / ts / 1e9, tl, (mib << 20) / tl / 1e9);
      std::fflush(stdout);
    }
  } else {
    std::fprintf(stderr, "wire_flood: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wire_flood: %s\n", e.what());
    return 1;
  }
}
