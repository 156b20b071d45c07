// scale_emu.cpp — the rank emulator (bench/scale.sh): one process that plays the N ranks of a job
// against a real pcmd, over the project's own wire code (common/ops.h, protocol, client, auth):
//   scale_emu N [RANKS_PER_HOST [CONNECTIONS]]
// In order: job A registers (N ranks on N/RANKS_PER_HOST hosts) and a small job B; every rank opens
// its watch connection and says hello; rank 0 polls; a checkpoint: begin, every rank's shard file
// (sparse, 8 MiB) and its shard record (shard_done), the commit; a command (a merge of the last two
// ranks) delivered to rank 0's poll and its report; a lost rank (a watch connection closed without
// "bye"); the restart's registration. Job B's requests run meanwhile on a thread of their own.
// The ranks' requests (shard_done) travel over CONNECTIONS DEALER sockets (default 256; a real
// rank has one connection of its own), all sent at once, as N ranks finishing together would.
// pcmd is the one of $PCM_CONFIG. Prints one CSV line: scale_emu_header() names the columns.
// Exit 3: the file-descriptor limit is too low for N (says which); 1: anything else failed.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "auth.h"
#include "client.h"
#include "config.h"
#include "error.h"
#include "ops.h"
#include "pcm_types.h"
#include "protocol.h"
#include "shard.h"

namespace {

using pcm::proto::json;
using Clock = std::chrono::steady_clock;
namespace ops = pcm::ops;
namespace proto = pcm::proto;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

[[noreturn]] void die(int code, const std::string& what) {
  std::fprintf(stderr, "scale_emu: %s\n", what.c_str());
  std::exit(code);
}

// The soft limit raised to what n connections need, or a clear refusal.
void raise_fd_limit(std::size_t need) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) die(1, "getrlimit failed");
  if (rl.rlim_cur >= need) return;
  if (rl.rlim_max < need)
    die(3, "the ranks need " + std::to_string(need) + " file descriptors; the hard limit is " +
               std::to_string(rl.rlim_max) + " (raise it, or emulate fewer ranks)");
  rl.rlim_cur = need;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) die(3, std::string("setrlimit: ") + strerror(errno));
}

// pcmd's resident and peak memory (kB) and CPU seconds, from /proc.
struct Usage {
  long rss_kb = 0, hwm_kb = 0;
  double cpu_s = 0;
};
Usage usage_of(long pid) {
  Usage u;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) u.rss_kb = std::atol(line.c_str() + 6);
    if (line.rfind("VmHWM:", 0) == 0) u.hwm_kb = std::atol(line.c_str() + 6);
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream after(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && after >> field; ++i)
    if (i >= 14) ticks += std::atof(field.c_str());
  u.cpu_s = ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return u;
}

// Packets the kernel dropped from its per-CPU input backlogs so far (loopback's traffic goes
// through them; net.core.netdev_max_backlog): the second column of /proc/net/softnet_stat, all
// CPUs, the whole machine's.
long long softnet_drops() {
  std::ifstream in("/proc/net/softnet_stat");
  long long sum = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string first, second;
    if (words >> first >> second) sum += std::stoll(second, nullptr, 16);
  }
  return sum;
}

// A request's frames as libpcm's DEALER sends them (daemon_link.cpp): the envelope stamped.
std::string envelope(json header, const pcm::common::Config& cfg, long long incarnation) {
  header["v"] = proto::kVersion;
  header["secret"] = cfg.secret;
  if (incarnation > 0) header["incarnation"] = incarnation;
  return proto::encode(header);
}
void send_dealer(zmq::socket_t& s, const std::string& head, const std::string* data = nullptr) {
  s.send(zmq::message_t(), zmq::send_flags::sndmore);
  s.send(zmq::buffer(head), data ? zmq::send_flags::sndmore : zmq::send_flags::none);
  if (data) s.send(zmq::buffer(*data), zmq::send_flags::none);
}
json recv_dealer(zmq::socket_t& s) {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(s, std::back_inserter(frames)) || frames.size() < 2)
    die(1, "a reply without its header");
  return proto::decode(frames[1].data(), frames[1].size());
}

// ---- the watch connections -------------------------------------------------------------------

struct Watches {
  struct Rank {
    int fd = -1;
    std::string buf;
    bool greeted = false;
  };
  std::vector<Rank> ranks;
  std::size_t greeted = 0, failed = 0;
};

