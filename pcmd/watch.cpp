// watch.cpp — the watch port's thread (see watch.h).
#include "watch.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "auth.h"
#include "error.h"
#include "log.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::daemon {

namespace {

void keepalive(int fd) {
  // A host that vanishes without closing its connections is noticed within about 10 s (idle 4 s,
  // then 3 probes 2 s apart; answered by the peer's kernel, so a loaded host is not mistaken for
  // a dead one). It was 19 s (10 + 3 x 3): most of a lost host's recovery time (bench_recovery).
  int on = 1, idle = 4, intvl = 2, cnt = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

}  // namespace

struct Watcher::Conn {
  int fd = -1;
  std::string buf;
  std::string nonce;  // the challenge sent on connecting
  bool greeted = false;
  bool bye = false;
  std::string job, host;
  long pid = 0;
  long long incarnation = 0;
  std::chrono::steady_clock::time_point deadline;
  bool done = false;  // to be closed
};

Watcher::Watcher(const std::string& address, std::string secret)
    : secret_(std::move(secret)), log_(logger("pcmd", spdlog::level::info)) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* list = nullptr;
  const char* node = address.empty() || address == "*" ? nullptr : address.c_str();
  if (int rc = ::getaddrinfo(node, "0", &hints, &list); rc != 0 || !list)
    fail(PCM_ERR_CONFIG, "watch port: cannot resolve '{}': {}", address, ::gai_strerror(rc));
  listen_fd_ = ::socket(list->ai_family, list->ai_socktype | SOCK_CLOEXEC, list->ai_protocol);
  int one = 1;
  if (listen_fd_ >= 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listen_fd_ < 0 || ::bind(listen_fd_, list->ai_addr, list->ai_addrlen) != 0 ||
      ::listen(listen_fd_, 128) != 0) {
    int err = errno;
    ::freeaddrinfo(list);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    fail(PCM_ERR_CONFIG, "watch port: cannot listen on {}: {}", address, std::strerror(err));
  }
  ::freeaddrinfo(list);
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  char host[NI_MAXHOST] = {0}, port[NI_MAXSERV] = {0};
  ::getnameinfo(reinterpret_cast<sockaddr*>(&sa), len, host, sizeof host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
  endpoint_ = sa.ss_family == AF_INET6 ? fmt::format("tcp://[{}]:{}", host, port)
                                       : fmt::format("tcp://{}:{}", host, port);
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 256)
    max_conns_ = std::min<std::size_t>(rl.rlim_cur - 128, 1 << 20);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    fail(PCM_ERR_CONFIG, "watch port: eventfd: {}", std::strerror(errno));
  }
  thread_ = std::thread([this] { loop(); });
}

Watcher::~Watcher() {
  std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(wake_fd_);
  ::close(listen_fd_);
}

std::vector<WatchEvent> Watcher::take_events() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<WatchEvent> out;
  out.swap(events_);
  return out;
}

void Watcher::emit(WatchEvent e) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(e));
}

void Watcher::handle_readable(Conn& c) {
  char chunk[512];
  ssize_t n = ::recv(c.fd, chunk, sizeof chunk, 0);
  if (n > 0) {
    if (c.greeted) {
      // After the hello only "bye\n" may come; anything else is ignored (bounded: not kept).
      c.buf.append(chunk, static_cast<std::size_t>(n));
      if (c.buf.find("bye\n") != std::string::npos) {
        c.bye = true;
        c.done = true;
        emit({WatchEvent::Kind::kBye, c.job, c.pid, c.host, c.incarnation, ""});
      } else if (c.buf.size() > 16) {
        c.buf.erase(0, c.buf.size() - 4);
      }
      return;
    }
    c.buf.append(chunk, static_cast<std::size_t>(n));
    auto nl = c.buf.find('\n');
    if (nl == std::string::npos) {
      if (c.buf.size() > kMaxHello) {
        if (refusals_.allow(*log_))
          log_->warn("watch port: a hello longer than {} bytes; closed", kMaxHello);
        c.done = true;
      }
      return;
    }
    std::istringstream words(c.buf.substr(0, nl));
    std::string magic, version, proof, job, pid, host, incarnation, extra;
    words >> magic >> version >> proof >> job >> pid >> host >> incarnation;
    auto number = [](const std::string& s, std::size_t max_digits) {
      return !s.empty() && s.size() <= max_digits && std::all_of(s.begin(), s.end(), ::isdigit);
    };
    bool ok = magic == "PCM-WATCH" && version == "2" && !(words >> extra) &&
              proto::valid_name(job) && proto::valid_host(host) && number(pid, 9) &&
              number(incarnation, 18);
    if (!ok || !proto::same_secret(
                   proof, watch_proof(secret_, c.nonce,
                                      fmt::format("{} {} {} {}", job, pid, host, incarnation)))) {
      if (refusals_.allow(*log_))
        log_->warn("watch port: {} hello; closed", ok ? "a wrongly signed" : "a malformed");
      c.done = true;
      return;
    }
    c.greeted = true;
    c.job = job;
    c.host = host;
    c.pid = std::stol(pid);
    c.incarnation = std::stoll(incarnation);
    c.buf.erase(0, nl + 1);
    emit({WatchEvent::Kind::kHello, c.job, c.pid, c.host, c.incarnation, ""});
    if (c.buf.find("bye\n") != std::string::npos) {
      c.bye = true;
      c.done = true;
      emit({WatchEvent::Kind::kBye, c.job, c.pid, c.host, c.incarnation, ""});
    }
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  // EOF or an error: the process is gone.
  c.done = true;
  if (c.greeted && !c.bye)
    emit({WatchEvent::Kind::kLost, c.job, c.pid, c.host, c.incarnation,
          n == 0 ? "connection closed" : std::strerror(errno)});
}

void Watcher::loop() {
  std::vector<std::unique_ptr<Conn>> conns;
  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : conns) fds.push_back({c->fd, POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), 1000);
    if (rc < 0 && errno != EINTR) break;
    if (fds[0].revents) break;
    refusals_.tick(*log_);
    auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      short ev = fds[i + 2].revents;
      if (ev & (POLLIN | POLLHUP | POLLERR)) handle_readable(c);
      if (!c.greeted && !c.done && now > c.deadline) {
        if (refusals_.allow(*log_))
          log_->warn("watch port: no hello within {} s; closed", kHelloTimeout.count());
        c.done = true;
      }
    }
    conns.erase(std::remove_if(conns.begin(), conns.end(),
                               [](const std::unique_ptr<Conn>& c) {
                                 if (c->done) ::close(c->fd);
                                 return c->done;
                               }),
                conns.end());
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        if (conns.size() >= max_conns_) {
          if (refusals_.allow(*log_))
            log_->warn("watch port: {} connections already; one refused", conns.size());
          ::close(fd);
        } else {
          keepalive(fd);
          auto c = std::make_unique<Conn>();
          c->fd = fd;
          c->nonce = random_hex(16);
          const std::string challenge = "PCM-WATCH 2 " + c->nonce + "\n";
          // A fresh socket's buffer takes these few bytes at once; one that does not is closed.
          if (::send(fd, challenge.data(), challenge.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
              static_cast<ssize_t>(challenge.size()))
            c->done = true;
          c->deadline = now + kHelloTimeout;
          conns.push_back(std::move(c));
        }
      }
    }
    open_.store(conns.size());
  }
  for (auto& c : conns) ::close(c->fd);
}

}  // namespace pcm::daemon
