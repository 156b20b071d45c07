// probe.cpp — TCP round-trip measurement and the thread that keeps the measurements fresh.
#include "probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace pcm::common {

std::optional<double> tcp_round_trip_ms(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &list) != 0 || !list)
    return std::nullopt;
  std::optional<double> result;
  const addrinfo* a = list;  // the first address, as a connecting MPI process would use
  int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
  if (fd >= 0) {
    auto t0 = std::chrono::steady_clock::now();
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    bool answered = rc == 0 || errno == ECONNREFUSED;
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, timeout_ms) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        answered = err == 0 || err == ECONNREFUSED;  // a SYN-ACK or an RST: a round trip
      }
    }
    if (answered)
      result =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ::close(fd);
  }
  ::freeaddrinfo(list);
  return result;
}

RttProber::RttProber(int port, std::chrono::milliseconds period, int timeout_ms)
    : port_(port), period_(period), timeout_ms_(timeout_ms), thread_([this] { loop(); }) {}

RttProber::~RttProber() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void RttProber::watch(const std::string& host) {
  if (port_ <= 0) return;  // measuring is off
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hosts_.insert(host);
    due_.insert(host);
  }
  wake_.notify_all();
}

void RttProber::remeasure(const std::string& host) {
  if (port_ <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!hosts_.count(host)) return;
    results_.erase(host);
    due_.insert(host);
  }
  wake_.notify_all();
}

bool RttProber::measured(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return results_.count(host) > 0;
}

void RttProber::forget(const std::string& host) {
  std::lock_guard<std::mutex> lock(mutex_);
  hosts_.erase(host);
  due_.erase(host);
  results_.erase(host);
}

std::optional<double> RttProber::rtt_ms(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = results_.find(host);
  return it == results_.end() ? std::nullopt : it->second;
}

void RttProber::loop() {
  auto next_round = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_until(lock, next_round, [&] { return stop_ || !due_.empty(); });
    if (stop_) break;
    std::vector<std::string> todo;
    if (!due_.empty()) {
      todo.assign(due_.begin(), due_.end());
      due_.clear();
    } else {
      todo.assign(hosts_.begin(), hosts_.end());
      next_round = std::chrono::steady_clock::now() + period_;
    }
    for (const auto& host : todo) {
      lock.unlock();  // measuring takes up to 3 timeouts: never hold the lock meanwhile
      std::vector<double> tries;
      for (int i = 0; i < 3; ++i)
        if (auto t = tcp_round_trip_ms(host, port_, timeout_ms_)) tries.push_back(*t);
      std::optional<double> median;
      if (!tries.empty()) {
        std::sort(tries.begin(), tries.end());
        median = tries[tries.size() / 2];
      }
      lock.lock();
      if (stop_) return;
      if (hosts_.count(host)) results_[host] = median;
    }
  }
}

}  // namespace pcm::common