// A rank's connection, from its emulated host's own loopback address (127.1.X.Y, IPv4) as on a
// cluster: 16,384 connections from one source address would have the kernel search its ephemeral
// ports for each connect, which measures the emulator's machine, not pcmd.
int connect_nonblocking(const addrinfo* a, int host) {
  int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
  if (fd < 0) die(1, std::string("socket: ") + strerror(errno));
  if (a->ai_family == AF_INET) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr =
        htonl((127u << 24) | (1u << 16) | static_cast<std::uint32_t>(host % 65000 + 1));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0)
      die(1, std::string("bind to a loopback address: ") + strerror(errno));
  }
  if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS)
    die(1, std::string("connect to the watch port: ") + strerror(errno));
  return fd;
}

// Every rank connects (at most `window` waiting for their challenge at a time) and answers its
// challenge with its hello; returns when all have sent theirs.
void hellos(Watches& w, int n, const pcm::common::Config& cfg, const std::string& job,
            long long incarnation, int per_host, std::size_t window) {
  const std::string ep = cfg.watch.substr(6);
  const auto colon = ep.rfind(':');
  addrinfo hints{}, *list = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(ep.substr(0, colon).c_str(), ep.substr(colon + 1).c_str(), &hints, &list) != 0)
    die(1, "cannot resolve the watch port " + cfg.watch);
  const int ep_fd = ::epoll_create1(EPOLL_CLOEXEC);
  w.ranks.resize(static_cast<std::size_t>(n));
  int next = 0;
  std::size_t waiting = 0;
  std::vector<epoll_event> events(512);
  while (w.greeted + w.failed < static_cast<std::size_t>(n)) {
    while (next < n && waiting < window) {
      auto& r = w.ranks[static_cast<std::size_t>(next)];
      r.fd = connect_nonblocking(list, next / per_host);
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u32 = static_cast<std::uint32_t>(next++);
      ::epoll_ctl(ep_fd, EPOLL_CTL_ADD, r.fd, &e);
      ++waiting;
    }
    const int k = ::epoll_wait(ep_fd, events.data(), static_cast<int>(events.size()), 10000);
    if (k == 0) die(1, "the watch port sent no challenge for 10 s");
    for (int i = 0; i < k; ++i) {
      const int rank = static_cast<int>(events[static_cast<std::size_t>(i)].data.u32);
      auto& r = w.ranks[static_cast<std::size_t>(rank)];
      char buf[256];
      const ssize_t got = ::recv(r.fd, buf, sizeof buf, 0);
      if (got <= 0) {
        if (got < 0 && errno == EAGAIN) continue;
        ++w.failed;  // pcmd closed it: refused
        --waiting;
        ::epoll_ctl(ep_fd, EPOLL_CTL_DEL, r.fd, nullptr);
        continue;
      }
      r.buf.append(buf, static_cast<std::size_t>(got));
      const std::string nonce = pcm::common::watch_nonce(r.buf);
      if (nonce.empty()) continue;
      const std::string hello =
          pcm::common::watch_hello(cfg.secret, nonce, job, 100000 + rank,
                                   "node" + std::to_string(rank / per_host), incarnation);
      if (::send(r.fd, hello.data(), hello.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(hello.size()))
        die(1, "cannot send a hello");
      r.greeted = true;
      ++w.greeted;
      --waiting;
      ::epoll_ctl(ep_fd, EPOLL_CTL_DEL, r.fd, nullptr);
    }
  }
  ::close(ep_fd);
  ::freeaddrinfo(list);
}

// ---- job B: another job's requests meanwhile ---------------------------------------------------

// What the emulator is doing now, for the other job's slowest request.
const char* const kPhases[] = {"register", "hellos", "polls",  "checkpoint",
                               "command",  "lost",   "restart"};
std::atomic<int> g_phase{0};

struct OtherJob {
  std::atomic<bool> stop{false};
  std::vector<double> ms;
  std::vector<int> phase;
  long errors = 0;
  std::thread thread;

