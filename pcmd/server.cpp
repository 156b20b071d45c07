// server.cpp — pcmd's request loop and gateway: every message is validated before use, and any
// failure becomes an error reply; the loop never dies on a bad request. What a request does is
// its owner's (server.h); the table of handlers below says which owner that is.
#include "server.h"

#include <fmt/ranges.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "error.h"
#include "log.h"
#include "pcm_types.h"
#include "site_moves.h"

namespace pcm::daemon {

using proto::json;

namespace {

ServerOptions checked(ServerOptions options) {
  if (options.secret.empty()) fail(PCM_ERR_CONFIG, "pcmd needs a secret");
  return options;
}

std::string this_host() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) return host;
  return "";
}

}  // namespace

Server::Server(zmq::context_t& context, ServerOptions options)
    : options_(checked(std::move(options))),
      log_(logger("pcmd", spdlog::level::info)),
      jobs_(changes_, log_, this_host()),
      inventory_(options_, jobs_, changes_, log_),
      policy_(options_.policy_auto ? std::make_unique<Policy>(options_.policy) : nullptr),
      desk_(jobs_, inventory_, policy_.get(), log_),
      drains_(inventory_, jobs_, desk_, changes_, options_.agent_timeout, log_),
      socket_(context, zmq::socket_type::router),
      store_(options_.data_dir),
      checkpoints_(options_.data_dir),
      bell_(context, zmq::socket_type::pair),
      transfers_(options_.transfer_timeout, log_) {
  // The jobs an earlier pcmd served (they reconnect); commits that died with it count for
  // nothing, except those of jobs still running, whose ranks may be writing their shards.
  restore_table();
  if (options_.slurm) {
    slurm_ = std::make_unique<SlurmGrowth>(*options_.slurm, options_.slurm_grow_timeout,
                                           this_host(), options_.policy_auto, jobs_, inventory_,
                                           desk_, changes_, log_);
    desk_.set_growth(slurm_.get());
    slurm_->set_drains(&drains_);
    slurm_->sweep();
  }
  std::set<std::string> running;
  for (const auto& [name, job] : jobs_.all())
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
  // Every process of a job connects at about the same moment: ZeroMQ's default backlog of 100
  // overflowed 6,087 times with 4,096 (bench/scale.sh), each overflow a retried handshake.
  socket_.set(zmq::sockopt::backlog, SOMAXCONN);
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
  data_ops_ =
      std::make_unique<DataOps>(*data_, store_, checkpoints_, jobs_, options_.keep_versions, log_);
  set_handlers();
  durability_ = std::make_unique<Durability>(
      context, changes_, table_file(), [this] { return snapshot(); },
      fmt::format("inproc://pcmd-journal-{}", me), log_);
}

// The queued disk work is finished, then the table as it is now is written.
Server::~Server() {
  desk_.set_growth(nullptr);
  slurm_.reset();
  data_ops_.reset();
  data_.reset();
  durability_.reset();
}

