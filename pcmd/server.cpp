// server.cpp — pcmd's request handling: every message is validated before use, and any failure
// becomes an error reply; the loop never dies on a bad request.
#include "server.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <thread>

#include "distribution.h"
#include "error.h"
#include "log.h"
#include "pcm_types.h"
#include "profile.h"

namespace pcm::detail {

using proto::json;

namespace {

constexpr int kMaxRanks = 1 << 20;
constexpr std::size_t kMaxShardTable = std::size_t{1} << 30;  // bytes of a commit's shard table
constexpr std::int64_t kMaxTransfer = std::int64_t{1} << 40;  // bytes of data in pieces
constexpr std::size_t kMaxTransfers = 64;                     // transfers in pieces at once

std::vector<std::string> get_hosts(const json& req, std::size_t expected) {
  auto it = req.find("hosts");
  if (it == req.end() || !it->is_array()) fail(PCM_ERR_ARG, "field \"hosts\" must be an array");
  if (it->size() != expected)
    fail(PCM_ERR_ARG, "field \"hosts\" has {} entries for {} ranks", it->size(), expected);
  std::vector<std::string> hosts;
  for (const auto& h : *it) {
    if (!h.is_string() || !proto::valid_host(h.get_ref<const std::string&>()))
      fail(PCM_ERR_ARG, "field \"hosts\" holds an invalid host name");
    hosts.push_back(h.get<std::string>());
  }
  return hosts;
}

}  // namespace

Server::Server(zmq::context_t& context, ServerOptions options)
    : options_(std::move(options)),
      socket_(context, zmq::socket_type::router),
      store_(options_.data_dir),
      checkpoints_(options_.data_dir),
      bell_(context, zmq::socket_type::pair),
      log_(logger("pcmd", spdlog::level::info)) {
  if (options_.secret.empty()) fail(PCM_ERR_CONFIG, "pcmd needs a secret");
  if (options_.policy_auto) policy_ = std::make_unique<Policy>(options_.policy);
  if (char host[256] = {0}; ::gethostname(host, sizeof host - 1) == 0) my_host_ = host;
  int default_slots = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options_.hosts.empty() && options_.more_hosts.empty()) {
    char name[256] = {0};
    options_.hosts.push_back("localhost");
    if (::gethostname(name, sizeof name - 1) == 0 && proto::valid_host(name) &&
        std::string(name) != "localhost")
      options_.hosts.push_back(name);
  }
  std::vector<HostSlots> all;  // --hosts first, then --hostfile / --slurm
  for (const auto& spec : options_.hosts) {
    HostSlots h;
    auto colon = spec.find(':');
    h.name = spec.substr(0, colon);
    h.slots = default_slots;
    if (colon != std::string::npos) {
      try {
        std::size_t used = 0;
        h.slots = std::stoi(spec.substr(colon + 1), &used);
        if (used != spec.size() - colon - 1 || h.slots < 1) throw std::invalid_argument(spec);
      } catch (const std::exception&) {
        fail(PCM_ERR_CONFIG, "inventory entry '{}': slots must be a positive number", spec);
      }
    }
    if (!proto::valid_host(h.name))
      fail(PCM_ERR_CONFIG, "inventory entry '{}': bad host name", spec);
    all.push_back(h);
  }
  all.insert(all.end(), options_.more_hosts.begin(), options_.more_hosts.end());
  prober_ = std::make_unique<RttProber>(options_.probe_port, options_.probe_period);
  for (const auto& h : all) {
    if (find_host(h.name)) {
      find_host(h.name)->slots += h.slots;  // named twice: its slots add up, as in a hostfile
      continue;
    }
    add_host(h.name, h.slots, "default", std::nullopt);
  }
  // The jobs an earlier pcmd served (they reconnect); commits that died with it count for
  // nothing, except those of jobs still running, whose ranks may be writing their shards.
  restore_table();
  std::set<std::string> running;
  for (const auto& [name, job] : jobs_)
    if (job.state == JobState::kRunning) running.insert(name);
  checkpoints_.sweep(running);
  socket_.set(zmq::sockopt::linger, 0);
  // A peer that vanishes must not make the router block or queue without bound.
  socket_.set(zmq::sockopt::router_mandatory, 0);
  zap_ = make_curve_server(context, socket_, options_.curve);
  // Before any secret is seen: ZeroMQ drops a peer that announces a larger frame (instead of
  // taking in all of it), and queues few messages per peer (a REQ client has one in flight).
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(proto::kMaxFrame));
  socket_.set(zmq::sockopt::rcvhwm, 16);
  try {
    socket_.bind(options_.bind);
  } catch (const zmq::error_t& e) {
    fail(PCM_ERR_CONFIG, "cannot listen on {}: {}", options_.bind, e.what());
  }
  endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  // The watch port listens on the address the requests come to.
  std::string address = endpoint_.substr(endpoint_.find("://") + 3);
  address = address.substr(0, address.rfind(':'));
  if (address.size() > 1 && address.front() == '[') address = address.substr(1, address.size() - 2);
  watcher_ = std::make_unique<Watcher>(address, options_.secret);
  // Bells named once per server ever made: a context may still hold an earlier server's names
  // for a while after it closed them (ZeroMQ releases them asynchronously).
  static std::atomic<unsigned long> servers{0};
  const unsigned long me = ++servers;
  const std::string wake = fmt::format("inproc://pcmd-data-{}", me);
  bell_.bind(wake);
  data_ = std::make_unique<DataThread>(context, wake);
  const std::string written = fmt::format("inproc://pcmd-journal-{}", me);
  journal_bell_ = zmq::socket_t(context, zmq::socket_type::pair);
  journal_bell_.bind(written);
  journal_ = std::make_unique<Journal>(context, table_file(), written);
  persist();
}

// The queued disk work is finished, then the table as it is now is written.
Server::~Server() {
  data_.reset();
  persist();
  journal_->flush();
  journal_.reset();
}

void Server::run(const std::atomic<bool>& stop) {
  auto next_check = std::chrono::steady_clock::now();
  while (!stop.load()) {
    if (std::chrono::steady_clock::now() >= next_check) {
      check_jobs_alive();
      check_agents();
      try {
        run_policy();
      } catch (const std::exception& e) {  // a bug there must not take pcmd down
        log_->error("policy: {}", e.what());
      }
      next_check = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    expire_transfers();
    refusals_.tick(*log_);
    zmq::pollitem_t items[3] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                {bell_.handle(), 0, ZMQ_POLLIN, 0},
                                {journal_bell_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 3, std::chrono::milliseconds(200));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw;
    }
    for (int i : {1, 2}) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      zmq::socket_t& bell = i == 1 ? bell_ : journal_bell_;
      zmq::message_t m;
      while (bell.recv(m, zmq::recv_flags::dontwait)) {
      }
    }
    finish_data_work();
    if (items[0].revents & ZMQ_POLLIN) serve_one();
    persist();  // what changed without a request (a job lost, a drain step) is written too
    release_replies();
  }
}