  void start(zmq::context_t& ctx, const pcm::common::Config& cfg, const std::string& job) {
    thread = std::thread([this, &ctx, cfg, job] {
      pcm::common::Client c(ctx, cfg.endpoint, cfg.secret);
      for (std::int64_t it = 0; !stop.load(); ++it) {
        ops::Poll p;
        p.job = job;
        p.iteration = it;
        const auto t0 = Clock::now();
        try {
          c.request(ops::request(p), nullptr, 0, 30000);
        } catch (const pcm::Error&) {
          ++errors;
        }
        ms.push_back(since(t0) * 1e3);
        phase.push_back(g_phase.load());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  ~OtherJob() {  // a failed run ends here with the thread still going
    stop = true;
    if (thread.joinable()) thread.join();
  }
  void finish() {
    stop = true;
    thread.join();
    std::vector<double> worst(std::size(kPhases), 0);
    for (std::size_t i = 0; i < ms.size(); ++i)
      worst[static_cast<std::size_t>(phase[i])] =
          std::max(worst[static_cast<std::size_t>(phase[i])], ms[i]);
    std::string line = "scale_emu: the other job's slowest request (ms) while";
    for (std::size_t p = 0; p < worst.size(); ++p) line += fmt_phase(kPhases[p], worst[p]);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  static std::string fmt_phase(const char* name, double worst) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %s %.1f", name, worst);
    return buf;
  }
};

struct Figures {
  double register_ms = 0, hello_sent_s = 0, hello_s = 0, poll_p50 = 0, poll_p99 = 0;
  double files_s = 0, records_s = 0, commit_s = 0, deliver_ms = 0, report_ms = 0, lost_s = 0;
  double restart_ms = 0;
  long refused = 0, errors = 0;
};

struct Emulator {
  int n = 0, per_host = 32, nconn = 256;
  pcm::common::Config cfg;
  zmq::context_t ctx{1};
  // The ranks' request connections in a context (and I/O thread) of their own, and job B in a
  // third: rank 0's, the operator's and job B's requests do not queue behind the emulator's own
  // handling of thousands of connections.
  zmq::context_t bulk{1}, other_ctx{1};
  std::optional<pcm::common::Client> c;
  std::string job;
  long long incarnation = 0;
  Figures f;

  std::vector<std::string> hosts(int size) const {
    std::vector<std::string> h(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r)
      h[static_cast<std::size_t>(r)] = "node" + std::to_string(r / per_host);
    return h;
  }
  json request(const json& header, int timeout_ms = 120000) {
    return c->request(header, nullptr, 0, timeout_ms).header;
  }
  json status() { return request(ops::request(ops::Status{job})).at("jobs").at(0); }
  json poll(std::int64_t it) {
    ops::Poll p;
    p.job = job;
    p.iteration = it;
    return request(ops::request(p));
  }

  void register_job() {
    ops::Register reg;
    reg.size = n;
    reg.hosts = hosts(n);
    reg.pid = ::getpid();
    reg.job = "scale-a";
    const auto t0 = Clock::now();
    const json r = request(ops::request(reg));
    f.register_ms = since(t0) * 1e3;
    job = r.at("job").get<std::string>();
    incarnation = r.at("incarnation").get<long long>();
  }

  // Until pcmd's status counts every greeted rank watched (rank 0's polls carry the news in).
  void wait_watched(const Watches& w, Clock::time_point t0) {
    for (std::int64_t it = 0;; ++it) {
      poll(it);
      if (status().value("watched", -1L) >= static_cast<long>(w.greeted)) break;
      if (since(t0) > 300) die(1, "pcmd does not count the ranks watched after 300 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void rank0_polls(zmq::socket_t& poller, int count) {
    std::vector<double> ms;
    for (int i = 0; i < count; ++i) {
      ops::Poll p;
      p.job = job;
      p.iteration = 1000 + i;
      const auto t0 = Clock::now();
      send_dealer(poller, envelope(ops::request(p), cfg, incarnation));
      const json r = recv_dealer(poller);
      ms.push_back(since(t0) * 1e3);
      if (!r.value("ok", false)) ++f.errors;
    }
    f.poll_p50 = pct(ms, 0.5);
    f.poll_p99 = pct(ms, 0.99);
  }

  void checkpoint();
  void command(zmq::socket_t& poller, Watches& w);
  void lose_and_restart(Watches& w);
};

void Emulator::checkpoint() {
  constexpr std::int64_t kIteration = 100;
  constexpr std::uint64_t kShard = 8u << 20;  // a sparse 8 MiB file per rank
  const json b = request(ops::request(ops::CheckpointBegin{job, kIteration}));
  const std::string dir = b.at("dir").get<std::string>();
  auto t0 = Clock::now();
  std::vector<std::string> heads, records;
  for (int r = 0; r < n; ++r) {
    const std::string file = pcm::common::shard_file_name(r);
    const int fd = ::open((dir + "/" + file).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(kShard)) != 0) die(1, "cannot write a shard");
    ::close(fd);
    pcm::common::ShardDataset d;
    d.key = "u";
    d.type = PCM_DOUBLE;
    d.count = kShard / sizeof(double);
    d.xxh3.assign(kShard / pcm::common::kShardChunk, static_cast<std::uint64_t>(r) * 7919u);
    pcm::common::ShardRecord rec{r, file, kShard, {d}};
    records.push_back(proto::encode(rec.to_json()));
    heads.push_back(envelope(
        ops::request(ops::ShardDone{job, kIteration, r, n, std::nullopt, false, std::nullopt}), cfg,
        incarnation));
  }
  f.files_s = since(t0);
  std::vector<zmq::socket_t> socks;
  for (int i = 0; i < nconn; ++i) {  // connected and answered once before the clock starts
    socks.emplace_back(bulk, zmq::socket_type::dealer);
    socks.back().set(zmq::sockopt::linger, 0);
    socks.back().set(zmq::sockopt::sndhwm, 0);
    socks.back().connect(cfg.endpoint);
    send_dealer(socks.back(), envelope(ops::request(ops::Ping{}), cfg, 0));
  }
  for (auto& s : socks) recv_dealer(s);
  t0 = Clock::now();
  for (int r = 0; r < n; ++r)
    send_dealer(socks[static_cast<std::size_t>(r % nconn)], heads[static_cast<std::size_t>(r)],
                &records[static_cast<std::size_t>(r)]);
  std::vector<zmq::pollitem_t> items;
  for (auto& s : socks) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
  double last_plain = 0, commit = -1;
  for (int got = 0; got < n;) {
    if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds(60000)) == 0)
      die(1, "shard records unanswered for 60 s (" + std::to_string(got) + " of " +
                 std::to_string(n) + " answered)");
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      const json r = recv_dealer(socks[i]);
      ++got;
      if (!r.value("ok", false)) {
        ++f.errors;
        std::fprintf(stderr, "scale_emu: a shard record refused: %s\n", r.dump().c_str());
      } else if (r.contains("shards")) {
        commit = since(t0);
      } else if (commit < 0) {
        // Replies on different connections arrive in any order: the last one before the
        // commit's bounds when pcmd took the last record (the commit time is then an upper bound).
        last_plain = since(t0);
      }
    }
  }
  if (commit < 0) die(1, "no reply was the commit's");
  if (last_plain <= 0) last_plain = commit;  // the commit's came first: both bounded by it
  f.records_s = last_plain;
  f.commit_s = std::max(commit - last_plain, 1e-6);
}

void Emulator::command(zmq::socket_t& poller, Watches& w) {
  ops::Merge m;
  m.job = job;
  m.ranks = {n - 2, n - 1};
  const auto t0 = Clock::now();
  const json asked = request(ops::request(m));
  const json& cmd = asked.at("command");
  const std::int64_t id =
      cmd.is_object() ? cmd.at("id").get<std::int64_t>() : cmd.get<std::int64_t>();
  for (std::int64_t it = 2000;; ++it) {
    ops::Poll p;
    p.job = job;
    p.iteration = it;
    send_dealer(poller, envelope(ops::request(p), cfg, incarnation));
    const json r = recv_dealer(poller);
    if (r.contains("command") && r.at("command").is_object()) break;
    if (since(t0) > 60) die(1, "the merge was not delivered within 60 s");
  }
  f.deliver_ms = since(t0) * 1e3;
  ops::Reconfigured rep;
  rep.job = job;
  rep.command = id;
  rep.size = n - 1;
  rep.hosts = hosts(n - 1);
  rep.pid = ::getpid();
  const auto t1 = Clock::now();
  request(ops::request(rep));
  f.report_ms = since(t1) * 1e3;
  // The process the merge let go leaves normally.
  auto& gone = w.ranks[static_cast<std::size_t>(n - 1)];
  (void)!::send(gone.fd, "bye\n", 4, MSG_NOSIGNAL);
  ::close(gone.fd);
  gone.fd = -1;
}

void Emulator::lose_and_restart(Watches& w) {
  auto& lost = w.ranks[1];
  linger hard{1, 0};  // a reset, as a killed process's kernel sends
  ::setsockopt(lost.fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  const auto t0 = Clock::now();
  ::close(lost.fd);
  lost.fd = -1;
  for (std::int64_t it = 3000;; ++it) {
    try {
      poll(it);
    } catch (const pcm::Error&) {  // refused: the run has failed
    }
    if (status().value("state", std::string()) == "failed") break;
    if (since(t0) > 60) die(1, "the lost rank was not noticed within 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  f.lost_s = since(t0);
  g_phase = 6;
  for (auto& r : w.ranks)
    if (r.fd >= 0) ::close(r.fd);
  ops::Register reg;
  reg.size = n - 1;
  reg.hosts = hosts(n - 1);
  reg.pid = ::getpid();
  reg.job = job;
  reg.restart = true;
  const auto t1 = Clock::now();
  request(ops::request(reg));
  f.restart_ms = since(t1) * 1e3;
  ops::Finished fin;
  fin.job = job;
  request(ops::request(fin));
}

const char* kHeader =
    "n,per_host,conns,register_ms,hello_sent_s,hello_s,refused,poll_p50_ms,poll_p99_ms,files_s,"
    "records_s,commit_s,errors,deliver_ms,report_ms,lost_s,restart_ms,rss_mb,hwm_mb,cpu_s,"
    "other_p50_ms,other_p99_ms,other_max_ms,other_errors,loop_max_ms";

int run(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--header") {
    std::printf("%s\n", kHeader);
    return 0;
  }
  if (argc < 2) die(2, "usage: scale_emu N [RANKS_PER_HOST [CONNECTIONS]] | --header");
  Emulator e;
  e.n = std::atoi(argv[1]);
  if (argc > 2) e.per_host = std::max(1, std::atoi(argv[2]));
  if (argc > 3) e.nconn = std::max(1, std::atoi(argv[3]));
  if (e.n < 4) die(2, "N must be at least 4");
  e.nconn = std::min(e.nconn, e.n);
  raise_fd_limit(static_cast<std::size_t>(e.n + e.nconn) + 64);
  e.cfg = pcm::common::read_config(pcm::common::default_config_path());
  if (e.cfg.watch.empty()) die(1, "pcmd's configuration names no watch port");
  e.bulk.set(zmq::ctxopt::max_sockets, e.nconn + 64);
  e.c.emplace(e.ctx, e.cfg.endpoint, e.cfg.secret);
  const long pid = e.request(ops::request(ops::Ping{})).at("pid").get<long>();
  const Usage u0 = usage_of(pid);
  const long long drops0 = softnet_drops();
  e.register_job();
  ops::Register other_reg;
  other_reg.size = 1;
  other_reg.hosts = {"other"};
  other_reg.job = "scale-b";
  const std::string other_job = e.request(ops::request(other_reg)).at("job").get<std::string>();
  OtherJob other;
  other.start(e.other_ctx, e.cfg, other_job);

  Watches w;
  g_phase = 1;
  auto t0 = Clock::now();
  hellos(w, e.n, e.cfg, e.job, e.incarnation, e.per_host, 1024);
  e.f.hello_sent_s = since(t0);
  e.f.refused = static_cast<long>(w.failed);
  e.wait_watched(w, t0);
  e.f.hello_s = since(t0);
  zmq::socket_t poller(e.ctx, zmq::socket_type::dealer);
  poller.set(zmq::sockopt::linger, 0);
  poller.connect(e.cfg.endpoint);
  g_phase = 2;
  e.rank0_polls(poller, 400);
  g_phase = 3;
  e.checkpoint();
  g_phase = 4;
  e.command(poller, w);
  g_phase = 5;
  e.lose_and_restart(w);
  other.finish();
  const Usage u1 = usage_of(pid);
  std::fprintf(stderr,
               "scale_emu: the kernel dropped %lld packets from its input backlogs meanwhile "
               "(/proc/net/softnet_stat, the whole machine)\n",
               softnet_drops() - drops0);
  // Connections pcmd's watch port refused (its limit, or out of descriptors) count too.
  const json ping = e.request(ops::request(ops::Ping{}));
  e.f.refused += ping.value("watch_refused", 0L);
  // The longest pass of pcmd's loop in the whole run: what one request held it (a pcmd that
  // does not say: -1).
  const double loop_ms = ping.value("loop_longest_ms", -1.0);
  std::fprintf(stderr, "scale_emu: pcmd's longest loop pass %.1f ms, mostly %s\n", loop_ms,
               ping.value("loop_longest_by", std::string("?")).c_str());
  const Figures& f = e.f;
  std::printf(
      "%d,%d,%d,%.3f,%.6f,%.6f,%ld,%.4f,%.4f,%.4f,%.6f,%.6f,%ld,%.3f,%.3f,%.6f,%.3f,%.1f,%.1f,%.3f,"
      "%.4f,%.4f,%.4f,%ld,%.2f\n",
      e.n, e.per_host, e.nconn, f.register_ms, f.hello_sent_s, f.hello_s, f.refused, f.poll_p50,
      f.poll_p99, f.files_s, f.records_s, f.commit_s, f.errors, f.deliver_ms, f.report_ms, f.lost_s,
      f.restart_ms, u1.rss_kb / 1024.0, u1.hwm_kb / 1024.0, u1.cpu_s - u0.cpu_s, pct(other.ms, 0.5),
      pct(other.ms, 0.99),
      other.ms.empty() ? 0.0 : *std::max_element(other.ms.begin(), other.ms.end()), other.errors,
      loop_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scale_emu: %s\n", e.what());
    return 1;
  }
}