// The table of requests: one handler per kind (common/ops.h), each calling the owner of what the
// request touches.
void Server::set_handlers() {
  using Out = std::vector<char>;
  on<ops::Ping>([this](const ops::Ping&, Payload, Out&) {
    return json{{"ok", true},
                {"pid", ::getpid()},
                {"transfers", transfers_.size()},
                {"watching", watcher_->connections()},
                {"watch_refused", watcher_->refused()},
                // The longest pass of the request loop so far: what one request held it.
                {"loop_longest_ms", lag_.longest_s() * 1e3},
                {"loop_longest_by", lag_.longest_by()}};
  });
  on<ops::Register>(
      [this](const ops::Register& r, Payload, Out& out) { return do_register(r, out); });
  on<ops::Poll>([this](const ops::Poll& r, Payload, Out&) {
    watch_now();
    return jobs_.poll(r, refusals_);
  });
  on<ops::Reconfigured>(
      [this](const ops::Reconfigured& r, Payload, Out&) { return do_reconfigured(r); });
  on<ops::Finished>([this](const ops::Finished& r, Payload, Out&) {
    jobs_.finished(r);
    drains_.progress();
    return proto::ok_reply();
  });
  on<ops::JobEvent>([this](const ops::JobEvent& r, Payload, Out&) {
    Job& job = jobs_.find(r.job);
    jobs_.note(job, r.text);
    if (r.stuck_command) jobs_.stuck(job, *r.stuck_command);
    log_->info("job {}: {}", job.name, proto::printable(r.text));
    return proto::ok_reply();
  });
  on<ops::JobMove>(
      [this](const ops::JobMove& r, Payload, Out&) { return job_move(jobs_, inventory_, r); });
  on<ops::Status>([this](const ops::Status& r, Payload, Out&) {
    return json{{"ok", true}, {"jobs", jobs_.status(r.job)}, {"inventory", inventory_.status()}};
  });
  on<ops::Profile>([this](const ops::Profile& r, Payload, Out&) { return jobs_.profile(r); });
  on<ops::Store>(
      [this](const ops::Store& r, Payload d, Out& out) { return data_ops_->store(r, d, out); });
  on<ops::Load>([this](const ops::Load& r, Payload, Out& out) { return data_ops_->load(r, out); });
  on<ops::Commit>(
      [this](const ops::Commit& r, Payload, Out& out) { return data_ops_->commit(r, out); });
  on<ops::Checkpoints>([this](const ops::Checkpoints& r, Payload, Out& out) {
    return data_ops_->checkpoints(r, out);
  });
  on<ops::CheckpointRequest>([this](const ops::CheckpointRequest& r, Payload, Out&) {
    return jobs_.want_checkpoint(jobs_.find(r.job), r.why.value_or("operator request"), r.at_once,
                                 r.stop);
  });
  on<ops::Verify>(
      [this](const ops::Verify& r, Payload, Out& out) { return data_ops_->verify(r, out); });
  on<ops::Prune>(
      [this](const ops::Prune& r, Payload, Out& out) { return data_ops_->prune(r, out); });
  on<ops::CheckpointBegin>([this](const ops::CheckpointBegin& r, Payload, Out& out) {
    return data_ops_->begin(r, out);
  });
  on<ops::CheckpointCommit>([this](const ops::CheckpointCommit& r, Payload d, Out& out) {
    return data_ops_->commit_shards(r, d, out);
  });
  on<ops::CheckpointBad>(
      [this](const ops::CheckpointBad& r, Payload, Out& out) { return data_ops_->bad(r, out); });
  on<ops::CheckpointManifest>([this](const ops::CheckpointManifest& r, Payload, Out& out) {
    return data_ops_->manifest(r, out);
  });
  on<ops::ShardPut>([this](const ops::ShardPut& r, Payload d, Out& out) {
    return data_ops_->shard_put(r, d, out);
  });
  on<ops::ShardDone>([this](const ops::ShardDone& r, Payload d, Out& out) {
    return data_ops_->shard_done(r, d, out);
  });
  on<ops::DirectDir>(
      [this](const ops::DirectDir& r, Payload, Out& out) { return data_ops_->direct_dir(r, out); });
  on<ops::StoreDirect>([this](const ops::StoreDirect& r, Payload, Out& out) {
    return data_ops_->store_direct(r, out);
  });
  on<ops::StoresDone>([this](const ops::StoresDone& r, Payload, Out& out) {
    return data_ops_->stores_done(r, out);
  });
  on<ops::Migrate>([this](const ops::Migrate& r, Payload, Out&) { return desk_.migrate(r); });
  on<ops::Split>([this](const ops::Split& r, Payload, Out&) { return desk_.split(r); });
  on<ops::Merge>([this](const ops::Merge& r, Payload, Out&) { return desk_.merge(r); });
  on<ops::Resize>([this](const ops::Resize& r, Payload, Out&) { return desk_.resize(r); });
  on<ops::HostAdd>([this](const ops::HostAdd& r, Payload, Out&) { return inventory_.add(r); });
  on<ops::HostList>([this](const ops::HostList&, Payload, Out&) { return inventory_.list(); });
  on<ops::HostDrain>([this](const ops::HostDrain& r, Payload, Out&) { return drains_.drain(r); });
  on<ops::HostRemove>(
      [this](const ops::HostRemove& r, Payload, Out&) { return inventory_.remove(r); });
  on<ops::AgentReport>(
      [this](const ops::AgentReport& r, Payload, Out&) { return inventory_.report(r); });
  on<ops::AgentLeave>([this](const ops::AgentLeave& r, Payload, Out&) { return drains_.leave(r); });
  on<ops::Topology>(
      [this](const ops::Topology& r, Payload, Out&) { return inventory_.topology(r); });
  for (const auto& t : ops::kOps)
    if (!handlers_[ops::index(t.op)]) fail(PCM_ERR_INTERNAL, "no handler for '{}'", t.name);
}

