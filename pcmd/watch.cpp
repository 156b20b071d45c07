// watch.cpp — the watch port's thread (see watch.h).
#include "watch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <unordered_map>

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

// How many connections the watch port takes: the file-descriptor limit, raised to its hard limit
// first (every process of every job holds one), less room for pcmd's other files and sockets.
std::size_t connection_limit(spdlog::logger& log) {
  constexpr rlim_t kReserve = 256;  // the request socket's peers, the data files, the journal
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024 - kReserve;
  if (rl.rlim_cur < rl.rlim_max) {
    const rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur != was)
      log.info("file descriptors: soft limit raised from {} to {} (the hard limit)", was,
               rl.rlim_cur);
  }
  const std::size_t n = rl.rlim_cur > 2 * kReserve ? rl.rlim_cur - kReserve : rl.rlim_cur / 2;
  log.info(
      "watch port: up to {} processes (file-descriptor limit {}; raise it with ulimit -n "
      "for more)",
      n, rl.rlim_cur);
  return std::min<std::size_t>(n, 1 << 20);
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
  listen_fd_ = ::socket(list->ai_family, list->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        list->ai_protocol);
  int one = 1;
  if (listen_fd_ >= 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listen_fd_ < 0 || ::bind(listen_fd_, list->ai_addr, list->ai_addrlen) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0) {
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
  max_conns_ = connection_limit(*log_);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    fail(PCM_ERR_CONFIG, "watch port: eventfd: {}", std::strerror(errno));
  }
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  thread_ = std::thread([this] { loop(); });
}

Watcher::~Watcher() {
  std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(wake_fd_);
  ::close(listen_fd_);
  if (spare_fd_ >= 0) ::close(spare_fd_);
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

// One thread, epoll: each wake-up costs what is ready, not what is open (a poll() of every
// connection per event made N hellos cost N^2).
void Watcher::loop() {
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    log_->error("watch port: epoll_create1: {}; no process is watched", std::strerror(errno));
    return;
  }
  for (int fd : {wake_fd_, listen_fd_}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  }
  std::vector<epoll_event> ready(1024);
  auto next_sweep = std::chrono::steady_clock::now();
  bool stop = false;
  while (!stop) {
    const int n = ::epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 1000);
    if (n < 0 && errno != EINTR) break;
    refusals_.tick(*log_);
    bool accept_ready = false;
    for (int i = 0; i < n; ++i) {
      const int fd = ready[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd_) stop = true;
      if (fd == listen_fd_) accept_ready = true;
      if (fd == wake_fd_ || fd == listen_fd_) continue;
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      handle_readable(*it->second);
      if (it->second->done) {
        ::close(fd);  // leaves the epoll set with it
        conns.erase(it);
      }
    }
    if (stop) break;
    const auto now = std::chrono::steady_clock::now();
    if (accept_ready) accept_all(ep, conns, now);
    if (now >= next_sweep) {  // hellos overdue, four times a second at most
      next_sweep = now + std::chrono::milliseconds(250);
      for (auto it = conns.begin(); it != conns.end();) {
        Conn& c = *it->second;
        if (!c.greeted && !c.done && now > c.deadline) {
          if (refusals_.allow(*log_))
            log_->warn("watch port: no hello within {} s; closed", kHelloTimeout.count());
          c.done = true;
        }
        if (c.done) {
          ::close(c.fd);
          it = conns.erase(it);
        } else {
          ++it;
        }
      }
    }
    open_.store(conns.size());
  }
  for (auto& [fd, c] : conns) ::close(fd);
  ::close(ep);
}

// Every connection waiting to be accepted. Out of file descriptors, the one waiting is taken with
// the spare descriptor and closed at once (the process hears its refusal rather than waiting),
// and said so: pcmd never refuses in silence.
void Watcher::accept_all(int ep, std::unordered_map<int, std::unique_ptr<Conn>>& conns,
                         std::chrono::steady_clock::time_point now) {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
      ::close(spare_fd_);
      fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) ::close(fd);
      spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;  // none was waiting after all
      ++refused_;
      if (refusals_.allow(*log_))
        log_->warn(
            "watch port: out of file descriptors with {} connections open (raise pcmd's "
            "limit, ulimit -n): a process's connection refused ({} so far)",
            conns.size(), refused_.load());
      continue;
    }
    if (fd < 0) return;  // EAGAIN: none left (or an error the next wake-up meets again)
    if (conns.size() >= max_conns_) {
      ++refused_;
      if (refusals_.allow(*log_))
        log_->warn(
            "watch port: {} connections already (the limit, from the file-descriptor "
            "limit); a process's connection refused ({} so far)",
            conns.size(), refused_.load());
      ::close(fd);
      continue;
    }
    keepalive(fd);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->nonce = random_hex(16);
    const std::string challenge = watch_challenge(c->nonce);
    // A fresh socket's buffer takes these few bytes at once; one that does not is closed.
    if (::send(fd, challenge.data(), challenge.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
        static_cast<ssize_t>(challenge.size())) {
      ::close(fd);
      continue;
    }
    c->deadline = now + kHelloTimeout;
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.fd = fd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    conns.emplace(fd, std::move(c));
  }
}

}  // namespace pcm::daemon
