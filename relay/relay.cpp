// relay.cpp — pcm-relay's forwarding loop (relay.h): one thread, poll(), non-blocking sockets,
// two bounded buffers per connection.
#include "relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "error.h"
#include "log.h"
#include "mux.h"
#include "pcm_types.h"

namespace pcm::relay {

namespace {

using Clock = std::chrono::steady_clock;

int parse_port(const std::string& text, const std::string& spec, bool zero_ok) {
  try {
    std::size_t used = 0;
    int p = std::stoi(text, &used);
    if (used == text.size() && p >= (zero_ok ? 0 : 1) && p <= 65535) return p;
  } catch (const std::exception&) {
  }
  fail(PCM_ERR_ARG, "relay port '{}': ports are numbers from {} to 65535", spec, zero_ok ? 0 : 1);
}

// The first address getaddrinfo gives for host:port (passive: for bind).
sockaddr_storage resolve(const std::string& host, int port, bool passive, socklen_t& len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() || host == "*" ? nullptr : host.c_str(), service.c_str(),
                         &hints, &list);
  if (rc != 0 || !list)
    fail(PCM_ERR_CONFIG, "relay: cannot resolve '{}': {}", host, ::gai_strerror(rc));
  sockaddr_storage sa{};
  std::memcpy(&sa, list->ai_addr, list->ai_addrlen);
  len = list->ai_addrlen;
  ::freeaddrinfo(list);
  return sa;
}

std::string address_text(const sockaddr_storage& sa) {
  char host[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  if (sa.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    port = ntohs(in.sin_port);
    return fmt::format("{}:{}", host, port);
  }
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
  ::inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
  return fmt::format("[{}]:{}", host, ntohs(in6.sin6_port));
}

// A listening socket on host:port; port_out: the port bound.
int listen_on(const std::string& host, int port, int& port_out) {
  socklen_t len = 0;
  sockaddr_storage at = resolve(host, port, true, len);
  int fd = ::socket(at.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&at), len) != 0 || ::listen(fd, 128) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    fail(PCM_ERR_CONFIG, "relay: cannot listen on {}:{}: {}", host, port, std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  port_out = bound.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port)
                                        : ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
  return fd;
}

void tune(int fd, const RelayOptions& o) {
  int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // small requests go at once
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &o.keepalive_idle_s, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &o.keepalive_interval_s, sizeof(int));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &o.keepalive_count, sizeof(int));
}