json Server::do_register(const ops::Register& r, std::vector<char>& reply_data) {
  // The same registration sent again (its reply was lost with a pcmd that died): the same answer.
  if (const Job* job = jobs_.registered(r)) return jobs_.registration_reply(*job);
  const std::string name = jobs_.registration_name(r);
  if (!r.restart) return jobs_.register_job(r, name, std::nullopt);
  // A restart: from the newest version that verifies.
  return data_ops_->find_restart(
      name,
      [this, r](std::optional<Manifest> found) {
        return jobs_.register_job(r, jobs_.registration_name(r), std::move(found));
      },
      reply_data);
}

json Server::do_reconfigured(const ops::Reconfigured& r) {
  watch_now();
  const auto outcome =
      jobs_.reconfigured(r, [this](const std::string& job, std::string bytes, std::int64_t id) {
        data_ops_->keep_layout(job, std::move(bytes), id);
      });
  if (outcome == JobTable::Outcome::kAgain) return proto::ok_reply();
  if (outcome == JobTable::Outcome::kFailed && policy_)
    policy_->failed(
        r.job,
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  drains_.progress();
  return proto::ok_reply();
}

// ---- the loop ------------------------------------------------------------------------------

namespace {
// The running jobs whose processes pcmd still watches (or, not watched yet, that were heard from
// in the last 10 s), by name.
std::vector<std::string> live_jobs(const JobTable& jobs) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> out;
  for (const auto& [name, job] : jobs.all())
    if (job.state == JobState::kRunning &&
        (!job.liveness.watched.empty() ||
         (!job.liveness.ever_watched && now - job.last_seen < std::chrono::seconds(10))))
      out.push_back(name);
  return out;
}
}  // namespace

void Server::run(const std::atomic<bool>& stop, const std::atomic<bool>* ending) {
  const Durability::Send send = [this](std::vector<zmq::message_t>& frames, const json& reply,
                                       const std::vector<char>& reply_data) {
    send_reply(frames, reply, reply_data);
  };
  auto next_check = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> ending_since;
  LoopLag& lag = lag_;
  while (!stop.load()) {
    lag.begin();
    if (ending && ending->load()) {
      const auto now = std::chrono::steady_clock::now();
      check_jobs_alive();  // the watch's news first
      const std::vector<std::string> live = live_jobs(jobs_);
      if (!ending_since) {
        ending_since = now;
        if (!live.empty())
          log_->info(
              "SIGTERM: serving {} running job(s) ({}) until they end, {} s at most "
              "(SIGTERM again, or SIGINT: at once)",
              live.size(), fmt::join(live, ", "), options_.stop_grace.count());
      }
      // The jobs' last replies (a stop's `finished`, held until the table is written) go out
      // before pcmd does, and the socket keeps them until sent (a second at most).
      if (live.empty() && !durability_->holding()) {
        socket_.set(zmq::sockopt::linger, 1000);
        break;
      }
      if (now - *ending_since > options_.stop_grace) {
        log_->warn("SIGTERM: {} job(s) still running after {} s (--stop-grace): stopping anyway",
                   live.size(), options_.stop_grace.count());
        break;
      }
    }
    if (std::chrono::steady_clock::now() >= next_check) {
      check_jobs_alive();
      drains_.check_agents();
      data_ops_->forget_ended_commits();
      try {
        desk_.policy_round();
      } catch (const std::exception& e) {  // a bug there must not take pcmd down
        log_->error("policy: {}", e.what());
      }
      next_check = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    lag.mark("the checks of jobs, hosts, agents and the policy");
    if (slurm_) {
      // Slurm's commands that the growth runs to the end (scontrol, squeue, scancel) hold this
      // loop, and every request waits meanwhile: said when that takes long.
      const auto t0 = std::chrono::steady_clock::now();
      slurm_->tick();
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      if (took > std::chrono::seconds(1))
        log_->warn("Slurm's commands held pcmd's loop for {:.1f} s", took.count());
      lag.skip();  // said above
    }
    transfers_.expire();
    refusals_.tick(*log_);
    lag.mark("expired transfers and refusals");
    zmq::pollitem_t items[3] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                {bell_.handle(), 0, ZMQ_POLLIN, 0},
                                {durability_->bell().handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 3, std::chrono::milliseconds(200));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw;
    }
    lag.skip();  // the wait for requests
    for (int i : {1, 2}) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      zmq::socket_t& bell = i == 1 ? bell_ : durability_->bell();
      zmq::message_t m;
      while (bell.recv(m, zmq::recv_flags::dontwait)) {
      }
    }
    finish_data_work();
    lag.mark("finished disk work");
    if (items[0].revents & ZMQ_POLLIN) serve_one();
    lag.mark("a request");
    durability_->persist();  // what changed without a request (a job lost, a drain step) too
    lag.mark("writing the job table");
    durability_->release(send);
    lag.mark("sending held replies");
    lag.end();
  }
}

