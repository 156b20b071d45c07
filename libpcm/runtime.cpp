// runtime.cpp — libpcm's implementation: job registration, the per-iteration status check,
// store/load through pcmd, migration by MPI_Comm_spawn, and retirement without CPU use.
#include "runtime.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "error.h"
#include "log.h"
#include "pcm.h"
#include "protocol.h"

namespace pcm::detail {

using proto::json;

namespace {

constexpr int kTagWake = 7701;
constexpr int kHostLen = 256;

std::shared_ptr<spdlog::logger> log() {
  static auto l = logger("pcm", spdlog::level::warn);
  return l;
}

std::int64_t now_ms() {
  // The coarse clock costs a few nanoseconds; PCM_Status reads it every iteration on rank 0.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fail(PCM_ERR_MPI, "{} failed: {}", what, std::string(msg, static_cast<std::size_t>(len)));
  }
}

long env_long(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < lo || x > hi) fail(PCM_ERR_ARG, "{}={} is not a number in [{}, {}]", name, v, lo, hi);
  return x;
}

// Every rank of comm returns the same code: the most negative local one. The failing rank's
// message is sent to the others, so everyone can say what went wrong.
void agree(MPI_Comm comm, int local_code, const std::string& local_msg) {
  int code = local_code;
  mpi_check(MPI_Allreduce(&local_code, &code, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (code == PCM_SUCCESS) return;
  int me, who = INT_MAX, cand;
  MPI_Comm_rank(comm, &me);
  cand = local_code == code ? me : INT_MAX;
  mpi_check(MPI_Allreduce(&cand, &who, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  char msg[1024] = {0};
  if (me == who) std::snprintf(msg, sizeof msg, "%s", local_msg.c_str());
  mpi_check(MPI_Bcast(msg, sizeof msg, MPI_CHAR, who, comm), "MPI_Bcast");
  throw Error(code, me == who ? local_msg : fmt::format("on rank {}: {}", who, msg));
}

// Broadcasts a header from root over comm.
json bcast_json(const json& value, int root, MPI_Comm comm) {
  int me;
  MPI_Comm_rank(comm, &me);
  std::string bytes = me == root ? proto::encode(value) : std::string();
  long long n = static_cast<long long>(bytes.size());
  mpi_check(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm), "MPI_Bcast");
  bytes.resize(static_cast<std::size_t>(n));
  mpi_check(MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_CHAR, root, comm), "MPI_Bcast");
  return proto::decode(bytes.data(), bytes.size());
}

}  // namespace

Runtime& Runtime::instance() {
  static Runtime r;
  return r;
}

Client& Runtime::client() {
  if (!client_) client_ = std::make_unique<Client>(*context_, config_.endpoint, config_.secret);
  return *client_;
}

int Runtime::mpi_pcm_init(int* argc, char*** argv) {
  if (mpi_pcm_initialized_ || finalized_) fail(PCM_ERR_STATE, "MPI_PCM_Init was already called");
  int already = 0;
  MPI_Initialized(&already);
  if (!already) mpi_check(MPI_Init(argc, argv), "MPI_Init");
  mpi_pcm_initialized_ = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  if (argc && argv && *argv)
    for (int i = 1; i < *argc; ++i) args_.emplace_back((*argv)[i]);
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf)) cwd_ = buf;
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) self_exe_.assign(buf, static_cast<std::size_t>(n));

  int code = PCM_SUCCESS;
  std::string msg;
  try {
    config_ = read_config(default_config_path());
    connect_timeout_ms_ = static_cast<int>(env_long("PCM_CONNECT_TIMEOUT_MS", 5000, 1, 3600000));
    poll_interval_ms_ = env_long("PCM_POLL_MS", 50, 1, 3600000);
    context_ = std::make_unique<zmq::context_t>(1);
  } catch (const Error& e) {
    code = e.code();
    msg = e.what();
  }

  // A spawned process joins the world its parents are rebuilding before anything else: the
  // parents are waiting for it, whatever happens to its own set-up.
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) join_as_child(parent);

  try {
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (code == PCM_SUCCESS && me == 0) {
      try {
        client().request({{"op", "ping"}}, nullptr, 0, connect_timeout_ms_);
      } catch (const Error& e) {
        code = e.code();
        msg = fmt::format("{} (configuration file {})", e.what(), default_config_path());
      }
    }
    agree(MPI_COMM_WORLD, code, msg);
  } catch (const Error& e) {
    init_error_ = e.what();
    throw;
  }
  return PCM_SUCCESS;
}