// A job whose rank 0 ran on this host and is gone without saying "finished" has failed (killed,
// crashed, or aborted by hydra when a spawned process died): say so, and what it was doing.
// A running job fails: its state, why, and the command it leaves undone.
void Server::fail_job(Job& job, std::string why) {
  job.state = JobState::kFailed;
  if (job.pending) {
    why +=
        fmt::format("; {} (command {}) did not complete", job.pending->describe(), job.pending->id);
    job.pending.reset();
  }
  note(job, std::move(why));
  log_->warn("job {}: {}", job.name, job.last_event);
}

// What the watch port saw: processes arriving, leaving normally, and lost.
void Server::take_watch_events() {
  constexpr std::size_t kMaxLost = 64;  // a job's status stays small whatever its size
  const auto now = std::chrono::steady_clock::now();
  bool failed = false;
  for (auto& e : watcher_->take_events()) {
    auto it = jobs_.find(e.job);
    if (it == jobs_.end()) continue;
    Job& job = it->second;
    if (e.incarnation != job.incarnation) continue;  // a process of another run of the name
    auto key = std::make_pair(e.host, e.pid);
    if (e.kind == WatchEvent::Kind::kHello) {
      if (job.state != JobState::kRunning) continue;
      ++job.watched[key];
      job.ever_watched = true;
      job.unwatched_since.reset();
      continue;
    }
    // Only this job's own processes count: a process of an earlier job of the same name (a
    // restart took the name over) says nothing about this one.
    auto w = job.watched.find(key);
    if (w == job.watched.end()) continue;
    if (--w->second <= 0) job.watched.erase(w);
    if (job.watched.empty()) job.unwatched_since = now;
    if (e.kind == WatchEvent::Kind::kLost && job.state != JobState::kFinished &&
        job.lost.size() < kMaxLost)
      job.lost.push_back(fmt::format("{} on {}", e.pid, e.host));
    if (job.state != JobState::kRunning) continue;
    if (e.kind == WatchEvent::Kind::kLost) {
      fail_job(job, fmt::format("process {} on host {} was lost (killed, or its host is gone: {})",
                                e.pid, e.host, e.why));
      failed = true;
    }
  }
  if (failed) progress_drains();  // a failed job holds no host any more
}

// A job whose rank 0 ran on this host and is gone without saying "finished" has failed (killed,
// crashed); so has a job whose processes all left the watch port without it finishing. Jobs on
// several hosts are watched through the watch port (take_watch_events).
void Server::check_jobs_alive() {
  take_watch_events();
  const auto now = std::chrono::steady_clock::now();
  bool failed = false;
  for (auto& [name, job] : jobs_) {
    if (job.state != JobState::kRunning) continue;
    // Every process said bye (or was lost) and rank 0 never said "finished": allow the
    // "finished" request, which travels on another connection, a few seconds to arrive.
    if (job.ever_watched && job.watched.empty() && job.unwatched_since &&
        now - *job.unwatched_since > std::chrono::seconds(5)) {
      fail_job(job, "every process left without the job finishing");
      failed = true;
      continue;
    }
    if (!rank0_gone(job)) continue;
    // Losses the watch port reports name the host: let them come first.
    take_watch_events();
    if (job.state != JobState::kRunning) {
      failed = true;
      continue;
    }
    fail_job(job, fmt::format("rank 0 (pid {}) ended without finishing", job.rank0_pid));
    failed = true;
  }
  if (failed) progress_drains();  // a failed job holds no host any more
}

