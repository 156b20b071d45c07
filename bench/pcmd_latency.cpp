// pcmd_latency.cpp — benchmark client: how long pcmd takes to answer the small requests other
// jobs make (ping, status, a registration, a poll) while something else runs, one after the
// other with no pause, until a file exists or a time is up.
// Usage: pcmd_latency CONFIG SECONDS [STOPFILE]
// Prints one line per kind of request: count, failures (no answer within 5 s, or refused),
// median, 99th percentile and maximum in milliseconds.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "client.h"
#include "config.h"
#include "error.h"

using Clock = std::chrono::steady_clock;
using pcm::proto::json;

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: pcmd_latency CONFIG SECONDS [STOPFILE]\n");
    return 2;
  }
  const pcm::common::Config config = pcm::common::read_config(argv[1]);
  const double seconds = std::atof(argv[2]);
  const std::string stop = argc > 3 ? argv[3] : "";
  zmq::context_t ctx(1);
  pcm::common::Client client(ctx, config.endpoint, config.secret, config.curve);
  const std::string job = fmt::format("latency-{}", ::getpid());
  client.request({{"op", "register"}, {"job", job}, {"size", 1}, {"hosts", {"localhost"}}});
  std::map<std::string, std::vector<double>> ms;
  std::map<std::string, int> failed;
  const auto t0 = Clock::now();
  for (long n = 0;; ++n) {
    if (std::chrono::duration<double>(Clock::now() - t0).count() > seconds) break;
    if (!stop.empty() && ::access(stop.c_str(), F_OK) == 0) break;
    std::string op;
    json req;
    switch (n % 4) {
      case 0:
        op = "ping";
        req = {{"op", "ping"}};
        break;
      case 1:
        op = "status";
        req = {{"op", "status"}};
        break;
      case 2:
        op = "poll";
        req = {{"op", "poll"}, {"job", job}, {"iteration", n}};
        break;
      default:  // a registration of a job that finishes at once
        op = "register";
        req = {{"op", "register"},
               {"job", fmt::format("{}-{}", job, n)},
               {"size", 1},
               {"hosts", {"localhost"}}};
    }
    const auto t = Clock::now();
    try {
      client.request(req, nullptr, 0, 5000);
      ms[op].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
      if (op == "register")
        client.request({{"op", "finished"}, {"job", req["job"]}}, nullptr, 0, 5000);
    } catch (const pcm::Error& e) {
      ++failed[op];
      fmt::print(stderr, "pcmd_latency: {} failed: {}\n", op, e.what());
    }
  }
  client.request({{"op", "finished"}, {"job", job}}, nullptr, 0, 5000);
  for (auto& [op, v] : ms) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
    };
    fmt::print(
        "{:<9} {:6} answered {:3} failed  median {:7.2f} ms  p99 {:7.2f} ms  max {:8.2f} ms\n", op,
        v.size(), failed[op], at(0.5), at(0.99), v.back());
  }
  for (const auto& [op, n] : failed)
    if (!ms.count(op)) fmt::print("{:<9} {:6} answered {:3} failed\n", op, 0, n);
  return 0;
}