int Runtime::init(MPI_Comm* comm) {
  if (!mpi_pcm_initialized_) fail(PCM_ERR_STATE, "call MPI_PCM_Init first");
  if (!init_error_.empty()) fail(PCM_ERR_STATE, "MPI_PCM_Init failed: {}", init_error_);
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  if (world_ready_) {
    if (process_status_ == PCM_STARTED) fail(PCM_ERR_STATE, "PCM_Init was already called");
    *comm = world_;  // a spawned process got its world while joining
    return PCM_SUCCESS;
  }
  if (*comm == MPI_COMM_NULL) fail(PCM_ERR_ARG, "comm is MPI_COMM_NULL");

  MPI_Comm dup;
  mpi_check(MPI_Comm_dup(*comm, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  MPI_Comm_rank(dup, &rank_);
  MPI_Comm_size(dup, &size_);
  world_ = dup;

  int code = PCM_SUCCESS;
  std::string msg;
  std::vector<std::string> hosts = gather_hosts();
  if (rank_ == 0) {
    try {
      json req{{"op", "register"}, {"size", size_}, {"hosts", hosts}};
      if (const char* name = std::getenv("PCM_JOB"); name && *name) {
        if (!proto::valid_name(name))
          fail(PCM_ERR_ARG, "PCM_JOB='{}' is not a valid job name (1-64 of A-Z a-z 0-9 . _ -)", name);
        req["job"] = name;
      }
      auto reply = client().request(req, nullptr, 0, connect_timeout_ms_);
      job_ = proto::get_string(reply.header, "job", proto::kMaxName);
    } catch (const Error& e) {
      code = e.code();
      msg = e.what();
    }
  }
  try {
    agree(world_, code, msg);
  } catch (const Error&) {
    MPI_Comm_free(&world_);
    world_ = MPI_COMM_NULL;
    throw;
  }
  job_ = bcast_json(json{{"job", job_}}, 0, world_).at("job").get<std::string>();
  world_ready_ = true;
  *comm = world_;
  log()->info("[rank {}] job {} started with {} processes", rank_, job_, size_);
  return PCM_SUCCESS;
}

int Runtime::process_status() const {
  if (!world_ready_ && process_status_ != PCM_RETIRED) return PCM_ERROR;
  return process_status_;
}

void Runtime::require_world(MPI_Comm comm) const {
  if (process_status_ == PCM_RETIRED) fail(PCM_ERR_STATE, "this process has retired; call PCM_Exit");
  if (!world_ready_) fail(PCM_ERR_STATE, "call PCM_Init first");
  if (comm != world_)
    fail(PCM_ERR_ARG,
         "comm is not the PCM world (use the communicator PCM_Init or PCM_Reconfigure returned)");
}

int Runtime::comm_rank(MPI_Comm comm, int* rank) const {
  if (!rank) fail(PCM_ERR_ARG, "rank is NULL");
  require_world(comm);
  *rank = rank_;
  return PCM_SUCCESS;
}

// ---- per-iteration path -------------------------------------------------------------------

void Runtime::reset_poller() {
  poller_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::dealer);
  poller_->set(zmq::sockopt::linger, 0);
  poller_->set(zmq::sockopt::sndhwm, 4);
  poller_->connect(config_.endpoint);
  poll_outstanding_ = false;
}

// Rank 0 only. Never blocks: a poll request is sent at most every poll_interval_ms_, and its
// reply is picked up by a later call.
void Runtime::poll_daemon() {
  std::int64_t now = now_ms();
  if (poll_outstanding_) {
    zmq::message_t delim, head;
    if (!poller_->recv(delim, zmq::recv_flags::dontwait)) {
      if (now - poll_sent_ms_ > 10000) {
        log()->warn("[rank 0] pcmd has not answered a poll for 10 s; reconnecting");
        reset_poller();
      }
      return;
    }
    // A reply to a DEALER that mimics REQ: [empty, header]; read whatever frames there are.
    bool more = delim.more();
    if (more) {
      (void)poller_->recv(head);
      more = head.more();
    }
    while (more) {
      zmq::message_t extra;
      (void)poller_->recv(extra);
      more = extra.more();
    }
    poll_outstanding_ = false;
    try {
      json reply = proto::decode(head.data(), head.size());
      if (!proto::get_bool(reply, "ok", false)) {
        log()->warn("[rank 0] pcmd refused a poll: {}",
                    proto::opt_string(reply, "error", 4096).value_or("?"));
      } else if (auto it = reply.find("command"); it != reply.end() && it->is_object()) {
        Command c;
        c.id = proto::get_int(*it, "id", 1, INT64_MAX);
        std::string kind = proto::get_string(*it, "kind", 32);
        c.rank = static_cast<int>(proto::get_int(*it, "rank", 0, size_ - 1));
        c.host = proto::get_string(*it, "host", proto::kMaxHost);
        if (kind != "migrate" || !proto::valid_host(c.host))
          fail(PCM_ERR_ARG, "unknown command '{}' for host '{}'", kind, c.host);
        c.kind = PCM_MIGRATE;
        if (c.id > last_done_command_ && !current_) received_ = c;
      }
    } catch (const Error& e) {
      log()->warn("[rank 0] bad poll reply from pcmd: {}", e.what());
    }
  }
  if (!poll_outstanding_ && now - poll_sent_ms_ >= poll_interval_ms_) {
    json req{{"v", proto::kVersion}, {"op", "poll"}, {"secret", config_.secret},
             {"job", job_}, {"iteration", iteration_}};
    std::string bytes = proto::encode(req);
    if (poller_->send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
        poller_->send(zmq::buffer(bytes), zmq::send_flags::dontwait)) {
      poll_outstanding_ = true;
    }
    poll_sent_ms_ = now;
  }
}

int Runtime::status(MPI_Comm comm) {
  require_world(comm);
  if (skip_next_status_) {
    skip_next_status_ = false;
    return PCM_NONE;
  }
  ++iteration_;
  if (!current_) {
    // kind, id, rank, host length: one small broadcast per iteration is all the others pay.
    long long msg[4] = {0, 0, 0, 0};
    if (rank_ == 0) {
      if (!poller_) reset_poller();
      poll_daemon();
      if (received_) {
        msg[0] = received_->kind;
        msg[1] = received_->id;
        msg[2] = received_->rank;
        msg[3] = static_cast<long long>(received_->host.size());
      }
    }
    mpi_check(MPI_Bcast(msg, 4, MPI_LONG_LONG, 0, world_), "MPI_Bcast");
    if (msg[0] == 0) return PCM_NONE;
    Command c;
    c.kind = static_cast<int>(msg[0]);
    c.id = msg[1];
    c.rank = static_cast<int>(msg[2]);
    c.host.resize(static_cast<std::size_t>(msg[3]));
    if (rank_ == 0) c.host = received_->host;
    mpi_check(MPI_Bcast(c.host.data(), static_cast<int>(msg[3]), MPI_CHAR, 0, world_), "MPI_Bcast");
    received_.reset();
    current_ = c;
  }
  // Until PCM_Reconfigure runs, every call reports the same command.
  return rank_ == current_->rank ? PCM_MIGRATE : PCM_RECONFIGURE;
}

// ---- store and load ------------------------------------------------------------------------

namespace {
void check_entry(int rank, const char* key) {
  if (!key) fail(PCM_ERR_ARG, "key is NULL");
  if (!proto::valid_name(key))
    fail(PCM_ERR_ARG, "key '{}' is invalid (1-{} of A-Z a-z 0-9 . _ -)", key, proto::kMaxName);
  if (rank < 0) fail(PCM_ERR_ARG, "rank {} is negative", rank);
}

// Checks the arguments of a store or load; returns the element size.
std::size_t check_data(int rank, const char* key, const void* buf, int type, long count) {
  check_entry(rank, key);
  std::size_t elem = proto::type_size(type);
  if (elem == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
  if (count < 0) fail(PCM_ERR_ARG, "count {} is negative", count);
  if (count > 0 && !buf) fail(PCM_ERR_ARG, "buf is NULL");
  return elem;
}
}  // namespace

int Runtime::store(int rank, const char* key, const void* buf, int type, long count) {
  if (!world_ready_) fail(PCM_ERR_STATE, "call PCM_Init first");
  std::size_t bytes = static_cast<std::size_t>(count) * check_data(rank, key, buf, type, count);
  client().request({{"op", "store"}, {"job", job_}, {"rank", rank}, {"key", key}, {"type", type},
                    {"count", count}},
                   count > 0 ? buf : "", bytes, 60000);
  return PCM_SUCCESS;
}

int Runtime::load_count(int rank, const char* key, int* type, long* count) {
  if (!world_ready_) fail(PCM_ERR_STATE, "call PCM_Init first");
  check_entry(rank, key);
  auto r = client().request(
      {{"op", "load"}, {"job", job_}, {"rank", rank}, {"key", key}, {"meta_only", true}}, nullptr,
      0, 60000);
  if (type) *type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  if (count) *count = static_cast<long>(proto::get_int(r.header, "count", 0, LONG_MAX));
  return PCM_SUCCESS;
}

int Runtime::load(int rank, const char* key, void* buf, int type, long count) {
  if (!world_ready_) fail(PCM_ERR_STATE, "call PCM_Init first");
  std::size_t elem = check_data(rank, key, buf, type, count);
  auto r = client().request({{"op", "load"}, {"job", job_}, {"rank", rank}, {"key", key}},
                            nullptr, 0, 60000);
  int stored_type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  auto stored_count = proto::get_int(r.header, "count", 0, INT64_MAX);
  if (stored_type != type)
    fail(PCM_ERR_TYPE, "rank {} key '{}' holds {}, not {}", rank, key,
         proto::type_name(stored_type), proto::type_name(type));
  if (stored_count != count)
    fail(PCM_ERR_COUNT, "rank {} key '{}' holds {} elements, not {}", rank, key,
         stored_count, count);
  if (r.data.size() != static_cast<std::size_t>(count) * elem)
    fail(PCM_ERR_INTERNAL, "pcmd sent {} bytes for {} elements", r.data.size(), count);
  if (count > 0) std::memcpy(buf, r.data.data(), r.data.size());
  return PCM_SUCCESS;
}

// ---- reconfiguration -----------------------------------------------------------------------

std::vector<std::string> Runtime::gather_hosts() const {
  char name[kHostLen] = {0};
  int len = 0;
  char proc[MPI_MAX_PROCESSOR_NAME];
  MPI_Get_processor_name(proc, &len);
  std::snprintf(name, sizeof name, "%s", proc);
  if (!proto::valid_host(name)) std::snprintf(name, sizeof name, "unknown");
  std::vector<char> all(rank_ == 0 ? static_cast<std::size_t>(size_) * kHostLen : 0);
  mpi_check(MPI_Gather(name, kHostLen, MPI_CHAR, all.data(), kHostLen, MPI_CHAR, 0, world_),
            "MPI_Gather");
  std::vector<std::string> hosts;
  for (int r = 0; rank_ == 0 && r < size_; ++r) hosts.emplace_back(&all[r * kHostLen]);
  return hosts;
}

void Runtime::report_reconfigured(const Command& cmd, bool success, const std::string& error) {
  try {
    json req{{"op", "reconfigured"}, {"job", job_}, {"command", cmd.id}, {"success", success},
             {"iteration", iteration_}};
    if (success) {
      req["size"] = size_;
      req["hosts"] = gather_hosts();  // collective: every rank of the new world is here
      if (rank_ != 0) return;
    } else {
      req["error"] = error;
    }
    if (!context_) fail(PCM_ERR_CONFIG, "no configuration");
    client().request(req, nullptr, 0, connect_timeout_ms_);
  } catch (const Error& e) {
    log()->warn("[rank {}] could not tell pcmd about command {}: {}", rank_, cmd.id, e.what());
  }
}

std::string Runtime::spawn_command(const char* command) const {
  std::string c = command && *command ? command : self_exe_;
  if (c.find('/') == std::string::npos) return c;  // found through PATH, as mpiexec did
  if (c[0] != '/') c = cwd_ + "/" + c;
  return c;
}

// Called in the parents (after the spawn) and in the child (after it merged with them): builds
// the new world from merged and records who wakes whom.
void Runtime::finish_reconfigure(MPI_Comm merged, int waker_in_merged, int mover_in_merged,
                                 bool i_am_mover, const Command& cmd) {
  int me_in_merged;
  MPI_Comm_rank(merged, &me_in_merged);
  // The new process takes the mover's rank; everyone else keeps theirs.
  MPI_Comm next = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split(merged, i_am_mover ? MPI_UNDEFINED : 0, rank_, &next),
            "MPI_Comm_split");
  if (world_ != MPI_COMM_NULL) MPI_Comm_free(&world_);
  last_done_command_ = cmd.id;
  current_.reset();
  received_.reset();

  if (i_am_mover) {
    // Keep merged: the waker will send on it when the job finalizes.
    waker_comm_ = merged;
    waker_rank_ = waker_in_merged;
    world_ = MPI_COMM_NULL;
    world_ready_ = false;
    process_status_ = PCM_RETIRED;
    poller_.reset();
    log()->info("[rank {}] retired after migrating (command {})", rank_, cmd.id);
    rank_ = -1;
    return;
  }
  world_ = next;
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  world_ready_ = true;
  if (me_in_merged == waker_in_merged) {
    wards_.push_back({merged, mover_in_merged});
  } else {
    MPI_Comm_free(&merged);
  }
  if (rank_ != 0) poller_.reset();  // only rank 0 polls; it may have moved
  report_reconfigured(cmd, true, "");
}

void Runtime::join_as_child(MPI_Comm parent) {
  MPI_Comm merged;
  mpi_check(MPI_Intercomm_merge(parent, 1, &merged), "MPI_Intercomm_merge");
  MPI_Comm_free(&parent);
  json ctx = bcast_json(json{}, 0, merged);
  Command cmd;
  cmd.id = ctx.at("command").get<std::int64_t>();
  cmd.kind = PCM_MIGRATE;
  cmd.rank = ctx.at("rank").get<int>();
  job_ = ctx.at("job").get<std::string>();
  iteration_ = ctx.at("iteration").get<std::int64_t>();
  process_status_ = PCM_MIGRATED;
  rank_ = cmd.rank;
  skip_next_status_ = true;
  finish_reconfigure(merged, ctx.at("waker").get<int>(), cmd.rank, false, cmd);
}

int Runtime::reconfigure(MPI_Comm* comm, const char* command) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  require_world(*comm);
  if (!current_)
    fail(PCM_ERR_STATE, "no reconfiguration is pending (PCM_Status returned neither PCM_MIGRATE "
                        "nor PCM_RECONFIGURE)");
  const Command cmd = *current_;
  std::string exe = spawn_command(command);

  // A spawn of a missing program makes hydra abort the whole job: refuse it while we still can.
  int code = PCM_SUCCESS;
  std::string msg;
  if (rank_ == 0 && exe[0] == '/' && ::access(exe.c_str(), X_OK) != 0) {
    code = PCM_ERR_SPAWN;
    msg = fmt::format("program '{}' is not executable: {}", exe, std::strerror(errno));
  }
  try {
    agree(world_, code, msg);
  } catch (const Error& e) {
    current_.reset();
    last_done_command_ = cmd.id;
    if (rank_ == 0) report_reconfigured(cmd, false, e.what());
    throw;
  }

  std::vector<char*> argv;
  for (auto& a : args_) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "host", cmd.host.c_str());
  if (!cwd_.empty()) MPI_Info_set(info, "wdir", cwd_.c_str());
  MPI_Comm inter = MPI_COMM_NULL;
  int errcode = MPI_SUCCESS;
  int rc = MPI_Comm_spawn(exe.c_str(), argv.data(), 1, info, 0, world_, &inter, &errcode);
  MPI_Info_free(&info);
  int local = (rc == MPI_SUCCESS && errcode == MPI_SUCCESS) ? PCM_SUCCESS : PCM_ERR_SPAWN;
  try {
    agree(world_, local, fmt::format("MPI_Comm_spawn of '{}' on host '{}' failed", exe, cmd.host));
  } catch (const Error& e) {
    if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    current_.reset();
    last_done_command_ = cmd.id;
    if (rank_ == 0) report_reconfigured(cmd, false, e.what());
    throw;
  }

  MPI_Comm merged;
  mpi_check(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
  MPI_Comm_free(&inter);
  // In merged the parents keep their ranks and the child is last. The new rank 0 wakes the mover
  // at the end: the child if the mover was rank 0.
  int waker = cmd.rank == 0 ? size_ : 0;
  json ctx{{"job", job_}, {"command", cmd.id}, {"rank", cmd.rank}, {"iteration", iteration_},
           {"waker", waker}};
  bcast_json(ctx, 0, merged);
  bool mover = rank_ == cmd.rank;
  finish_reconfigure(merged, waker, cmd.rank, mover, cmd);
  *comm = world_;
  return PCM_SUCCESS;
}