// Closes fd; reset: with an RST (linger 0), so that the peer learns of a reset as such.
void close_fd(int fd, bool reset) {
  if (fd < 0) return;
  if (reset) {
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  ::close(fd);
}

// A bounded buffer: bytes go in at the tail and out at the head.
struct Buffer {
  std::vector<char> data;
  std::size_t head = 0, tail = 0;
  std::size_t used() const { return tail - head; }
  std::size_t space() const { return data.size() - tail; }
  void compact() {
    if (head == tail) {
      head = tail = 0;
    } else if (head > 0 && space() == 0) {
      std::memmove(data.data(), data.data() + head, used());
      tail -= head;
      head = 0;
    }
  }
};

enum class Io { kOk, kEof, kError };

// Reads from fd into b until it would block or b is full.
Io fill(int fd, Buffer& b, std::uint64_t& count, int& err) {
  while (b.space() > 0) {
    ssize_t n = ::recv(fd, b.data.data() + b.tail, b.space(), 0);
    if (n > 0) {
      b.tail += static_cast<std::size_t>(n);
      count += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n == 0) return Io::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kOk;
    err = errno;
    return Io::kError;
  }
  return Io::kOk;
}

// Writes b to fd until it would block or b is empty.
Io drain(int fd, Buffer& b, int& err) {
  while (b.used() > 0) {
    ssize_t n = ::send(fd, b.data.data() + b.head, b.used(), MSG_NOSIGNAL);
    if (n > 0) {
      b.head += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    err = n < 0 ? errno : EPIPE;
    return Io::kError;
  }
  b.compact();
  return Io::kOk;
}

}  // namespace

RelayRoute parse_relay_port(const std::string& spec, const std::string& listen_host,
                            const std::string& to_host) {
  RelayRoute r;
  r.listen_host = listen_host;
  r.to_host = to_host;
  auto colon = spec.find(':');
  r.listen_port = parse_port(spec.substr(0, colon), spec, true);
  r.to_port =
      colon == std::string::npos ? r.listen_port : parse_port(spec.substr(colon + 1), spec, false);
  if (r.to_port == 0) fail(PCM_ERR_ARG, "relay port '{}': port 0 needs a :TOPORT", spec);
  return r;
}

struct Relay::Listener {
  RelayRoute route;
  int fd = -1;
  int port = 0;
  sockaddr_storage to{};
  socklen_t to_len = 0;
  int header_port = 0;  // --mux: the port the header names
  bool demux = false;   // --demux: the one port; the header picks the target
  ~Listener() { close_fd(fd, false); }
};

struct Relay::Pair {
  std::uint64_t id = 0;
  const Listener* via = nullptr;     // accepted on
  const Listener* target = nullptr;  // connected to (--demux: once the header is read)
  std::string peer;
  int client = -1, upstream = -1;
  bool awaiting_header = false;  // --demux
  MuxHeader header{};
  std::size_t header_got = 0;
  bool connecting = false;
  Clock::time_point connect_started;
  bool client_eof = false, upstream_eof = false;    // their FIN came
  bool client_shut = false, upstream_shut = false;  // ours went
  bool dead = false;
  Clock::time_point opened = Clock::now();
  Buffer up, down;  // client -> pcmd, pcmd -> client
  std::uint64_t bytes_up = 0, bytes_down = 0;
};

Relay::Relay(RelayOptions options, std::shared_ptr<spdlog::logger> log)
    : options_(std::move(options)), log_(std::move(log)) {
  if (options_.routes.empty()) fail(PCM_ERR_ARG, "relay: no port to forward");
  const bool mux = options_.mux_port > 0, demux = options_.demux_port >= 0;
  if (mux && demux) fail(PCM_ERR_ARG, "relay: --mux and --demux exclude each other");
  for (const auto& r : options_.routes) {
    auto l = std::make_unique<Listener>();
    l->route = r;
    l->to = resolve(r.to_host, mux ? options_.mux_port : r.to_port, false, l->to_len);
    l->header_port = mux ? r.to_port : 0;
    if (!demux) {
      l->fd = listen_on(r.listen_host, r.listen_port, l->port);
      listeners_.push_back(std::move(l));
      continue;
    }
    for (const auto& t : targets_)
      if (t->route.listen_port == r.listen_port || r.listen_port == 0)
        fail(PCM_ERR_ARG, "relay --demux: port {} twice or 0", r.listen_port);
    l->port = r.listen_port;
    targets_.push_back(std::move(l));
  }
  if (demux) {
    auto d = std::make_unique<Listener>();
    d->route = options_.routes.front();
    d->demux = true;
    d->fd = listen_on(d->route.listen_host, options_.demux_port, d->port);
    listeners_.push_back(std::move(d));
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) fail(PCM_ERR_CONFIG, "relay: eventfd: {}", std::strerror(errno));
}

Relay::~Relay() {
  for (auto& p : pairs_)
    if (!p->dead) close_pair(*p, "relay ends", false);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

std::vector<int> Relay::listen_ports() const {
  std::vector<int> ports;
  for (const auto& l : listeners_) ports.push_back(l->port);
  return ports;
}

void Relay::stop() {
  stopping_.store(true);
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);  // async-signal-safe
}

std::string Relay::summary() const {
  const auto& c = counters_;
  return fmt::format(
      "{} connections accepted, {} refused (limit {}), {} bad headers, {} could not reach pcmd, "
      "{} closed, {} open; {} bytes up, {} bytes down",
      c.accepted.load(), c.refused.load(), options_.max_connections, c.bad_headers.load(),
      c.failed.load(), c.closed.load(), c.open.load(), c.bytes_up.load(), c.bytes_down.load());
}

void Relay::accept_from(Listener& l) {
  for (;;) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    int fd =
        ::accept4(l.fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        log_->warn("accept on port {}: {}", l.port, std::strerror(errno));
      return;
    }
    const std::string peer = address_text(from);
    if (counters_.open.load() >= options_.max_connections) {
      ++counters_.refused;
      log_->warn("connection from {} on port {} refused: {} open already", peer, l.port,
                 options_.max_connections);
      close_fd(fd, true);
      continue;
    }
    auto p = std::make_unique<Pair>();
    p->id = next_id_++;
    p->via = &l;
    p->peer = peer;
    p->client = fd;
    p->up.data.resize(options_.buffer_bytes);
    p->down.data.resize(options_.buffer_bytes);
    ++counters_.accepted;
    ++counters_.open;
    tune(fd, options_);
    p->awaiting_header = l.demux;
    if (!l.demux) connect_upstream(*p, l);
    pairs_.push_back(std::move(p));
  }
}

