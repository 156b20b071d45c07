// daemon_link.cpp — requests to pcmd and rank 0's asynchronous poll (see daemon_link.h).
#include "daemon_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>
#include <zmq_addon.hpp>

#include "auth.h"
#include "error.h"
#include "mpi_util.h"
#include "ops.h"
#include "pcm_types.h"

namespace pcm::lib {

using proto::json;

void DaemonLink::open(const Config& config, const std::string& config_path, long poll_interval_ms,
                      int reconnect_ms) {
  config_path_ = config_path;
  endpoint_ = config.endpoint;
  watch_endpoint_ = config.watch;
  secret_ = config.secret;
  pid_ = config.pid;
  curve_ = config.curve;
  poll_interval_ms_ = poll_interval_ms;
  reconnect_ms_ = reconnect_ms;
  context_.emplace(1);
}

void DaemonLink::close() {
  if (watch_fd_ >= 0) {
    static const char kBye[] = "bye\n";
    (void)!::send(watch_fd_, kBye, sizeof kBye - 1, MSG_NOSIGNAL);
    ::close(watch_fd_);
    watch_fd_ = -1;
  }
  client_.reset();
  poller_ = zmq::socket_t();
  context_.reset();
}

namespace {

// Whether p's events came before deadline (now_ms()'s clock); a signal (a stop's, PCM_STOP_SIGNALS)
// does not cut the wait short.
bool poll_within(pollfd& p, std::int64_t deadline) {
  for (;;) {
    const std::int64_t left = deadline - now_ms();
    if (left <= 0) return false;
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready >= 0) return ready == 1;
    if (errno != EINTR) return false;
  }
}

// A blocking connect to tcp://HOST:PORT (HOST may be [v6]) within timeout_ms; the socket or -1
// with errno's reason in *why.
int connect_tcp(const std::string& endpoint, int timeout_ms, std::string* why) {
  if (endpoint.rfind("tcp://", 0) != 0) {
    *why = "not a tcp:// endpoint";
    return -1;
  }
  std::string rest = endpoint.substr(6);
  auto colon = rest.rfind(':');
  if (colon == std::string::npos) {
    *why = "no port";
    return -1;
  }
  std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &list); rc != 0 || !list) {
    *why = ::gai_strerror(rc);
    return -1;
  }
  int fd = ::socket(list->ai_family, list->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    list->ai_protocol);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0 && ::connect(fd, list->ai_addr, list->ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      err = poll_within(p, now_ms() + timeout_ms) ? 0 : ETIMEDOUT;
      socklen_t len = sizeof err;
      if (err == 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  ::freeaddrinfo(list);
  if (err != 0) {
    if (fd >= 0) ::close(fd);
    *why = std::strerror(err);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

void DaemonLink::watch(const std::string& job, std::int64_t incarnation, const std::string& host,
                       int timeout_ms) {
  incarnation_ = incarnation;
  if (watch_fd_ >= 0 || !context_) return;
  watch_job_ = job;
  watch_host_ = host;
  watch_timeout_ms_ = timeout_ms;
  if (watch_endpoint_.empty()) {
    plog()->warn(
        "pcmd's configuration has no watch port (an older pcmd?): this process is not "
        "watched");
    return;
  }
  std::string why;
  int fd = connect_tcp(watch_endpoint_, timeout_ms, &why);
  if (fd < 0) {
    plog()->warn("cannot reach pcmd's watch port {} ({}): this process is not watched",
                 watch_endpoint_, why);
    return;
  }
  // pcmd speaks first: "PCM-WATCH 2 NONCE". The hello proves the secret without carrying it.
  std::string challenge;
  const std::int64_t deadline = now_ms() + timeout_ms;
  while (challenge.find('\n') == std::string::npos && challenge.size() < 256) {
    pollfd p{fd, POLLIN, 0};
    char buf[128];
    if (!poll_within(p, deadline)) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    challenge.append(buf, static_cast<std::size_t>(n));
  }
  const std::string nonce = watch_nonce(challenge);
  if (nonce.empty()) {
    plog()->warn("pcmd's watch port {} sent no challenge: this process is not watched",
                 watch_endpoint_);
    ::close(fd);
    return;
  }
  const std::string hello =
      watch_hello(secret_, nonce, job, static_cast<long>(::getpid()), host, incarnation);
  if (::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) {
    plog()->warn("cannot greet pcmd's watch port: {}", std::strerror(errno));
    ::close(fd);
    return;
  }
  watch_fd_ = fd;
}

Reply DaemonLink::request(const json& header, const void* data, std::size_t size, int timeout_ms,
                          int reconnect_ms) {
  if (!context_) fail(PCM_ERR_CONFIG, "no configuration");
  if (reconnect_ms < 0) reconnect_ms = reconnect_ms_;
  json h = header;
  if (incarnation_ > 0) h["incarnation"] = incarnation_;  // pcmd's fence (ops::Fence)
  while (true) {
    if (!client_) client_.emplace(*context_, endpoint_, secret_, curve_);
    try {
      return client_->request(h, data, size, timeout_ms, [this] { return pcmd_gone(); });
    } catch (const Error& e) {
      // pcmd there but slow, or refusing: the caller's business.
      if (e.code() != PCM_ERR_DAEMON || reconnect_ms <= 0 || !pcmd_gone()) throw;
      const std::string op = h.value("op", std::string("?"));
      plog()->warn("pcmd went away while '{}' waited ({}); waiting up to {} ms for a pcmd", op,
                   e.what(), reconnect_ms);
      std::string why;
      if (!reconnect(reconnect_ms, &why))
        fail(PCM_ERR_DAEMON, "pcmd went away during '{}' and none answered within {} ms ({})", op,
             reconnect_ms, why);
      plog()->warn("pcmd (pid {}) answers at {}: sending '{}' again", pid_, endpoint_, op);
      h["retry"] = true;
    }
  }
}

// pcmd never writes on a watch connection: anything to read is its end.
bool DaemonLink::watch_closed() const {
  if (watch_fd_ < 0) return false;
  pollfd p{watch_fd_, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && p.revents != 0;
}

bool DaemonLink::pcmd_gone() {
  if (watch_closed()) return true;
  try {
    const Config c = read_config(config_path_);
    return c.pid != pid_ || c.endpoint != endpoint_;
  } catch (const Error&) {
    return false;  // no file to say otherwise (being rewritten, or removed)
  }
}

bool DaemonLink::adopt_config() {
  Config c;
  try {
    c = read_config(config_path_);
  } catch (const Error&) {
    return false;
  }
  if (c.pid == pid_ && c.endpoint == endpoint_ && c.secret == secret_ &&
      c.curve.server_public == curve_.server_public)
    return false;
  endpoint_ = c.endpoint;
  secret_ = c.secret;
  curve_ = c.curve;
  pid_ = c.pid;
  watch_endpoint_ = c.watch;
  client_.reset();
  if (poller_) reset_poller();
  if (watch_fd_ >= 0) {
    ::close(watch_fd_);  // no bye: the old pcmd (if any is left) may count this process lost
    watch_fd_ = -1;
    watch(watch_job_, incarnation_, watch_host_, watch_timeout_ms_);
  }
  return true;
}

bool DaemonLink::reconnect(int within_ms, std::string* why) {
  const std::int64_t deadline = now_ms() + within_ms;
  *why = "no configuration file naming a pcmd";
  while (true) {
    adopt_config();
    try {
      if (!client_) client_.emplace(*context_, endpoint_, secret_, curve_);
      client_->request(ops::request(ops::Ping{}), nullptr, 0,
                       static_cast<int>(std::clamp<std::int64_t>(deadline - now_ms(), 1, 1000)));
      if (watch_closed()) {
        ::close(watch_fd_);
        watch_fd_ = -1;
      }
      if (watch_fd_ < 0 && !watch_job_.empty())
        watch(watch_job_, incarnation_, watch_host_, watch_timeout_ms_);
      return true;
    } catch (const Error& e) {
      *why = e.what();
    }
    if (now_ms() >= deadline) return false;
    const timespec pause{0, 200 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

void DaemonLink::follow(long pid) {
  if (pid == pid_ || pid == followed_ || !context_) return;
  followed_ = pid;
  if (adopt_config())
    plog()->info("pcmd restarted (pid {} now): this process follows it to {}", pid_, endpoint_);
}

void DaemonLink::reset_poller() {
  poller_ = zmq::socket_t(*context_, zmq::socket_type::dealer);
  poller_.set(zmq::sockopt::linger, 0);
  poller_.set(zmq::sockopt::sndhwm, 4);
  apply_curve(poller_, curve_);
  poller_.connect(endpoint_);
  poll_outstanding_ = false;
}

std::optional<proto::Command> DaemonLink::poll(const std::string& job, std::int64_t iteration,
                                               int world_size) {
  if (!poller_) reset_poller();
  std::optional<proto::Command> command;
  const std::int64_t now = now_ms();
  if (poll_outstanding_) {
    // A reply to a DEALER that mimics REQ: [empty, header]; whatever frames there are.
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(poller_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      // A poll unanswered for a second: if pcmd went away, follow the configuration file to
      // the next one (never waiting for it here).
      if (now - poll_sent_ms_ > 1000 && now - gone_checked_ms_ >= 250 &&
          (gone_checked_ms_ = now, pcmd_gone()) && adopt_config()) {
        plog()->warn("[rank 0] pcmd restarted (pid {} now, at {}); polling it", pid_, endpoint_);
      } else if (now - poll_sent_ms_ > 10000) {
        plog()->warn("[rank 0] pcmd has not answered a poll for 10 s; reconnecting");
        reset_poller();
      }
      return command;
    }
    poll_outstanding_ = false;
    try {
      const zmq::message_t head = frames.size() > 1 ? std::move(frames[1]) : zmq::message_t();
      json reply = proto::decode(head.data(), head.size());
      if (!proto::get_bool(reply, "ok", false)) {
        // Once a minute at most: a process that outlived its run is refused every poll.
        if (refused_logged_ms_ == 0 || now - refused_logged_ms_ >= 60000) {
          refused_logged_ms_ = now;
          plog()->warn("[rank 0] pcmd refused a poll: {}",
                       proto::opt_string(reply, "error", 4096).value_or("?"));
        }
      } else {
        checkpoint_wanted_ = proto::opt_int(reply, "checkpoint", 0, INT64_MAX).value_or(0);
        checkpoint_at_once_ = proto::get_bool(reply, "checkpoint_at_once", false);
        stop_wanted_ = proto::get_bool(reply, "stop", false);
        if (stop_wanted_) stop_why_ = proto::opt_string(reply, "stop_why", 512).value_or("");
        lost_new_ = proto::opt_string(reply, "lost", 256).value_or("");
        if (auto it = reply.find("command"); it != reply.end() && it->is_object())
          command = proto::Command::from_json(*it, world_size);
      }
    } catch (const Error& e) {
      plog()->warn("[rank 0] bad poll reply from pcmd: {}", e.what());
    }
  }
  if (!poll_outstanding_ && now - poll_sent_ms_ >= poll_interval_ms_) {
    ops::Poll poll;
    poll.job = job;
    poll.iteration = iteration;
    if (!profile_.is_null()) poll.profile = std::move(profile_);
    profile_ = nullptr;
    if (schedule_) {
      const auto [cost, interval, mtbf] = *schedule_;
      if (cost >= 0) poll.checkpoint_cost_s = cost;
      if (interval >= 0) poll.checkpoint_interval_s = interval;
      poll.checkpoint_mtbf_s = mtbf;
    }
    json req = ops::request(poll);
    req["v"] = proto::kVersion;
    req["secret"] = secret_;
    if (incarnation_ > 0) req["incarnation"] = incarnation_;
    std::string bytes = proto::encode(req);
    if (poller_.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
        poller_.send(zmq::buffer(bytes), zmq::send_flags::dontwait)) {
      poll_outstanding_ = true;
    }
    poll_sent_ms_ = now;
  }
  return command;
}

}  // namespace pcm::lib