// ---- the end -------------------------------------------------------------------------------

void Runtime::wake_wards() {
  for (auto& w : wards_) {
    int token = 1;
    int rc = MPI_Send(&token, 1, MPI_INT, w.rank, kTagWake, w.comm);
    if (rc != MPI_SUCCESS) log()->warn("could not wake a retired process (MPI error {})", rc);
    MPI_Comm_free(&w.comm);
  }
  wards_.clear();
}

int Runtime::exit_retired() {
  if (process_status_ != PCM_RETIRED)
    fail(PCM_ERR_STATE, "this process has not retired (call PCM_Finalize)");
  if (finalized_) fail(PCM_ERR_STATE, "already finalized");
  // Park until the job ends. MPICH's MPI_Finalize would busy-wait for the others, and a blocking
  // MPI_Recv busy-polls too; so test for the wake-up message and sleep in between, which costs
  // a few microseconds of CPU every 20 ms.
  int token = 0, done = 0;
  MPI_Request req;
  mpi_check(MPI_Irecv(&token, 1, MPI_INT, waker_rank_, kTagWake, waker_comm_, &req), "MPI_Irecv");
  const timespec pause{0, 20 * 1000 * 1000};
  while (!done) {
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) nanosleep(&pause, nullptr);
  }
  wake_wards();  // those that retired while this process was their world's rank 0
  MPI_Comm_free(&waker_comm_);
  client_.reset();
  poller_.reset();
  context_.reset();
  finalized_ = true;
  mpi_check(MPI_Finalize(), "MPI_Finalize");
  return PCM_SUCCESS;
}

int Runtime::finalize(MPI_Comm comm) {
  if (finalized_) fail(PCM_ERR_STATE, "already finalized");
  if (process_status_ == PCM_RETIRED) return exit_retired();
  if (world_ready_) {
    require_world(comm);
    if (rank_ == 0) {
      try {
        client().request({{"op", "finished"}, {"job", job_}, {"iteration", iteration_}}, nullptr, 0,
                         connect_timeout_ms_);
      } catch (const Error& e) {
        log()->warn("[rank 0] could not tell pcmd that job {} finished: {}", job_, e.what());
      }
    }
    wake_wards();
    MPI_Comm_free(&world_);
    world_ready_ = false;
  }
  client_.reset();
  poller_.reset();
  context_.reset();
  finalized_ = true;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) mpi_check(MPI_Finalize(), "MPI_Finalize");
  return PCM_SUCCESS;
}

}  // namespace pcm::detail