// Opens p's connection to t's target; --mux: the header goes first.
void Relay::connect_upstream(Pair& p, const Listener& t) {
  p.target = &t;
  p.connecting = true;
  p.connect_started = Clock::now();
  if (t.header_port > 0) {
    const MuxHeader h = encode_mux_header(t.header_port);
    std::memcpy(p.up.data.data() + p.up.tail, h.data(), h.size());
    p.up.tail += h.size();
  }
  p.upstream = ::socket(t.to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int rc = p.upstream < 0
               ? -1
               : ::connect(p.upstream, reinterpret_cast<const sockaddr*>(&t.to), t.to_len);
  const int err = errno;
  std::string how;
  if (t.header_port > 0) how = fmt::format(" (mux: port {})", t.header_port);
  if (p.via->demux) how = fmt::format(" (demux: port {})", t.port);
  log_->info("#{} opened: {} -> port {}{} -> {}", p.id, p.peer, p.via->port, how,
             address_text(t.to));
  if (p.upstream >= 0) tune(p.upstream, options_);
  if (rc == 0) {
    p.connecting = false;
  } else if (err != EINPROGRESS) {
    ++counters_.failed;
    close_pair(p, fmt::format("cannot reach pcmd: {}", std::strerror(err)), true);
  }
}

// --demux: reads the header (no byte beyond it), then connects to the port it names.
void Relay::read_header(Pair& p) {
  while (p.header_got < p.header.size()) {
    ssize_t n = ::recv(p.client, p.header.data() + p.header_got, p.header.size() - p.header_got, 0);
    if (n > 0) {
      p.header_got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return refuse_header(p, "closed before its header");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    return refuse_header(p, std::strerror(errno));
  }
  std::string why;
  const int port = decode_mux_header(p.header, why);
  for (const auto& t : targets_)
    if (port > 0 && t->route.listen_port == port) {
      p.awaiting_header = false;
      return connect_upstream(p, *t);
    }
  if (why.empty()) why = fmt::format("header names port {}, not one of --port", port);
  refuse_header(p, why);
}

void Relay::refuse_header(Pair& p, const std::string& why) {
  ++counters_.bad_headers;
  log_->warn("#{} from {} on port {} refused: {}", p.id, p.peer, p.via->port, why);
  close_pair(p, "bad header", true);
}

void Relay::close_pair(Pair& p, const std::string& why, bool reset) {
  if (p.dead) return;
  p.dead = true;
  close_fd(p.client, reset);
  close_fd(p.upstream, reset);
  p.client = p.upstream = -1;
  --counters_.open;
  ++counters_.closed;
  const double s = std::chrono::duration<double>(Clock::now() - p.opened).count();
  log_->info("#{} closed ({}): {} bytes up, {} bytes down, {:.3f} s", p.id, why, p.bytes_up,
             p.bytes_down, s);
}

// Moves what can be moved between the pair's sockets; closes the pair when both directions are
// over, or either socket failed.
void Relay::pump(Pair& p, short cev, short uev) {
  if (p.awaiting_header) {
    if (cev & (POLLIN | POLLHUP | POLLERR)) read_header(p);
    return;
  }
  int err = 0;
  if (p.connecting) {
    if (!(uev & (POLLOUT | POLLERR | POLLHUP))) return;
    socklen_t len = sizeof err;
    ::getsockopt(p.upstream, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      ++counters_.failed;
      return close_pair(p, fmt::format("cannot reach pcmd: {}", std::strerror(err)), true);
    }
    p.connecting = false;
  }
  std::uint64_t got_up = 0, got_down = 0;
  Io io = Io::kOk;
  if ((cev & (POLLIN | POLLHUP | POLLERR)) && !p.client_eof) {
    io = fill(p.client, p.up, got_up, err);
    if (io == Io::kEof) p.client_eof = true;
    if (io == Io::kError) return close_pair(p, fmt::format("client: {}", std::strerror(err)), true);
  }
  if ((uev & (POLLIN | POLLHUP | POLLERR)) && !p.upstream_eof) {
    io = fill(p.upstream, p.down, got_down, err);
    if (io == Io::kEof) p.upstream_eof = true;
    if (io == Io::kError) return close_pair(p, fmt::format("pcmd: {}", std::strerror(err)), true);
  }
  p.bytes_up += got_up;
  p.bytes_down += got_down;
  counters_.bytes_up += got_up;
  counters_.bytes_down += got_down;
  if (drain(p.upstream, p.up, err) == Io::kError)
    return close_pair(p, fmt::format("pcmd: {}", std::strerror(err)), true);
  if (drain(p.client, p.down, err) == Io::kError)
    return close_pair(p, fmt::format("client: {}", std::strerror(err)), true);
  // A half-close is passed on once everything before it has been.
  if (p.client_eof && p.up.used() == 0 && !p.upstream_shut) {
    ::shutdown(p.upstream, SHUT_WR);
    p.upstream_shut = true;
  }
  if (p.upstream_eof && p.down.used() == 0 && !p.client_shut) {
    ::shutdown(p.client, SHUT_WR);
    p.client_shut = true;
  }
  if (p.client_shut && p.upstream_shut) close_pair(p, "both ends closed", false);
}

void Relay::run() {
  std::vector<pollfd> fds;
  auto next_stats = Clock::now() + options_.stats_every;
  std::string last_stats;
  while (!stopping_.load()) {
    if (options_.stats_every.count() > 0 && Clock::now() >= next_stats) {
      next_stats = Clock::now() + options_.stats_every;
      if (std::string s = summary(); s != last_stats) log_->info("{}", last_stats = s);
    }
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const auto& l : listeners_) fds.push_back({l->fd, POLLIN, 0});
    auto deadline = Clock::now() + std::chrono::seconds(1);
    for (const auto& p : pairs_) {
      short c = 0, u = 0;
      if (!p->client_eof && p->up.space() > 0) c |= POLLIN;
      if (p->down.used() > 0) c |= POLLOUT;
      if (p->awaiting_header) {
        deadline = std::min(deadline, p->opened + options_.header_timeout);
      } else if (p->connecting) {
        u = POLLOUT;
        deadline = std::min(deadline, p->connect_started + options_.connect_timeout);
      } else {
        if (!p->upstream_eof && p->down.space() > 0) u |= POLLIN;
        if (p->up.used() > 0) u |= POLLOUT;
      }
      // Nothing wanted: not polled at all (a socket that hung up would wake poll at once).
      fds.push_back({c ? p->client : -1, c, 0});
      fds.push_back({u ? p->upstream : -1, u, 0});
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait.count())));
    if (n < 0 && errno != EINTR) {
      log_->error("poll: {}", std::strerror(errno));
      break;
    }
    if (stopping_.load()) break;
    const std::size_t first = 1 + listeners_.size();
    const std::size_t old_pairs = pairs_.size();  // accept adds after these
    for (std::size_t i = 0; i < old_pairs; ++i) {
      Pair& p = *pairs_[i];
      if (!p.dead) pump(p, fds[first + 2 * i].revents, fds[first + 2 * i + 1].revents);
      if (!p.dead && p.awaiting_header && Clock::now() >= p.opened + options_.header_timeout)
        refuse_header(p, "no header in time");
      if (!p.dead && p.connecting && Clock::now() >= p.connect_started + options_.connect_timeout) {
        ++counters_.failed;
        close_pair(p, "cannot reach pcmd: connect timed out", true);
      }
    }
    for (std::size_t i = 0; i < listeners_.size(); ++i)
      if (fds[1 + i].revents & POLLIN) accept_from(*listeners_[i]);
    pairs_.erase(
        std::remove_if(pairs_.begin(), pairs_.end(), [](const auto& p) { return p->dead; }),
        pairs_.end());
  }
  for (auto& p : pairs_) close_pair(*p, "relay stops", false);
  pairs_.clear();
  for (auto& l : listeners_) {
    close_fd(l->fd, false);
    l->fd = -1;
  }
}

}  // namespace pcm::relay