// Whether the job's rank 0 ran on this host and its process is gone.
bool Server::rank0_gone(const Job& job) const {
  if (job.rank0_pid <= 0) return false;
  if (job.rank0_host != my_host_ && job.rank0_host != "localhost") return false;
  if (::kill(static_cast<pid_t>(job.rank0_pid), 0) != 0) return errno == ESRCH;
  // A zombie is gone too (where nothing reaps orphans at once, as in some containers).
  std::ifstream stat("/proc/" + std::to_string(job.rank0_pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

void Server::serve_one() {
  // The frames live on the heap, where the data thread can read a request's data frame.
  auto held = std::make_shared<std::vector<zmq::message_t>>();
  std::vector<zmq::message_t>& frames = *held;
  do {
    zmq::message_t m;
    if (!socket_.recv(m, zmq::recv_flags::dontwait)) break;
    bool more = m.more();
    frames.push_back(std::move(m));
    if (!more) break;
  } while (true);
  if (frames.empty()) return;
  std::vector<char> reply_data;
  const std::uint64_t changes_before = changes_;
  if (auto reply = respond(held, reply_data)) answer(held, *reply, reply_data, changes_before);
}

std::optional<json> Server::respond(std::shared_ptr<std::vector<zmq::message_t>> held,
                                    std::vector<char>& reply_data, bool disk_inline) {
  std::vector<zmq::message_t>& frames = *held;
  // Router frames: [identity, (empty delimiter), header, (data)].
  std::size_t body = 1;
  bool delimited = frames.size() > 1 && frames[1].size() == 0;
  if (delimited) body = 2;
  json reply;
  if (frames.size() <= body || frames.size() > body + 2) {
    if (refusals_.allow(*log_)) log_->warn("malformed request: {} frames", frames.size());
    return proto::error_reply(PCM_ERR_ARG,
                              "a request is a header frame and at most one data frame");
  }
  try {
    json req = proto::decode(frames[body].data(), frames[body].size());
    const void* data = frames.size() == body + 2 ? frames[body + 1].data() : nullptr;
    std::size_t size = frames.size() == body + 2 ? frames[body + 1].size() : 0;
    async_ = !disk_inline;
    deferred_.reset();
    reply = handle(req, data, size, reply_data);
    async_ = false;
    if (deferred_) {
      data_->post(std::move(held), std::move(*deferred_));
      deferred_.reset();
      return std::nullopt;  // the reply follows when the data thread is done
    }
  } catch (const Error& e) {
    async_ = false;
    if (refusals_.allow(*log_)) log_->warn("malformed request: {}", e.what());
    reply = proto::error_reply(e.code(), e.what());
  } catch (const std::exception& e) {
    async_ = false;
    log_->error("request failed unexpectedly: {}", e.what());
    reply = proto::error_reply(PCM_ERR_INTERNAL, std::string("pcmd: ") + e.what());
  }
  return reply;
}

void Server::send_reply(std::vector<zmq::message_t>& frames, const json& reply,
                        const std::vector<char>& reply_data) {
  const bool delimited = frames.size() > 1 && frames[1].size() == 0;
  std::string head = proto::encode(reply);
  try {
    socket_.send(frames[0], zmq::send_flags::sndmore);
    if (delimited) socket_.send(zmq::message_t(), zmq::send_flags::sndmore);
    if (!reply_data.empty() || reply.value("has_data", false)) {
      socket_.send(zmq::buffer(head), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(reply_data), zmq::send_flags::none);
    } else {
      socket_.send(zmq::buffer(head), zmq::send_flags::none);
    }
  } catch (const zmq::error_t& e) {
    log_->warn("cannot send reply: {}", e.what());
  }
}

void Server::finish_data_work() {
  for (auto& d : data_->take_done()) {
    const std::uint64_t changes_before = changes_;
    if (d.failed) {
      const int code = static_cast<int>(d.reply.value("code", PCM_ERR_INTERNAL));
      if (code != PCM_ERR_REFUSED && code != PCM_ERR_NOT_FOUND)
        log_->warn("request failed: {}", d.reply.value("error", std::string("?")));
    } else if (d.work.then) {
      try {
        d.work.then(d.reply);
      } catch (const Error& e) {
        d.reply = proto::error_reply(e.code(), e.what());
        d.reply_data.clear();
      } catch (const std::exception& e) {
        log_->error("request failed unexpectedly: {}", e.what());
        d.reply = proto::error_reply(PCM_ERR_INTERNAL, std::string("pcmd: ") + e.what());
        d.reply_data.clear();
      }
    }
    answer(d.frames, d.reply, d.reply_data, changes_before);
  }
}

json Server::defer(DataWork work, std::vector<char>& reply_data) {
  // Data reassembled from pieces lives as long as the work that reads it.
  if (assembled_)
    work.run = [keep = assembled_, run = std::move(work.run)](std::vector<char>& out) {
      return run(out);
    };
  if (async_) {
    deferred_ = std::move(work);
    return json{{"ok", true}, {"deferred", true}};
  }
  json reply = work.run(reply_data);
  if (work.then) work.then(reply);
  return reply;
}

void Server::in_background(std::function<void()> f) {
  if (!async_) {
    f();
    return;
  }
  data_->post(nullptr, DataWork{[f = std::move(f)](std::vector<char>&) {
                                  f();
                                  return proto::ok_reply();
                                },
                                nullptr});
}

json Server::handle(const json& req, const void* data, std::size_t size,
                    std::vector<char>& reply_data) {
  std::string op = "?";
  try {
    auto version = proto::get_int(req, "v", 0, 1000);
    if (version != proto::kVersion)
      fail(PCM_ERR_REFUSED, "protocol version {} is not supported (pcmd speaks {})", version,
           proto::kVersion);
    op = proto::get_string(req, "op", 32);
    if (!proto::same_secret(proto::get_string(req, "secret", 1024), options_.secret)) {
      if (refusals_.allow(*log_)) log_->warn("refused '{}': wrong secret", op);
      fail(PCM_ERR_REFUSED, "wrong secret (use the one in pcmd's configuration file)");
    }
    if (req.contains("total")) return op_piece(op, req, data, size, reply_data);
    return dispatch(op, req, data, size, reply_data);
  } catch (const Error& e) {
    if (e.code() != PCM_ERR_REFUSED && e.code() != PCM_ERR_NOT_FOUND && refusals_.allow(*log_))
      log_->warn("request '{}' failed: {}", op, e.what());
    reply_data.clear();
    return proto::error_reply(e.code(), e.what());
  } catch (const std::exception& e) {
    log_->error("request '{}' failed unexpectedly: {}", op, e.what());
    reply_data.clear();
    return proto::error_reply(PCM_ERR_INTERNAL, std::string("pcmd: ") + e.what());
  }
}

json Server::dispatch(const std::string& op, const json& req, const void* data, std::size_t size,
                      std::vector<char>& reply_data) {
  if (op == "ping")
    return json{{"ok", true}, {"pid", ::getpid()}, {"transfers", transfers_.size()}};
  if (op == "poll") return op_poll(req);
  if (op == "store") return op_store(req, data, size, reply_data);
  if (op == "load") return op_load(req, reply_data);
  if (op == "register") return op_register(req, reply_data);
  if (op == "reconfigured") return op_reconfigured(req);
  if (op == "finished") return op_finished(req);
  if (op == "status") return op_status(req);
  if (op == "profile") return op_profile(req);
  if (op == "migrate") return op_migrate(req);
  if (op == "split" || op == "merge" || op == "resize") return op_reshape(op, req);
  if (op == "commit" || op == "checkpoints" || op == "verify" || op == "prune")
    return op_checkpoint(op, req, reply_data);
  if (op == "checkpoint_begin" || op == "checkpoint_commit" || op == "checkpoint_bad" ||
      op == "checkpoint_manifest")
    return op_shards(op, req, data, size, reply_data);
  if (op == "shard_put") {
    Job& job = find_job(req);
    auto iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
    int rank = static_cast<int>(proto::get_int(req, "rank", 0, kMaxRanks));
    if (rank >= job.size) fail(PCM_ERR_ARG, "rank {} of a job of {} processes", rank, job.size);
    return defer({[this, name = job.name, iteration, rank, data, size](std::vector<char>&) {
                    checkpoints_.put_shard(name, iteration, rank, data, size);
                    return proto::ok_reply();
                  },
                  nullptr},
                 reply_data);
  }
  if (op == "host_add" || op == "host_list" || op == "host_drain" || op == "host_remove") {
    json reply = op_host(op, req);
    if (op != "host_list") changed();
    return reply;
  }
  if (op == "agent_report" || op == "agent_leave") return op_agent(op, req);
  if (op == "topology") return op_topology(req);
  fail(PCM_ERR_ARG, "unknown operation '{}'", op);
}

// A piece of a transfer (protocol.h); the last one carries out the request with all the bytes.
json Server::op_piece(const std::string& op, const json& req, const void* data, std::size_t size,
                      std::vector<char>& reply_data) {
  if (op != "store" && op != "shard_put" && op != "checkpoint_commit")
    fail(PCM_ERR_ARG, "operation '{}' takes no data in pieces", op);
  const std::string job = find_job(req).name;
  const auto id = proto::get_int(req, "xfer", 0, INT64_MAX);
  const auto total = static_cast<std::uint64_t>(proto::get_int(req, "total", 1, kMaxTransfer));
  const auto offset = static_cast<std::uint64_t>(proto::get_int(req, "offset", 0, kMaxTransfer));
  if (size > proto::kMaxPiece)
    fail(PCM_ERR_ARG, "a piece of {} bytes (at most {})", size, proto::kMaxPiece);
  const auto now = std::chrono::steady_clock::now();
  auto it = transfers_.find(id);
  if (offset == 0) {
    if (it != transfers_.end()) {
      transfers_.erase(it);
      fail(PCM_ERR_ARG, "transfer {} began twice; dropped, nothing was done", id);
    }
    if (transfers_.size() >= kMaxTransfers)
      fail(PCM_ERR_REFUSED, "{} transfers are under way already; try again later", kMaxTransfers);
    auto bytes = std::make_shared<std::vector<char>>();
    try {
      bytes->reserve(total);  // address space only: pages are taken as the pieces fill them
    } catch (const std::exception&) {
      fail(PCM_ERR_REFUSED, "pcmd cannot hold a transfer of {} bytes", total);
    }
    it = transfers_.emplace(id, Transfer{op, job, total, std::move(bytes), now}).first;
  } else if (it == transfers_.end()) {
    fail(PCM_ERR_REFUSED,
         "transfer {} is not under way (a piece went missing, or none came for {} s): nothing "
         "was done",
         id, std::chrono::duration<double>(options_.transfer_timeout).count());
  }
  Transfer& t = it->second;
  if (t.op != op || t.job != job || t.total != total || offset != t.bytes->size() ||
      size > total - offset) {
    const Transfer gone = std::move(t);  // (t is erased next)
    transfers_.erase(it);
    fail(PCM_ERR_ARG,
         "transfer {}: a piece of {} bytes at byte {} does not follow the {} bytes of {} received "
         "for '{}' of job '{}'; dropped, nothing was done",
         id, size, offset, gone.bytes->size(), gone.total, gone.op, gone.job);
  }
  if (size > 0) {
    const char* p = static_cast<const char*>(data);
    t.bytes->insert(t.bytes->end(), p, p + size);
  }
  t.last = now;
  if (t.bytes->size() < total) return json{{"ok", true}, {"received", t.bytes->size()}};
  assembled_ = std::move(t.bytes);
  transfers_.erase(it);
  struct Release {
    std::shared_ptr<std::vector<char>>& held;
    ~Release() { held.reset(); }
  } release{assembled_};
  return dispatch(op, req, assembled_->data(), assembled_->size(), reply_data);
}

// Transfers whose client went quiet: their memory is freed.
void Server::expire_transfers() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    const Transfer& t = it->second;
    if (now - t.last <= options_.transfer_timeout) {
      ++it;
      continue;
    }
    log_->warn("job {}: '{}' stopped after {} of {} bytes sent in pieces; dropped", t.job, t.op,
               t.bytes->size(), t.total);
    it = transfers_.erase(it);
  }
}

Job& Server::find_job(const json& req) {
  auto name = proto::get_string(req, "job", proto::kMaxName);
  auto it = jobs_.find(name);
  if (it == jobs_.end()) fail(PCM_ERR_REFUSED, "unknown job '{}'", name);
  return it->second;
}

// A job's latest event, also appended to its history (the last kMaxEvents).
void Server::note(Job& job, std::string event) {
  constexpr std::size_t kMaxEvents = 32;
  changed();
  // Events quote what processes and files said: kept as valid UTF-8 (status is JSON).
  event = proto::clean_text(event);
  if (job.events.size() == kMaxEvents) job.events.erase(job.events.begin());
  job.events.push_back(JobEvent{
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
      event});
  job.last_event = std::move(event);
}

void Job::put_events(json& j) const {
  json texts = json::array(), times = json::array();
  for (const JobEvent& e : events) {
    texts.push_back(e.text);
    times.push_back(e.time);
  }
  j["events"] = std::move(texts);
  j["event_times"] = std::move(times);
}

// The name a registration takes; refused while a running job holds it.
std::string Server::registration_name(const json& req) {
  if (auto wanted = proto::opt_string(req, "job", proto::kMaxName); wanted && !wanted->empty()) {
    if (!proto::valid_name(*wanted)) fail(PCM_ERR_ARG, "invalid job name '{}'", *wanted);
    auto it = jobs_.find(*wanted);
    // A job whose rank 0 died here has failed, whether pcmd has looked yet or not.
    if (it != jobs_.end() && it->second.state == JobState::kRunning && rank0_gone(it->second))
      fail_job(it->second,
               fmt::format("rank 0 (pid {}) ended without finishing", it->second.rank0_pid));
    // A restart may take over a name whose job is gone: finished, failed, or silent for 10 s
    // (its rank 0 ran where pcmd cannot watch it).
    bool silent = it != jobs_.end() && std::chrono::steady_clock::now() - it->second.last_seen >
                                           std::chrono::seconds(10);
    if (it != jobs_.end() && it->second.state == JobState::kRunning &&
        !(proto::get_bool(req, "restart", false) && silent))
      fail(PCM_ERR_REFUSED,
           "job name '{}' is in use by a running job (if it has just died, pcmd notices within "
           "seconds: start again then; `pcmctl status {}` shows its state; or use another PCM_JOB)",
           *wanted, *wanted);
    return *wanted;
  }
  std::string name;
  do name = "job-" + std::to_string(next_job_++);
  while (jobs_.count(name));
  return name;
}

json Server::op_register(const json& req, std::vector<char>& reply_data) {
  int size = static_cast<int>(proto::get_int(req, "size", 1, kMaxRanks));
  get_hosts(req, size);  // checked now, used once registered
  // The same registration sent again (its reply was lost with a pcmd that died): the same answer.
  if (auto nonce = proto::opt_string(req, "nonce", 64); nonce && !nonce->empty()) {
    for (const auto& [name, job] : jobs_)
      if (job.nonce == *nonce && job.state == JobState::kRunning) return registration_reply(job);
  }
  const std::string name = registration_name(req);
  if (!proto::get_bool(req, "restart", false)) return register_job(req, name, std::nullopt);
  // A restart: the newest version that verifies is found on the data thread (a version made
  // through pcmd is read whole for its checksums).
  auto found = std::make_shared<std::optional<Manifest>>();
  return defer({[this, name, found](std::vector<char>&) {
                  *found = checkpoints_.latest_valid(name);
                  if (!*found)
                    fail(PCM_ERR_NOT_FOUND, "job '{}' has no checkpoint version that verifies",
                         name);
                  return proto::ok_reply();
                },
                [this, req, found](json& reply) {
                  reply = register_job(req, registration_name(req), *found);
                }},
               reply_data);
}

json Server::register_job(const json& req, const std::string& name,
                          std::optional<Manifest> restarted_from) {
  int size = static_cast<int>(proto::get_int(req, "size", 1, kMaxRanks));
  Job job;
  job.name = name;
  if (restarted_from) {
    job.layout = restarted_from->layout;
    job.restarted_from = std::move(restarted_from);
  }
  job.state = JobState::kRunning;
  job.incarnation = next_incarnation_++;
  job.size = size;
  job.hosts = get_hosts(req, size);
  job.executable = proto::opt_string(req, "executable", 4096).value_or("");
  job.rank0_pid = static_cast<long>(proto::opt_int(req, "pid", 0, INT32_MAX).value_or(0));
  job.rank0_host = job.hosts[0];
  if (auto p = proto::opt_string(req, "placement", 32); p && !p->empty()) {
    job.placement = parse_placement(*p);
    if (!job.placement)
      fail(PCM_ERR_REFUSED, "unknown placement '{}' (PCM_PLACEMENT): spread or concentrate", *p);
  }
  job.nonce = proto::opt_string(req, "nonce", 64).value_or("");
  forget_ended_jobs();
  note(job, "started");
  job.last_seen = std::chrono::steady_clock::now();
  jobs_[name] = std::move(job);
  json reply = registration_reply(jobs_[name]);
  if (const auto& m = jobs_[name].restarted_from)
    note(jobs_[name], fmt::format("restarted from iteration {} ({} processes then, {} now)",
                                  m->iteration, m->nprocs, size));
  log_->info("job {} registered with {} processes{}", name, size,
             reply.contains("restart") ? " (restart)" : "");
  return reply;
}

// pcmd remembers the last kMaxEndedJobs jobs that finished or failed (for pcmctl status), not
// every job it ever served: the table, written after every change, stays small.
void Server::forget_ended_jobs() {
  constexpr std::size_t kMaxEndedJobs = 64;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> ended;
  for (const auto& [name, job] : jobs_)
    if (job.state != JobState::kRunning) ended.emplace_back(job.last_seen, name);
  if (ended.size() <= kMaxEndedJobs) return;
  std::sort(ended.begin(), ended.end());
  for (std::size_t i = 0; i + kMaxEndedJobs < ended.size(); ++i) jobs_.erase(ended[i].second);
  changed();
}

json Server::registration_reply(const Job& job) const {
  json reply{{"ok", true}, {"job", job.name}, {"incarnation", job.incarnation}};
  if (const auto& m = job.restarted_from)
    reply["restart"] = json{{"iteration", m->iteration}, {"nprocs", m->nprocs}};
  return reply;
}

json Server::op_poll(const json& req) {
  Job& job = find_job(req);
  job.iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
  {
    const auto now = std::chrono::steady_clock::now();
    if (job.progress.empty() || job.progress.back().second != job.iteration)
      job.progress.emplace_back(now, job.iteration);
    while (!job.progress.empty() && now - job.progress.front().first > std::chrono::seconds(30))
      job.progress.pop_front();
  }
  job.last_seen = std::chrono::steady_clock::now();
  if (auto it = req.find("profile"); it != req.end()) {
    // A bad profile costs the job its profile, never its commands.
    try {
      job.profile = pcm::detail::JobProfile::from_json(*it, job.size).to_json();
      job.profile_at = job.last_seen;
    } catch (const Error& e) {
      if (refusals_.allow(*log_)) log_->warn("job {}: profile refused: {}", job.name, e.what());
    }
  }
  json reply{{"ok", true}, {"command", nullptr}};
  if (job.pending) {
    reply["command"] = job.pending->to_json();
    if (!job.pending_delivered)
      log_->info("job {}: command {} delivered", job.name, job.pending->id);
    job.pending_delivered = true;
  }
  return reply;
}

json Server::op_reconfigured(const json& req) {
  Job& job = find_job(req);
  auto id = proto::get_int(req, "command", 0, INT64_MAX);
  // Sent again after a pcmd restart, once it had been taken: nothing to do twice.
  if (proto::get_bool(req, "retry", false) && id <= job.last_done_command) return proto::ok_reply();
  if (!job.pending || job.pending->id != id)
    fail(PCM_ERR_REFUSED, "job '{}' has no pending command {}", job.name, id);
  job.last_done_command = id;
  auto ok = proto::get_bool(req, "success", true);
  if (ok) {
    int size = static_cast<int>(proto::get_int(req, "size", 1, kMaxRanks));
    job.hosts = get_hosts(req, size);
    job.size = size;
    job.reconfigurations++;
    job.rank0_pid = static_cast<long>(proto::opt_int(req, "pid", 0, INT32_MAX).value_or(0));
    job.rank0_host = job.hosts[0];
    note(job, job.pending->describe() +
                  (proto::get_bool(req, "respawned", false)
                       ? " done by respawning the whole world (its parked processes left)"
                       : " done"));
    if (auto it = req.find("layout"); it != req.end() && !it->is_null()) {
      // Validated like any map from the network, then kept where a restart will look for it.
      Distribution d = Distribution::from_json(*it);
      if (d.size() != size)
        fail(PCM_ERR_ARG, "the layout describes {} ranks, not {}", d.size(), size);
      in_background([this, name = job.name, bytes = proto::encode(d.to_json()),
                     id = job.pending->id] { store_.put_layout(name, bytes, id); });
      job.layout_command = job.pending->id;
      job.layout = d.to_json();
    }
  } else {
    note(job, fmt::format("{} failed: {}", job.pending->describe(),
                          proto::opt_string(req, "error", 4096).value_or("?")));
    if (policy_)
      policy_->failed(job.name, std::chrono::duration<double>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count());
  }
  job.iteration = proto::opt_int(req, "iteration", 0, INT64_MAX).value_or(job.iteration);
  job.last_seen = std::chrono::steady_clock::now();
  log_->info("job {}: {}", job.name, job.last_event);
  if (!ok && job.pending_drain) {
    job.drain_stalled = job.last_event;
    note(job, "drain stopped for this job: " + job.drain_stalled);
  }
  job.pending.reset();
  progress_drains();
  return proto::ok_reply();
}

json Server::op_finished(const json& req) {
  Job& job = find_job(req);
  job.iteration = proto::opt_int(req, "iteration", 0, INT64_MAX).value_or(job.iteration);
  job.state = JobState::kFinished;
  job.last_seen = std::chrono::steady_clock::now();
  if (job.pending) {
    note(job, fmt::format("finished before command {} ran", job.pending->id));
    job.pending.reset();
  } else {
    note(job, "finished");
  }
  log_->info("job {} finished at iteration {}", job.name, job.iteration);
  progress_drains();
  return proto::ok_reply();
}

json Server::op_store(const json& req, const void* data, std::size_t size,
                      std::vector<char>& reply_data) {
  auto job = proto::get_string(req, "job", proto::kMaxName);
  if (!jobs_.count(job)) fail(PCM_ERR_REFUSED, "unknown job '{}'", job);
  int rank = static_cast<int>(proto::get_int(req, "rank", 0, kMaxRanks));
  auto key = proto::get_string(req, "key", proto::kMaxName);
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  int type = static_cast<int>(proto::get_int(req, "type", 0, 1000));
  std::size_t elem = proto::type_size(type);
  if (elem == 0) fail(PCM_ERR_ARG, "unknown element type {}", type);
  auto count = proto::get_int(req, "count", 0, INT64_MAX / 16);
  if (static_cast<std::uint64_t>(count) * elem != size)
    fail(PCM_ERR_ARG, "store of {} x {} carries {} bytes of data", count, proto::type_name(type),
         size);
  if (count > 0 && !data) fail(PCM_ERR_ARG, "store without a data frame");
  return defer({[this, job, rank, key, type, data, count](std::vector<char>&) {
                  store_.put(job, rank, key, type, data, static_cast<std::uint64_t>(count));
                  return proto::ok_reply();
                },
                nullptr},
               reply_data);
}

json Server::op_load(const json& req, std::vector<char>& reply_data) {
  auto job = proto::get_string(req, "job", proto::kMaxName);
  if (!jobs_.count(job)) fail(PCM_ERR_REFUSED, "unknown job '{}'", job);
  int rank = static_cast<int>(proto::get_int(req, "rank", 0, kMaxRanks));
  auto key = proto::get_string(req, "key", proto::kMaxName);
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  bool meta_only = proto::get_bool(req, "meta_only", false);
  if (auto version = proto::opt_int(req, "version", 0, INT64_MAX)) {
    const auto& m = jobs_.at(job).restarted_from;
    if (!m || m->iteration != *version)
      fail(PCM_ERR_REFUSED, "job '{}' was not restarted from version {}", job, *version);
    if (meta_only) {
      std::optional<Store::Meta> meta;
      if (m->format == 2) {
        if (rank < m->nprocs)
          if (const ShardDataset* d = m->shards[static_cast<std::size_t>(rank)].find(key))
            meta = Store::Meta{d->type, d->count};
      } else {
        std::string path = "/rank_" + std::to_string(rank) + "/" + key;
        for (const auto& d : m->datasets)
          if (d.path == path) meta = Store::Meta{d.type, d.count};
      }
      if (!meta)
        fail(PCM_ERR_NOT_FOUND, "version {} of job '{}' has nothing for rank {} key '{}'", *version,
             job, rank, key);
      return json{{"ok", true}, {"type", meta->type}, {"count", meta->count}};
    }
    return defer(
        {[this, m = *m, rank, key](std::vector<char>& out) {
           auto meta = checkpoints_.read(m, rank, key, out);
           return json{
               {"ok", true}, {"type", meta.type}, {"count", meta.count}, {"has_data", true}};
         },
         nullptr},
        reply_data);
  }
  return defer(
      {[this, job, rank, key, meta_only](std::vector<char>& out) {
         if (meta_only) {
           auto m = store_.meta(job, rank, key);
           if (!m)
             fail(PCM_ERR_NOT_FOUND, "nothing stored for job '{}' rank {} key '{}'", job, rank,
                  key);
           return json{{"ok", true}, {"type", m->type}, {"count", m->count}};
         }
         auto m = store_.get(job, rank, key, out);
         return json{{"ok", true}, {"type", m.type}, {"count", m.count}, {"has_data", true}};
       },
       nullptr},
      reply_data);
}

json Server::job_json(const Job& job) const {
  json j{{"job", job.name},
         {"state", state_name(job.state)},
         {"size", job.size},
         {"hosts", job.hosts},
         {"iteration", job.iteration},
         {"reconfigurations", job.reconfigurations},
         {"layout_command", job.layout_command},
         {"last_event", job.last_event},
         {"lost", job.lost},
         {"seconds_since_seen",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - job.last_seen).count()},
         {"pending", nullptr}};
  job.put_events(j);
  if (job.pending) {
    j["pending"] = job.pending->to_json();
    j["pending"]["delivered"] = job.pending_delivered;
    j["pending"]["text"] = job.pending->describe();
  }
  return j;
}