// Jobs that died (the watch port, rank 0's pid) hold no host any more: drains go on.
void Server::watch_now() {
  if (jobs_.take_watch_events(*watcher_)) drains_.progress();
  for (const std::string& h : jobs_.take_lost_hosts()) inventory_.note_lost_process(h);
}

void Server::check_jobs_alive() {
  watch_now();
  if (jobs_.check_alive(*watcher_)) drains_.progress();
  if (host_loss_.check(std::chrono::steady_clock::now())) drains_.progress();
  inventory_.check_silent();
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
  const std::uint64_t changes_before = changes_.count();
  if (auto reply = respond(held, reply_data))
    durability_->answer(held, *reply, reply_data, changes_before,
                        [this](std::vector<zmq::message_t>& f, const json& r,
                               const std::vector<char>& d) { send_reply(f, r, d); });
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
    data_->begin_request(!disk_inline);
    reply = handle(req, data, size, reply_data);
    if (auto work = data_->end_request()) {
      data_->post(std::move(held), std::move(*work));
      return std::nullopt;  // the reply follows when the data thread is done
    }
  } catch (const Error& e) {
    data_->end_request();
    if (refusals_.allow(*log_)) log_->warn("malformed request: {}", e.what());
    reply = proto::error_reply(e.code(), e.what());
  } catch (const std::exception& e) {
    data_->end_request();
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
    const std::uint64_t changes_before = changes_.count();
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
    durability_->answer(d.frames, d.reply, d.reply_data, changes_before,
                        [this](std::vector<zmq::message_t>& f, const json& r,
                               const std::vector<char>& data) { send_reply(f, r, data); });
  }
}

// ---- the gateway ---------------------------------------------------------------------------

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
    const std::optional<ops::Op> kind = ops::from_name(op);
    if (kind) fence(*kind, req);
    if (req.contains("total")) {
      if (!kind || !ops::traits(*kind).pieces)
        fail(PCM_ERR_ARG, "operation '{}' takes no data in pieces", op);
      return piece(*kind, req, Payload{data, size}, reply_data);
    }
    if (!kind) fail(PCM_ERR_ARG, "unknown operation '{}'", op);
    return dispatch(*kind, req, Payload{data, size}, reply_data);
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

// A job's own processes stamp their run on every request ("incarnation", ops::Fence): a request
// from a process that outlived its run is refused, and said so in the log (a few lines a second).
void Server::fence(ops::Op op, const json& req) {
  const ops::Fence f = ops::traits(op).fence;
  if (f == ops::Fence::kNone || !req.contains("incarnation")) return;
  const auto run = proto::get_int(req, "incarnation", 1, INT64_MAX);
  try {
    jobs_.fence(proto::get_string(req, "job", proto::kMaxName), run, f == ops::Fence::kLiveRun,
                ops::name(op));
  } catch (const Error& e) {
    if (refusals_.allow(*log_)) log_->warn("refused: {}", e.what());
    throw;
  }
}

json Server::dispatch(ops::Op op, const json& req, Payload data, std::vector<char>& reply_data) {
  json reply = handlers_[ops::index(op)](req, data, reply_data);
  if (ops::traits(op).changes) changes_.bump();
  return reply;
}

json Server::piece(ops::Op op, const json& req, Payload data, std::vector<char>& reply_data) {
  const std::string job = jobs_.find(proto::get_string(req, "job", proto::kMaxName)).name;
  const auto id = proto::get_int(req, "xfer", 0, INT64_MAX);
  const auto total =
      static_cast<std::uint64_t>(proto::get_int(req, "total", 1, Transfers::kMaxTransfer));
  const auto offset =
      static_cast<std::uint64_t>(proto::get_int(req, "offset", 0, Transfers::kMaxTransfer));
  Transfers::Piece p =
      transfers_.add_piece(ops::name(op), job, id, total, offset, data.data, data.size);
  if (!p.whole) return json{{"ok", true}, {"received", p.received}};
  // The whole data, kept alive by the disk work that reads it.
  data_->keep(p.whole);
  struct Release {
    DataThread& data;
    ~Release() { data.keep(nullptr); }
  } release{*data_};
  return dispatch(op, req, Payload{p.whole->data(), p.whole->size()}, reply_data);
}

}  // namespace pcm::daemon