json Server::op_status(const json& req) {
  json jobs = json::array();
  if (auto name = proto::opt_string(req, "job", proto::kMaxName)) {
    jobs.push_back(job_json(find_job(req)));
  } else {
    for (const auto& [name, job] : jobs_) jobs.push_back(job_json(job));
  }
  json inv = json::array();
  for (const auto& h : inventory_)
    inv.push_back(
        json{{"host", h.name}, {"slots", h.slots}, {"free", free_slots(h.name, nullptr)}});
  return json{{"ok", true}, {"jobs", jobs}, {"inventory", inv}};
}

json Server::op_profile(const json& req) {
  const Job& job = find_job(req);
  json reply{{"ok", true}, {"job", job.name}, {"profile", job.profile}};
  if (!job.profile.is_null())
    reply["age_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - job.profile_at).count();
  return reply;
}

const char* state_name(JobState state) {
  switch (state) {
    case JobState::kRunning:
      return "running";
    case JobState::kFinished:
      return "finished";
    case JobState::kFailed:
      return "failed";
  }
  return "unknown";
}

Job& Server::job_for_command(const json& req) {
  Job& job = find_job(req);
  if (job.state != JobState::kRunning)
    fail(PCM_ERR_REFUSED, "job '{}' is {}", job.name, state_name(job.state));
  if (job.pending)
    fail(PCM_ERR_REFUSED, "job '{}' already has a reconfiguration in flight: {} (command {})",
         job.name, job.pending->describe(), job.pending->id);
  return job;
}

json Server::queue(Job& job, proto::Command c) {
  // A spawn of a missing program makes MPICH's hydra abort the whole job: refuse it here.
  if (c.kind != proto::Command::Kind::kMerge &&
      !(c.kind == proto::Command::Kind::kResize && c.size < job.size) && !job.executable.empty() &&
      job.executable[0] == '/' && ::access(job.executable.c_str(), X_OK) != 0)
    fail(PCM_ERR_REFUSED, "job '{}': its program {} is no longer executable", job.name,
         job.executable);
  // Where the command names no host per new rank (a migration, a merge, a shrinking resize): the
  // world afterwards, which libpcm needs should it respawn the whole world (Command::respawn).
  if (c.hosts.empty() && job.hosts.size() == static_cast<std::size_t>(job.size)) {
    if (c.kind == proto::Command::Kind::kMigrate) {
      c.hosts = job.hosts;
      c.hosts[static_cast<std::size_t>(c.rank)] = c.host;
    } else {
      const std::vector<int> new_of = proto::merged_ranks(c, job.size);
      c.hosts.resize(static_cast<std::size_t>(c.size));
      for (int r = 0; r < job.size; ++r)
        if (new_of[r] >= 0) c.hosts[static_cast<std::size_t>(new_of[r])] = job.hosts[r];
    }
  }
  c.id = next_command_++;
  if (policy_ && !policy_deciding_)
    policy_->operator_command(
        job.name,
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  note(job, c.describe() + " requested");
  log_->info("job {}: command {}: {}", job.name, c.id, job.last_event);
  job.pending = c;
  job.pending_delivered = false;
  job.pending_drain = false;
  return json{{"ok", true},       {"command", c.id}, {"host", c.host},
              {"hosts", c.hosts}, {"size", c.size},  {"text", c.describe()}};
}

json Server::op_checkpoint(const std::string& op, const json& req, std::vector<char>& reply_data) {
  auto name = proto::get_string(req, "job", proto::kMaxName);
  if (!proto::valid_name(name)) fail(PCM_ERR_ARG, "invalid job name '{}'", name);
  auto status_json = [](const VersionStatus& v) {
    return json{{"iteration", v.iteration},
                {"valid", v.valid},
                {"why", v.why},
                {"bytes", v.bytes},
                {"nprocs", v.nprocs}};
  };
  if (op == "commit") {
    Job& job = find_job(req);
    auto iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
    int size = static_cast<int>(proto::get_int(req, "size", 1, kMaxRanks));
    const long long incarnation = job.incarnation;
    const bool retry = proto::get_bool(req, "retry", false);
    return defer(
        {[this, name, iteration, size, layout = job.layout, retry](std::vector<char>&) {
           // Sent again after a pcmd restart: the commit may have been made before it died.
           if (retry)
             if (auto done = committed_before(name, iteration)) return *done;
           Manifest m = checkpoints_.commit(store_, name, iteration, size, layout);
           auto removed = checkpoints_.prune(name, options_.keep_versions, iteration);
           return json{
               {"ok", true}, {"iteration", iteration}, {"bytes", m.file_size}, {"pruned", removed}};
         },
         [this, name, incarnation](json& reply) {
           auto it = jobs_.find(name);
           if (it == jobs_.end() || it->second.incarnation != incarnation) return;
           note(it->second, fmt::format("checkpoint of iteration {} committed ({} bytes)",
                                        reply["iteration"].get<std::int64_t>(),
                                        reply["bytes"].get<std::uint64_t>()));
           log_->info("job {}: {}", name, it->second.last_event);
         }},
        reply_data);
  }
  std::optional<std::int64_t> one;
  if (op == "verify") one = proto::opt_int(req, "iteration", 0, INT64_MAX);
  std::size_t keep = 0;
  if (op == "prune") keep = static_cast<std::size_t>(proto::get_int(req, "keep", 1, 1 << 20));
  const bool known = jobs_.count(name) > 0;
  return defer({[this, op, name, one, keep, status_json, known](std::vector<char>&) {
                  if (!known && !checkpoints_.has_job(name))
                    fail(PCM_ERR_NOT_FOUND,
                         "job '{}' has no checkpoints here and pcmd does not know it (mistyped?)",
                         name);
                  if (op == "prune")
                    return json{{"ok", true}, {"pruned", checkpoints_.prune(name, keep)}};
                  json versions = json::array();
                  if (one) {
                    versions.push_back(status_json(checkpoints_.verify(name, *one)));
                  } else {
                    for (const auto& v : checkpoints_.list(name))
                      versions.push_back(status_json(v));
                  }
                  return json{{"ok", true}, {"versions", versions}};
                },
                nullptr},
               reply_data);
}

// Checkpoints whose bytes the ranks write themselves (format 2): pcmd makes the version's
// directory, commits the shards the ranks report, marks damaged versions, and tells a restarted
// job where its version is.
json Server::op_shards(const std::string& op, const json& req, const void* data, std::size_t size,
                       std::vector<char>& reply_data) {
  Job& job = find_job(req);
  if (op == "checkpoint_begin") {
    auto iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
    return defer({[this, name = job.name, iteration](std::vector<char>&) {
                    auto d = checkpoints_.begin_shards(name, iteration);
                    return json{{"ok", true}, {"dir", d.dir.string()}, {"token", d.token}};
                  },
                  nullptr},
                 reply_data);
  }
  if (op == "checkpoint_commit") {
    auto iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
    int nprocs = static_cast<int>(proto::get_int(req, "size", 1, kMaxRanks));
    // The shard table travels as the data frame: at one checksum per MiB it outgrows a header.
    json layout = req.contains("layout") ? req.at("layout") : job.layout;
    const bool retry = proto::get_bool(req, "retry", false);
    return defer(
        {[this, name = job.name, iteration, nprocs, layout, data, size, retry](std::vector<char>&) {
           if (retry)
             if (auto done = committed_before(name, iteration)) return *done;
           std::vector<ShardRecord> shards;
           try {
             json table = proto::decode_large(data, size, kMaxShardTable);
             for (const auto& r : table.at("shards")) shards.push_back(ShardRecord::from_json(r));
           } catch (const json::exception& e) {
             fail(PCM_ERR_ARG, "the shard table: {}", e.what());
           }
           const auto t0 = std::chrono::steady_clock::now();
           Manifest m =
               checkpoints_.commit_shards(name, iteration, nprocs, layout, std::move(shards));
           const auto t1 = std::chrono::steady_clock::now();
           auto removed = checkpoints_.prune(name, options_.keep_versions, iteration);
           log_->debug(
               "job {}: commit {:.3f} s, prune {:.3f} s", name,
               std::chrono::duration<double>(t1 - t0).count(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
           return json{{"ok", true},
                       {"iteration", iteration},
                       {"bytes", m.file_size},
                       {"shards", m.nprocs},
                       {"pruned", removed}};
         },
         [this, name = job.name, incarnation = job.incarnation](json& reply) {
           auto it = jobs_.find(name);
           if (it == jobs_.end() || it->second.incarnation != incarnation) return;
           note(it->second,
                fmt::format("checkpoint of iteration {} committed ({} bytes in {} shards)",
                            reply["iteration"].get<std::int64_t>(),
                            reply["bytes"].get<std::uint64_t>(), reply["shards"].get<int>()));
           log_->info("job {}: {}", name, it->second.last_event);
         }},
        reply_data);
  }
  if (op == "checkpoint_bad") {
    // A restarted job found its version damaged: never again; the next one, if any.
    auto iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
    auto why = proto::get_string(req, "why", 2000);
    if (!job.restarted_from || job.restarted_from->iteration != iteration)
      fail(PCM_ERR_REFUSED, "job '{}' was not restarted from version {}", job.name, iteration);
    auto next = std::make_shared<std::optional<Manifest>>();
    return defer(
        {[this, name = job.name, iteration, why, next](std::vector<char>&) {
           checkpoints_.mark_bad(name, iteration, why);
           log_->warn("job {}: version {} is damaged ({}); it will not be used again", name,
                      iteration, why);
           *next = checkpoints_.latest_valid(name);
           if (!*next)
             fail(PCM_ERR_NOT_FOUND, "job '{}' has no other checkpoint version that verifies",
                  name);
           return json{
               {"ok", true},
               {"restart", {{"iteration", (*next)->iteration}, {"nprocs", (*next)->nprocs}}}};
         },
         [this, name = job.name, incarnation = job.incarnation, iteration, next](json&) {
           auto it = jobs_.find(name);
           if (it == jobs_.end() || it->second.incarnation != incarnation) return;
           Job& j = it->second;
           j.restarted_from = *next;
           j.layout = (*next)->layout;
           note(j, fmt::format("version {} is damaged; restarting from iteration {} ({} processes)",
                               iteration, (*next)->iteration, (*next)->nprocs));
         }},
        reply_data);
  }
  // checkpoint_manifest: the version a restarted job reads.
  auto iteration = proto::get_int(req, "iteration", 0, INT64_MAX);
  const auto& m = job.restarted_from;
  if (!m || m->iteration != iteration)
    fail(PCM_ERR_REFUSED, "job '{}' was not restarted from version {}", job.name, iteration);
  json reply{{"ok", true}, {"format", m->format}};
  if (m->format == 2) {
    reply["dir"] = checkpoints_.version_dir(job.name, iteration).string();
    reply["has_data"] = true;
    const std::string table = proto::encode(m->to_json());
    reply_data.assign(table.begin(), table.end());
  }
  return reply;
}

// On the data thread: the reply to a commit sent again whose version exists and verifies (it was
// made before pcmd died), or nothing.
std::optional<json> Server::committed_before(const std::string& job, std::int64_t iteration) {
  VersionStatus v = checkpoints_.verify(job, iteration);
  if (!v.valid) return std::nullopt;
  return json{{"ok", true},
              {"iteration", iteration},
              {"bytes", v.bytes},
              {"shards", v.nprocs},
              {"pruned", json::array()}};
}

// The reason a command's sender gave ("why", optional): passed on to the job.
static std::string requested_why(const json& req) {
  auto it = req.find("why");
  if (it == req.end() || it->is_null()) return "operator command";
  return proto::Command::clean_why(proto::get_string(req, "why", 4 * proto::Command::kMaxWhy));
}

json Server::op_migrate(const json& req) {
  Job& job = job_for_command(req);
  int rank = static_cast<int>(proto::get_int(req, "rank", -1, kMaxRanks));
  if (rank < 0 || rank >= job.size)
    fail(PCM_ERR_REFUSED, "job '{}' has no rank {} (it has {} processes)", job.name, rank,
         job.size);
  std::string host = requested_host(req);
  if (host.empty()) host = migration_target(job, rank, placement_for(job, req));
  if (host != job.hosts[rank] && free_slots(host, nullptr) <= 0)
    fail(PCM_ERR_REFUSED, "host '{}' has no free slot", host);
  proto::Command c;
  c.kind = proto::Command::Kind::kMigrate;
  c.rank = rank;
  c.host = host;
  c.size = job.size;
  c.why = requested_why(req);
  return queue(job, c);
}

json Server::op_reshape(const std::string& op, const json& req) {
  Job& job = job_for_command(req);
  proto::Command c;
  c.kind = *proto::kind_from_name(op);
  std::string preferred_host = requested_host(req);
  std::vector<int> source;  // old rank whose host each new rank prefers
  int preferred_new = INT32_MAX;
  if (c.kind == proto::Command::Kind::kSplit) {
    c.rank = static_cast<int>(proto::get_int(req, "rank", -1, kMaxRanks));
    if (c.rank < 0 || c.rank >= job.size)
      fail(PCM_ERR_REFUSED, "job '{}' has no rank {} (it has {} processes)", job.name, c.rank,
           job.size);
    c.into = static_cast<int>(proto::get_int(req, "into", 0, kMaxRanks));
    if (c.into < 2) fail(PCM_ERR_REFUSED, "a split needs --into 2 or more (got {})", c.into);
    c.size = job.size + c.into - 1;
    for (int i = 0; i < c.size; ++i)
      source.push_back(i < c.rank ? i : i < c.rank + c.into ? c.rank : i - c.into + 1);
    if (!preferred_host.empty()) preferred_new = c.rank;
  } else if (c.kind == proto::Command::Kind::kMerge) {
    auto it = req.find("ranks");
    if (it == req.end() || !it->is_array()) fail(PCM_ERR_ARG, "field \"ranks\" must be an array");
    std::set<int> seen;
    for (const auto& r : *it) {
      if (!r.is_number_integer()) fail(PCM_ERR_ARG, "field \"ranks\" must hold integers");
      int v = r.get<int>();
      if (v < 0 || v >= job.size)
        fail(PCM_ERR_REFUSED, "job '{}' has no rank {} (it has {} processes)", job.name, v,
             job.size);
      if (!seen.insert(v).second) fail(PCM_ERR_REFUSED, "rank {} is listed twice", v);
      c.ranks.push_back(v);
    }
    if (c.ranks.size() < 2) fail(PCM_ERR_REFUSED, "a merge needs at least two ranks");
    c.size = job.size - static_cast<int>(c.ranks.size()) + 1;
  } else {  // resize
    c.size = static_cast<int>(proto::get_int(req, "size", -1, kMaxRanks));
    if (c.size < 1)
      fail(PCM_ERR_REFUSED, "cannot resize job '{}' to {} processes", job.name, c.size);
    if (c.size == job.size)
      fail(PCM_ERR_REFUSED, "job '{}' already has {} processes", job.name, c.size);
    if (c.size > job.size) {
      for (int i = 0; i < c.size; ++i) source.push_back(i < job.size ? i : -1);
      if (!preferred_host.empty()) preferred_new = job.size;
    }
  }
  if (!source.empty()) {
    // Named host: the new processes go there, the others stay near their old ranks. Otherwise
    // the whole new world is placed by the strategy, host by host (it is spawned as one group).
    c.hosts = !preferred_host.empty()
                  ? place_near(job, source, preferred_new, preferred_host)
                  : place(placement_hosts(&job), c.size, placement_for(job, req));
  }
  c.why = requested_why(req);
  return queue(job, c);
}

}  // namespace pcm::detail
