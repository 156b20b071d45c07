// runtime.cpp — libpcm's implementation: job registration, the per-iteration status check,
// store/load through pcmd, migration by MPI_Comm_spawn, and retirement without CPU use.
#include "runtime.h"

#include "buffer.h"
#include "mpi_util.h"

#include <limits.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>

#include "error.h"
#include "log.h"
#include "pcm.h"
#include "protocol.h"

namespace pcm::detail {

using proto::json;

namespace {

constexpr int kTagWake = 7701;
constexpr int kHostLen = 256;

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
    data_timeout_ms_ = static_cast<int>(env_long("PCM_DATA_TIMEOUT_MS", 600000, 1, 86400000));
    poll_interval_ms_ = env_long("PCM_POLL_MS", 50, 1, 3600000);
    status_window_us_ = static_cast<double>(env_long("PCM_STATUS_WINDOW_US", 1000, 0, 1000000));
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
    if (process_status_ != PCM_MIGRATED && process_status_ != PCM_SPLITTED)
      fail(PCM_ERR_STATE, "PCM_Init was already called");
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
      json req{{"op", "register"}, {"size", size_}, {"hosts", hosts}, {"executable", self_exe_},
               {"pid", static_cast<long>(::getpid())}};
      if (const char* name = std::getenv("PCM_JOB"); name && *name) {
        if (!proto::valid_name(name))
          fail(PCM_ERR_ARG, "PCM_JOB='{}' is not a valid job name (1-64 of A-Z a-z 0-9 . _ -)", name);
        req["job"] = name;
      }
      if (const char* r = std::getenv("PCM_RESTART"); r && std::string(r) == "1") {
        if (!req.contains("job")) fail(PCM_ERR_ARG, "PCM_RESTART=1 needs PCM_JOB, the job's name");
        req["restart"] = true;
      }
      // A restart waits while pcmd verifies the newest version (every byte's checksum): that
      // grows with the data, like a store or a load. pcmd has answered a ping already.
      auto reply = client().request(req, nullptr, 0,
                                    req.contains("restart") ? data_timeout_ms_ : connect_timeout_ms_);
      job_ = proto::get_string(reply.header, "job", proto::kMaxName);
      if (auto it = reply.header.find("restart"); it != reply.header.end() && it->is_object()) {
        restart_iteration_ = proto::get_int(*it, "iteration", 0, INT64_MAX);
        restart_nprocs_ = static_cast<int>(proto::get_int(*it, "nprocs", 1, 1 << 20));
      }
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
  json shared = bcast_json(json{{"job", job_}, {"restart_iteration", restart_iteration_},
                               {"restart_nprocs", restart_nprocs_}},
                          0, world_);
  job_ = shared.at("job").get<std::string>();
  restart_iteration_ = shared.at("restart_iteration").get<std::int64_t>();
  restart_nprocs_ = shared.at("restart_nprocs").get<int>();
  if (restart_iteration_ >= 0) {
    process_status_ = PCM_RESTARTED;
    reading_version_ = true;
  }
  world_ready_ = true;
  *comm = world_;
  plog()->info("[rank {}] job {} started with {} processes", rank_, job_, size_);
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
        plog()->warn("[rank 0] pcmd has not answered a poll for 10 s; reconnecting");
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
        plog()->warn("[rank 0] pcmd refused a poll: {}",
                    proto::opt_string(reply, "error", 4096).value_or("?"));
      } else if (auto it = reply.find("command"); it != reply.end() && it->is_object()) {
        Command c = Command::from_json(*it, size_);
        if (c.id > last_done_command_ && !current_) received_ = c;
      }
    } catch (const Error& e) {
      plog()->warn("[rank 0] bad poll reply from pcmd: {}", e.what());
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

// Rank 0: the number of PCM_Status calls until the next agreement, from the time per call in
// the window that ends now. A slow or irregular loop gets 1 (agree at every call).
long long Runtime::next_window_calls() {
  const double now = MPI_Wtime();
  const double per_call_us = (now - status_window_start_) * 1e6 / status_window_calls_;
  status_window_start_ = now;
  if (status_window_us_ <= 0 || per_call_us >= status_window_us_) return 1;
  const double calls = status_window_us_ / std::max(per_call_us, 1e-3);
  return std::min(kMaxWindowCalls, std::max(1LL, static_cast<long long>(calls)));
}

int Runtime::status(MPI_Comm comm) {
  require_world(comm);
  if (join_inter_ != MPI_COMM_NULL)
    fail(PCM_ERR_STATE, "this process was spawned by a split: call PCM_Split first");
  reading_version_ = false;  // a restarted process's set-up is over: loads use the working store
  if (skip_next_status_) {
    skip_next_status_ = false;
    return PCM_NONE;
  }
  ++iteration_;
  if (!current_) {
    if (status_countdown_ > 0) {  // inside an agreed window: nothing to do
      --status_countdown_;
      return PCM_NONE;
    }
    // One small broadcast per window is all that the ranks pay when nothing is pending: the
    // pending command's id (0: none), the length of its encoding, and the next window's size.
    long long msg[3] = {0, 0, 1};
    std::string bytes;
    if (rank_ == 0) {
      if (!poller_) reset_poller();
      poll_daemon();
      if (received_) {
        bytes = proto::encode(received_->to_json());
        msg[0] = received_->id;
        msg[1] = static_cast<long long>(bytes.size());
      }
      msg[2] = next_window_calls();
    }
    mpi_check(MPI_Bcast(msg, 3, MPI_LONG_LONG, 0, world_), "MPI_Bcast");
    if (msg[0] == 0) {
      status_window_calls_ = msg[2];
      status_countdown_ = msg[2] - 1;
      return PCM_NONE;
    }
    // A command: every process leaves the window at this call (countdown 0), so the world that
    // the reconfiguration builds starts with the same countdown everywhere.
    bytes.resize(static_cast<std::size_t>(msg[1]));
    mpi_check(MPI_Bcast(bytes.data(), static_cast<int>(msg[1]), MPI_CHAR, 0, world_), "MPI_Bcast");
    current_ = Command::from_json(proto::decode(bytes.data(), bytes.size()), size_);
    received_.reset();
    note_reconfig(*current_);
  }
  // Until the reconfiguration runs, every call reports the same command.
  const Command& c = *current_;
  if (c.kind == Command::Kind::kMigrate) return rank_ == c.rank ? PCM_MIGRATE : PCM_RECONFIGURE;
  return c.size > size_ ? PCM_SPLIT : PCM_MERGE;
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
                   count > 0 ? buf : "", bytes, data_timeout_ms_);
  return PCM_SUCCESS;
}

int Runtime::load_count(int rank, const char* key, int* type, long* count) {
  if (!world_ready_) fail(PCM_ERR_STATE, "call PCM_Init first");
  check_entry(rank, key);
  json req{{"op", "load"}, {"job", job_}, {"rank", rank}, {"key", key}, {"meta_only", true}};
  if (reading_version_) req["version"] = restart_iteration_;
  auto r = client().request(req, nullptr, 0, data_timeout_ms_);
  if (type) *type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  if (count) *count = static_cast<long>(proto::get_int(r.header, "count", 0, LONG_MAX));
  return PCM_SUCCESS;
}

int Runtime::load(int rank, const char* key, void* buf, int type, long count) {
  if (!world_ready_) fail(PCM_ERR_STATE, "call PCM_Init first");
  std::size_t elem = check_data(rank, key, buf, type, count);
  json req{{"op", "load"}, {"job", job_}, {"rank", rank}, {"key", key}};
  if (reading_version_) req["version"] = restart_iteration_;
  auto r = client().request(req, nullptr, 0, data_timeout_ms_);
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

void Runtime::report_reconfigured(const Command& cmd, bool success, const std::string& error,
                                  const json& layout) {
  try {
    json req{{"op", "reconfigured"}, {"job", job_}, {"command", cmd.id}, {"success", success},
             {"iteration", iteration_}};
    if (success) {
      req["size"] = size_;
      req["hosts"] = gather_hosts();  // collective: every rank of the new world is here
      req["pid"] = static_cast<long>(::getpid());
      if (!layout.is_null()) req["layout"] = layout;
      if (rank_ != 0) return;
    } else {
      req["error"] = error;
    }
    if (!context_) fail(PCM_ERR_CONFIG, "no configuration");
    client().request(req, nullptr, 0, connect_timeout_ms_);
  } catch (const Error& e) {
    plog()->warn("[rank {}] could not tell pcmd about command {}: {}", rank_, cmd.id, e.what());
  }
}

std::string Runtime::spawn_command(const char* command) const {
  std::string c = command && *command ? command : self_exe_;
  if (c.find('/') == std::string::npos) return c;  // found through PATH, as mpiexec did
  if (c[0] != '/') c = cwd_ + "/" + c;
  return c;
}

void Runtime::retire(MPI_Comm waker_comm, int waker_rank, const Command& cmd) {
  if (world_ != MPI_COMM_NULL && world_ != waker_comm) MPI_Comm_free(&world_);
  world_ = MPI_COMM_NULL;
  // Keep waker_comm: the waker sends on it when the job finalizes.
  waker_comm_ = waker_comm;
  waker_rank_ = waker_rank;
  world_ready_ = false;
  process_status_ = PCM_RETIRED;
  poller_.reset();
  current_.reset();
  received_.reset();
  last_done_command_ = cmd.id;
  plog()->info("[rank {}] retired ({} {})", rank_, proto::kind_name(cmd.kind), cmd.id);
  rank_ = -1;
  size_ = 0;
}

void Runtime::adopt_world(MPI_Comm world) {
  world_ = world;
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  world_ready_ = true;
  current_.reset();
  received_.reset();
  if (rank_ != 0) poller_.reset();  // only rank 0 polls; it may have moved
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
  if (i_am_mover) {
    retire(merged, waker_in_merged, cmd);
    return;
  }
  if (world_ != MPI_COMM_NULL) MPI_Comm_free(&world_);
  adopt_world(next);
  last_done_command_ = cmd.id;
  if (me_in_merged == waker_in_merged) {
    wards_.push_back({merged, mover_in_merged});
  } else if (merged != migrant_comm_) {  // a migrated process keeps it for PCM_Resume
    MPI_Comm_free(&merged);
  }
  report_reconfigured(cmd, true, "");
}

namespace {

// Moves the units of plan between the processes of comm with one MPI_Alltoallw (an intra- or an
// intercommunicator; npeers is the size of the group addressed). me_from / me_to: the caller's
// rank in the old / new map (-1: none). peer_of_new / peer_of_old: each new / old rank's index in
// the group addressed. Each peer gets one indexed datatype over the application's buffers, so
// the data goes from the old buffer to the new one with no packing copy in between.
void exchange(MPI_Comm comm, int npeers, const std::vector<Transfer>& plan, int me_from, int me_to,
              const Distribution& from, const Distribution& to,
              const std::vector<int>& peer_of_new, const std::vector<int>& peer_of_old,
              const char* oldbuf, char* newbuf, int type) {
  const double t0 = MPI_Wtime();
  const std::size_t elem = proto::type_size(type);
  MPI_Datatype unit;
  mpi_check(MPI_Type_contiguous(static_cast<int>(from.unit_len()), mpi_type(type), &unit),
            "MPI_Type_contiguous");
  MPI_Type_commit(&unit);
  // Per peer: block lengths (units) and byte displacements into the buffer.
  std::vector<std::vector<int>> slen(npeers), rlen(npeers);
  std::vector<std::vector<MPI_Aint>> soff(npeers), roff(npeers);
  long long sent = 0, received = 0;
  for (const Transfer& t : plan) {
    if (t.count > INT_MAX) fail(PCM_ERR_ARG, "a run of {} units is too long", t.count);
    if (t.from == me_from) {
      int p = peer_of_new[t.to];
      slen[p].push_back(static_cast<int>(t.count));
      soff[p].push_back(static_cast<MPI_Aint>(from.unit_offset(t.first, nullptr)) *
                        static_cast<MPI_Aint>(elem));
      sent += t.count;
    }
    if (t.to == me_to) {
      int p = peer_of_old[t.from];
      rlen[p].push_back(static_cast<int>(t.count));
      roff[p].push_back(static_cast<MPI_Aint>(to.unit_offset(t.first, nullptr)) *
                        static_cast<MPI_Aint>(elem));
      received += t.count;
    }
  }
  std::vector<int> sc(npeers, 0), rc(npeers, 0), zero(npeers, 0);
  std::vector<MPI_Datatype> st(npeers, MPI_BYTE), rt(npeers, MPI_BYTE);
  auto make = [&](std::vector<int>& len, std::vector<MPI_Aint>& off, MPI_Datatype* t, int* c) {
    if (len.empty()) return;
    mpi_check(MPI_Type_create_hindexed(static_cast<int>(len.size()), len.data(), off.data(), unit, t),
              "MPI_Type_create_hindexed");
    MPI_Type_commit(t);
    *c = 1;
  };
  for (int p = 0; p < npeers; ++p) {
    make(slen[p], soff[p], &st[p], &sc[p]);
    make(rlen[p], roff[p], &rt[p], &rc[p]);
  }
  const double t1 = MPI_Wtime();
  // MPI wants valid pointers even where nothing moves.
  static char dummy;
  int rcode = MPI_Alltoallw(oldbuf ? oldbuf : &dummy, sc.data(), zero.data(), st.data(),
                            newbuf ? newbuf : &dummy, rc.data(), zero.data(), rt.data(), comm);
  const double t2 = MPI_Wtime();
  for (int p = 0; p < npeers; ++p) {
    if (sc[p]) MPI_Type_free(&st[p]);
    if (rc[p]) MPI_Type_free(&rt[p]);
  }
  MPI_Type_free(&unit);
  mpi_check(rcode, "MPI_Alltoallw");
  const long long unit_bytes = static_cast<long long>(elem) * from.unit_len();
  plog()->debug("exchange: sent {} B, received {} B; types {:.4f} s, alltoallw {:.4f} s",
               sent * unit_bytes, received * unit_bytes, t1 - t0, t2 - t1);
}

// ---- a split's data by cross-memory attach --------------------------------------------------
// MPICH's ch3 connects separately spawned groups over TCP, even on one host, which made a
// split's data phase run at a tenth of memcpy's speed. Where the old and the new processes share
// a host, the new ones read the old buffers directly with process_vm_readv (one copy, no
// sockets). Each old rank publishes its pid, its host, its buffer's address and a random token
// kept at a published address; a new process reads the token first, so a pid that names another
// process (another host or pid namespace) or a kernel that refuses the read (ptrace rules such
// as Yama's) only means that the ranks fall back, together, to MPI_Alltoallw.

std::uint64_t host_hash() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name - 1);
  return std::hash<std::string>{}(name);
}

// Collective over the old world: what its rank 0 puts in the split's header so that the new
// processes can read every old buffer ("cma": null when PCM_SPLIT_CMA=0 on rank 0).
json cma_sources(MPI_Comm world, int rank, int size, const void* buf, const std::uint64_t* token) {
  std::uint64_t mine[5] = {static_cast<std::uint64_t>(::getpid()), host_hash(),
                           reinterpret_cast<std::uintptr_t>(buf),
                           reinterpret_cast<std::uintptr_t>(token), *token};
  std::vector<std::uint64_t> all(rank == 0 ? 5 * static_cast<std::size_t>(size) : 0);
  mpi_check(MPI_Gather(mine, 5, MPI_UINT64_T, all.data(), 5, MPI_UINT64_T, 0, world), "MPI_Gather");
  if (rank != 0 || env_long("PCM_SPLIT_CMA", 1, 0, 1) == 0) return nullptr;
  json sources = json::array();
  for (int r = 0; r < size; ++r) {
    const std::uint64_t* v = &all[5 * static_cast<std::size_t>(r)];
    sources.push_back(json::array({v[0], v[1], v[2], v[3], v[4]}));
  }
  return sources;
}

// Reads into newbuf the units that plan sends to new rank me, from the old buffers that sources
// describes. False (and the caller falls back) if any source is elsewhere or any read fails.
bool cma_read(const json& sources, const std::vector<Transfer>& plan, int me,
              const Distribution& from, const Distribution& to, char* newbuf, std::size_t elem) {
  if (!sources.is_array() || sources.size() != static_cast<std::size_t>(from.size())) return false;
  const std::uint64_t here = host_hash();
  const std::size_t unit_bytes = elem * static_cast<std::size_t>(from.unit_len());
  auto read = [](const json& src, void* dst, std::uint64_t addr, std::size_t n) {
    while (n > 0) {  // one read moves at most about 2 GiB
      const std::size_t chunk = std::min<std::size_t>(n, std::size_t{1} << 30);
      iovec local{dst, chunk}, remote{reinterpret_cast<void*>(addr), chunk};
      if (::process_vm_readv(static_cast<pid_t>(src[0].get<std::uint64_t>()), &local, 1, &remote,
                             1, 0) != static_cast<ssize_t>(chunk))
        return false;
      dst = static_cast<char*>(dst) + chunk;
      addr += chunk;
      n -= chunk;
    }
    return true;
  };
  std::vector<bool> checked(static_cast<std::size_t>(from.size()), false);
  for (const Transfer& t : plan) {
    if (t.to != me) continue;
    const json& src = sources.at(static_cast<std::size_t>(t.from));
    if (!checked[static_cast<std::size_t>(t.from)]) {
      std::uint64_t token = 0;
      if (src[1].get<std::uint64_t>() != here ||
          !read(src, &token, src[3].get<std::uint64_t>(), sizeof token) ||
          token != src[4].get<std::uint64_t>())
        return false;
      checked[static_cast<std::size_t>(t.from)] = true;
    }
    const std::uint64_t at = src[2].get<std::uint64_t>() +
                             static_cast<std::uint64_t>(from.unit_offset(t.first, nullptr)) * elem;
    char* dst = newbuf + static_cast<std::size_t>(to.unit_offset(t.first, nullptr)) * elem;
    if (!read(src, dst, at, static_cast<std::size_t>(t.count) * unit_bytes)) return false;
  }
  return true;
}

// Collective over a split's intercommunicator (and the new world, world_new, on the new side):
// whether every new process has read its data (old side: mine is ignored). Until it returns,
// the old buffers stay in place.
bool cma_all_read(bool mine, bool old_side, MPI_Comm inter, MPI_Comm world_new) {
  int ok = mine ? 1 : 0, all = 0;
  if (!old_side) mpi_check(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world_new), "MPI_Allreduce");
  // On an intercommunicator each group receives the reduction of the other group's values.
  // The old processes only wait here while the new ones copy: they poll gently, leaving the
  // cores to the readers (on a full host a busy-polling waiter halves a reader's speed).
  if (old_side) ok = 1;
  MPI_Request req;
  mpi_check(MPI_Iallreduce(&ok, &all, 1, MPI_INT, MPI_MIN, inter, &req), "MPI_Iallreduce");
  int done = 0;
  const timespec pause{0, old_side ? 200000 : 0};
  while (!done) {
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done && old_side) nanosleep(&pause, nullptr);
  }
  return old_side ? all == 1 : ok == 1;
}

}  // namespace

void Runtime::join_as_child(MPI_Comm parent) {
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  json ctx = bcast_inter(json{}, false, me, parent);
  job_ = ctx.at("job").get<std::string>();
  iteration_ = ctx.at("pcm_iteration").get<std::int64_t>();
  restart_iteration_ = ctx.at("restart").at("iteration").get<std::int64_t>();
  restart_nprocs_ = ctx.at("restart").at("nprocs").get<int>();
  last_reconfig_ = ctx.at("reconfig");
  skip_next_status_ = true;
  if (ctx.at("kind") == "migrate") {
    MPI_Comm merged;
    mpi_check(MPI_Intercomm_merge(parent, 1, &merged), "MPI_Intercomm_merge");
    MPI_Comm_free(&parent);
    Command cmd = Command::from_json(ctx.at("command"), ctx.at("size").get<int>());
    process_status_ = PCM_MIGRATED;
    rank_ = cmd.rank;
    // PCM_Resume receives the mover's registered state on merged.
    migrant_comm_ = merged;
    migrant_src_ = cmd.rank;
    migrant_comm_owned_ = ctx.at("waker").get<int>() != ctx.at("size").get<int>();
    finish_reconfigure(merged, ctx.at("waker").get<int>(), cmd.rank, false, cmd);
    return;
  }
  // A split: this process belongs to a new world spawned as one group. Its data arrives when the
  // application calls PCM_Split (or PCM_Resume).
  process_status_ = PCM_SPLITTED;
  join_inter_ = parent;
  join_ctx_ = std::move(ctx);
  MPI_Comm world;
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
  adopt_world(world);
}

void Runtime::check_pending(MPI_Comm comm, bool want_split) const {
  require_world(comm);
  if (!current_ || current_->kind == Command::Kind::kMigrate)
    fail(PCM_ERR_STATE, "no {} is pending", want_split ? "split" : "merge");
  bool grows = current_->size > size_;
  if (grows != want_split)
    fail(PCM_ERR_STATE, "the pending reconfiguration is a {} ({} -> {} processes): call {}",
         proto::kind_name(current_->kind), size_, current_->size, grows ? "PCM_Split" : "PCM_Merge");
}

// The program must exist, or hydra aborts the job: rank 0 checks, everyone gets the same answer.
void Runtime::agree_spawnable(const std::string& exe, const Command& cmd) {
  int code = PCM_SUCCESS;
  std::string msg;
  if (rank_ == 0 && exe[0] == '/' && ::access(exe.c_str(), X_OK) != 0) {
    code = PCM_ERR_SPAWN;
    msg = fmt::format("program '{}' is not executable: {}", exe, std::strerror(errno));
  }
  try {
    agree(world_, code, msg);
  } catch (const Error& e) {
    abandon(cmd, e.what());
    throw;
  }
}

// Spawns one process per entry of hosts, as one group (so that they share memory among
// themselves), with the arguments this process was started with. Collective over world_.
MPI_Comm Runtime::spawn(const std::string& exe, const std::vector<std::string>& hosts) {
  std::vector<char*> argv;
  for (auto& a : args_) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> cmds;
  std::vector<char**> argvs;
  std::vector<int> counts;
  std::vector<MPI_Info> infos;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0 && hosts[i] == hosts[i - 1]) {
      ++counts.back();
      continue;
    }
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "host", hosts[i].c_str());
    if (!cwd_.empty()) MPI_Info_set(info, "wdir", cwd_.c_str());
    cmds.push_back(const_cast<char*>(exe.c_str()));
    argvs.push_back(argv.data());
    counts.push_back(1);
    infos.push_back(info);
  }
  MPI_Comm inter = MPI_COMM_NULL;
  std::vector<int> errcodes(hosts.size(), MPI_SUCCESS);
  int rc = MPI_Comm_spawn_multiple(static_cast<int>(cmds.size()), cmds.data(), argvs.data(),
                                   counts.data(), infos.data(), 0, world_, &inter,
                                   errcodes.data());
  for (auto& info : infos) MPI_Info_free(&info);
  int local = rc == MPI_SUCCESS ? PCM_SUCCESS : PCM_ERR_SPAWN;
  for (int e : errcodes)
    if (e != MPI_SUCCESS) local = PCM_ERR_SPAWN;
  try {
    agree(world_, local, fmt::format("MPI_Comm_spawn of {} x '{}' failed", hosts.size(), exe));
  } catch (const Error&) {
    if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    throw;
  }
  return inter;
}

int Runtime::reconfigure(MPI_Comm* comm, const char* command) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  require_world(*comm);
  migrate(command, nullptr);
  *comm = world_;
  return PCM_SUCCESS;
}

void Runtime::migrate(const char* command, const MigrationSender& send) {
  if (!current_ || current_->kind != Command::Kind::kMigrate)
    fail(PCM_ERR_STATE, "no migration is pending (PCM_Status returned neither PCM_MIGRATE nor "
                        "PCM_RECONFIGURE)");
  const Command cmd = *current_;
  std::string exe = spawn_command(command);
  agree_spawnable(exe, cmd);
  MPI_Comm inter;
  try {
    inter = spawn(exe, {cmd.host});
  } catch (const Error& e) {
    abandon(cmd, e.what());
    throw;
  }
  // In merged the parents keep their ranks and the child is last. The new rank 0 wakes the mover
  // at the end: the child if the mover was rank 0.
  const int child = size_;
  const int waker = cmd.rank == 0 ? child : 0;
  bcast_inter(json{{"kind", "migrate"}, {"job", job_}, {"command", cmd.to_json()},
                   {"size", size_}, {"pcm_iteration", iteration_}, {"waker", waker},
                   {"restart", restart_json()}, {"reconfig", last_reconfig_}},
              true, rank_, inter);
  MPI_Comm merged;
  mpi_check(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
  MPI_Comm_free(&inter);
  const bool mover = rank_ == cmd.rank;
  finish_reconfigure(merged, waker, cmd.rank, mover, cmd);
  // The mover keeps merged (its waker's communicator) until it is woken.
  if (mover && send) send(merged, child);
}

void Runtime::note_reconfig(const Command& cmd) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  last_reconfig_ = json{{"kind", cmd.kind == Command::Kind::kMigrate ? PCM_MIGRATE
                                 : cmd.size > size_    ? PCM_SPLIT
                                                       : PCM_MERGE},
                        {"size_before", size_},
                        {"started", static_cast<double>(ts.tv_sec) + 1e-9 * ts.tv_nsec}};
}

int Runtime::reconfig_last(int* kind, int* size_before, double* started) const {
  if (last_reconfig_.is_null()) fail(PCM_ERR_STATE, "this world has not been reconfigured");
  if (kind) *kind = last_reconfig_.at("kind").get<int>();
  if (size_before) *size_before = last_reconfig_.at("size_before").get<int>();
  if (started) *started = last_reconfig_.at("started").get<double>();
  return PCM_SUCCESS;
}

// A reconfiguration given up before anything changed: pcmd hears why, and the command is done.
void Runtime::abandon(const Command& cmd, const std::string& why) {
  current_.reset();
  last_done_command_ = cmd.id;
  if (rank_ == 0) report_reconfigured(cmd, false, why);
}

// What a spawned process needs to know about the restart its job came from.
json Runtime::restart_json() const {
  return json{{"iteration", restart_iteration_}, {"nprocs", restart_nprocs_}};
}

namespace {
void check_reshape_args(void** buf, PCM_Dist* dist, int* iteration, int* rank, int* size,
                        MPI_Comm* comm, int type) {
  if (!buf || !dist || !iteration || !rank || !size || !comm)
    fail(PCM_ERR_ARG, "buf, dist, iteration, rank, size and comm must not be NULL");
  if (proto::type_size(type) == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
}
}  // namespace

int Runtime::split(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
                   MPI_Comm* comm, const char* command) {
  check_reshape_args(buf, dist, iteration, rank, size, comm, type);
  const std::vector<ArrayRef> arrays{{buf, type, dist}};
  if (join_inter_ != MPI_COMM_NULL) {
    json extra;
    receive_split(arrays, &extra);
    *iteration = extra.at("iteration").get<int>();
  } else {
    check_pending(*comm, true);
    send_split(arrays, json{{"iteration", *iteration}}, command);
  }
  *rank = rank_;
  *size = size_;
  *comm = world_;
  return PCM_SUCCESS;
}

// A process of the new world: receive every array the old world sends. The data moves first, then
// what was sent is checked against what the caller expects (the old world must not be left
// waiting for a process that gave up early).
void Runtime::receive_split(const std::vector<ArrayRef>& arrays, json* extra) {
  const double t0 = wtime();
  const json ctx = join_ctx_;
  const json& sent = ctx.at("arrays");
  const std::size_t n = sent.size();
  std::vector<Distribution> from(n), to(n);
  std::vector<int> types(n);
  std::vector<char*> bufs(n, nullptr);
  std::vector<std::vector<Transfer>> moves(n);
  auto free_all = [&] {
    for (char* b : bufs) std::free(b);
  };
  Command cmd;
  bool read = true;
  try {
    cmd = Command::from_json(ctx.at("command"), ctx.at("old_size").get<int>());
    for (std::size_t i = 0; i < n; ++i) {
      from[i] = Distribution::from_json(sent[i].at("from"));
      to[i] = Distribution::from_json(sent[i].at("to"));
      types[i] = sent[i].at("type").get<int>();
      bufs[i] = new_buffer(to[i], rank_, proto::type_size(types[i]));
      moves[i] = plan(from[i], to[i]);
    }
    const double t_read = wtime();
    for (std::size_t i = 0; i < n && read; ++i)
      read = cma_read(sent[i].at("cma"), moves[i], rank_, from[i], to[i], bufs[i],
                      proto::type_size(types[i]));
    plog()->debug("[rank {}] split: direct read {:.4f} s ({})", rank_, wtime() - t_read,
                 read ? "done" : "not possible");
  } catch (...) {
    free_all();
    throw;
  }
  if (!cma_all_read(read, false, join_inter_, world_)) {
    for (std::size_t i = 0; i < n; ++i)
      exchange(join_inter_, from[i].size(), moves[i], -1, rank_, from[i], to[i],
               identity(to[i].size()), identity(from[i].size()), nullptr, bufs[i], types[i]);
  }
  t_data_ = wtime() - t0;
  const double t1 = wtime();
  if (rank_ == 0) {
    for (int r = 0; r < ctx.at("old_size").get<int>(); ++r) wards_.push_back({join_inter_, r});
  } else {
    MPI_Comm_free(&join_inter_);
  }
  join_inter_ = MPI_COMM_NULL;
  last_done_command_ = cmd.id;
  report_reconfigured(cmd, true, "", rank_ == 0 && n > 0 ? to[0].to_json() : json());
  t_spawn_ = 0;
  t_rebuild_ = wtime() - t1;
  if (n != arrays.size()) {
    free_all();
    fail(PCM_ERR_ARG, "the old world sent {} arrays, this process expects {}", n, arrays.size());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (types[i] != arrays[i].type) {
      free_all();
      fail(PCM_ERR_TYPE, "the old world sent {} data, not {}", proto::type_name(types[i]),
           proto::type_name(arrays[i].type));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::free(*arrays[i].buf);
    *arrays[i].buf = bufs[i];
    delete *arrays[i].dist;
    *arrays[i].dist = new PCM_Dist_s{std::move(to[i])};
  }
  *extra = ctx.at("extra");
}

// The old world: spawn the new one, let it read (or send it) every array, and retire.
void Runtime::send_split(const std::vector<ArrayRef>& arrays, const json& extra,
                         const char* command) {
  agree_reshape_args(arrays);
  const double t0 = wtime();
  const Command cmd = *current_;
  std::vector<Distribution> next;
  for (const ArrayRef& a : arrays)
    next.push_back(cmd.kind == Command::Kind::kSplit ? (*a.dist)->d.split(cmd.rank, cmd.into)
                                       : (*a.dist)->d.resized(cmd.size));
  std::string exe = spawn_command(command);
  agree_spawnable(exe, cmd);
  MPI_Comm inter;
  try {
    inter = spawn(exe, cmd.hosts);
  } catch (const Error& e) {
    abandon(cmd, e.what());
    throw;
  }
  t_spawn_ = wtime() - t0;
  const double t1 = wtime();
  cma_token_ = std::random_device{}() * 4294967296ULL + std::random_device{}();
  json sent = json::array();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    sent.push_back({{"type", arrays[i].type},
                    {"from", (*arrays[i].dist)->d.to_json()},
                    {"to", next[i].to_json()},
                    {"cma", cma_sources(world_, rank_, size_, *arrays[i].buf, &cma_token_)}});
  }
  bcast_inter(json{{"kind", "split"}, {"job", job_}, {"command", cmd.to_json()},
                   {"old_size", size_}, {"pcm_iteration", iteration_}, {"arrays", sent},
                   {"extra", extra}, {"restart", restart_json()}, {"reconfig", last_reconfig_}},
              true, rank_, inter);
  if (!cma_all_read(false, true, inter, MPI_COMM_NULL)) {
    for (std::size_t i = 0; i < arrays.size(); ++i)
      exchange(inter, next[i].size(), plan((*arrays[i].dist)->d, next[i]), rank_, -1,
               (*arrays[i].dist)->d, next[i], identity(next[i].size()), identity(size_),
               static_cast<const char*>(*arrays[i].buf), nullptr, arrays[i].type);
  }
  t_data_ = wtime() - t1;
  t_rebuild_ = 0;
  for (const ArrayRef& a : arrays) {
    std::free(*a.buf);
    *a.buf = nullptr;
    delete *a.dist;
    *a.dist = nullptr;
  }
  retire(inter, 0, cmd);  // the new world's rank 0 wakes the whole old world at the end
}

// The maps and buffers a split or merge starts from must fit this world; every rank gets the same
// answer, so no rank enters the exchange alone.
void Runtime::agree_reshape_args(const std::vector<ArrayRef>& arrays) {
  int code = PCM_SUCCESS;
  std::string msg;
  for (const ArrayRef& a : arrays) {
    if (!*a.dist || (*a.dist)->d.size() != size_) {
      code = PCM_ERR_ARG;
      msg = *a.dist ? fmt::format("the map describes {} processes, the world has {}",
                                  (*a.dist)->d.size(), size_)
                    : "dist is NULL";
    } else if (!*a.buf && (*a.dist)->d.local_elements(rank_) > 0) {
      code = PCM_ERR_ARG;
      msg = "buf is NULL";
    }
    if (code != PCM_SUCCESS) break;
  }
  agree(world_, code, msg);
}

Distribution Runtime::merged_distribution(const Distribution& d, std::vector<int>* new_of) const {
  const Command& cmd = *current_;
  if (cmd.kind == Command::Kind::kMerge) {
    Distribution next = d.merge(cmd.ranks, new_of);
    // The lowest listed rank keeps the merged data; the other listed ranks leave.
    int keeper = *std::min_element(cmd.ranks.begin(), cmd.ranks.end());
    for (int r : cmd.ranks)
      if (r != keeper) (*new_of)[r] = -1;
    return next;
  }
  Distribution next = d.resized(cmd.size);
  new_of->resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) (*new_of)[r] = r < cmd.size ? r : -1;
  return next;
}

int Runtime::merge_datacnts(const Distribution* dist, long* count, int* merge_rank, MPI_Comm comm) {
  check_pending(comm, false);
  if (!dist || dist->size() != size_) fail(PCM_ERR_ARG, "dist does not describe this world");
  std::vector<int> new_of;
  Distribution next = merged_distribution(*dist, &new_of);
  int me = new_of[rank_];
  if (count) *count = me >= 0 ? static_cast<long>(next.local_elements(me)) : 0;
  if (merge_rank) *merge_rank = me;
  return PCM_SUCCESS;
}

int Runtime::merge(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
                   MPI_Comm* comm) {
  check_reshape_args(buf, dist, iteration, rank, size, comm, type);
  check_pending(*comm, false);
  merge_arrays({{buf, type, dist}});
  *rank = rank_;
  *size = size_;
  *comm = world_;
  (void)iteration;  // nothing is spawned: every survivor already knows it
  return PCM_SUCCESS;
}

std::vector<int> Runtime::merged_ranks() const {
  const Command& cmd = *current_;
  std::vector<int> new_of(static_cast<std::size_t>(size_), -1);
  if (cmd.kind == Command::Kind::kMerge) {
    const int keeper = *std::min_element(cmd.ranks.begin(), cmd.ranks.end());
    int next = 0;
    for (int r = 0; r < size_; ++r)
      if (r == keeper || std::find(cmd.ranks.begin(), cmd.ranks.end(), r) == cmd.ranks.end())
        new_of[r] = next++;
  } else {
    for (int r = 0; r < size_ && r < cmd.size; ++r) new_of[r] = r;
  }
  return new_of;
}

void Runtime::merge_arrays(const std::vector<ArrayRef>& arrays) {
  agree_reshape_args(arrays);
  const double t0 = wtime();
  const Command cmd = *current_;
  // Every array must number the survivors alike (maps PCM builds do: ranks follow the data).
  std::vector<int> new_of = merged_ranks();
  std::vector<Distribution> next;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    std::vector<int> of;
    next.push_back(merged_distribution((*arrays[i].dist)->d, &of));
    if (i == 0) {
      new_of = of;
    } else if (of != new_of) {
      fail(PCM_ERR_ARG, "the maps of the registered arrays order the merged ranks differently");
    }
  }
  const int new_size = static_cast<int>(
      std::count_if(new_of.begin(), new_of.end(), [](int r) { return r >= 0; }));
  std::vector<int> old_of_new(static_cast<std::size_t>(new_size), -1);
  for (int r = 0; r < size_; ++r)
    if (new_of[r] >= 0) old_of_new[new_of[r]] = r;
  const int me = new_of[rank_];
  std::vector<char*> newbufs(arrays.size(), nullptr);
  try {
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const std::size_t elem = proto::type_size(arrays[i].type);
      if (me >= 0) newbufs[i] = new_buffer(next[i], me, elem);
      // Plan in new ranks; the exchange addresses each new rank through the old rank that keeps
      // it.
      exchange(world_, size_, plan((*arrays[i].dist)->d, next[i]), rank_, me, (*arrays[i].dist)->d,
               next[i], old_of_new, identity(size_), static_cast<const char*>(*arrays[i].buf),
               newbufs[i], arrays[i].type);
    }
  } catch (...) {
    for (char* b : newbufs) std::free(b);
    throw;
  }
  t_spawn_ = 0;
  t_data_ = wtime() - t0;
  const double t1 = wtime();
  MPI_Comm nw = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split(world_, me >= 0 ? 0 : MPI_UNDEFINED, me, &nw), "MPI_Comm_split");
  const json layout = me == 0 && !next.empty() ? next[0].to_json() : json();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    std::free(*arrays[i].buf);
    *arrays[i].buf = newbufs[i];
    delete *arrays[i].dist;
    *arrays[i].dist = me >= 0 ? new PCM_Dist_s{std::move(next[i])} : nullptr;
  }
  const int waker = old_of_new[0];
  if (me < 0) {
    retire(world_, waker, cmd);  // the old world stays, for the waker's message
    t_rebuild_ = wtime() - t1;
    return;
  }
  if (rank_ == waker) {
    for (int r = 0; r < size_; ++r)
      if (new_of[r] < 0) wards_.push_back({world_, r});
  } else {
    MPI_Comm_free(&world_);
  }
  adopt_world(nw);
  last_done_command_ = cmd.id;
  report_reconfigured(cmd, true, "", layout);
  t_rebuild_ = wtime() - t1;
}

int Runtime::commit(MPI_Comm comm, int iteration) {
  require_world(comm);
  int code = iteration < 0 ? PCM_ERR_ARG : PCM_SUCCESS;
  std::string msg = code ? fmt::format("iteration {} is negative", iteration) : "";
  // Every rank's stores have returned once all are here; then rank 0 asks pcmd to commit.
  agree(world_, code, msg);
  if (rank_ == 0) {
    try {
      client().request({{"op", "commit"}, {"job", job_}, {"iteration", iteration}, {"size", size_}},
                       nullptr, 0, data_timeout_ms_);
    } catch (const Error& e) {
      code = e.code();
      msg = e.what();
    }
  }
  agree(world_, code, msg);
  return PCM_SUCCESS;
}

int Runtime::restart_info(int* iteration, int* nprocs) const {
  if (restart_iteration_ < 0) fail(PCM_ERR_STATE, "this job was not restarted");
  if (iteration) *iteration = static_cast<int>(restart_iteration_);
  if (nprocs) *nprocs = restart_nprocs_;
  return PCM_SUCCESS;
}

int Runtime::load_redistribute(const char* key, int type, const Distribution& from,
                               const Distribution& to, int rank, void* buf) {
  if (!reading_version_)
    fail(PCM_ERR_STATE, "only a restarted process, before its first PCM_Status, reads a version");
  if (rank < 0 || rank >= to.size()) fail(PCM_ERR_ARG, "rank {} is not in the map", rank);
  const std::size_t elem = proto::type_size(type);
  if (elem == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
  if (!buf && to.local_elements(rank) > 0) fail(PCM_ERR_ARG, "buf is NULL");
  // Each old rank that owns some of this rank's units is read once, whole, then cut up.
  std::vector<Transfer> mine;
  for (const Transfer& t : plan(from, to))
    if (t.to == rank) mine.push_back(t);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const Transfer& a, const Transfer& b) { return a.from < b.from; });
  std::vector<char> part;
  int loaded = -1;
  const std::size_t unit_bytes = elem * static_cast<std::size_t>(from.unit_len());
  for (const Transfer& t : mine) {
    if (t.from != loaded) {
      long count = static_cast<long>(from.local_elements(t.from));
      part.resize(static_cast<std::size_t>(count) * elem);
      load(t.from, key, part.data(), type, count);
      loaded = t.from;
    }
    std::memcpy(static_cast<char*>(buf) + to.unit_offset(t.first, nullptr) * elem,
                part.data() + from.unit_offset(t.first, nullptr) * elem,
                static_cast<std::size_t>(t.count) * unit_bytes);
  }
  return PCM_SUCCESS;
}

void Runtime::reconfig_times(double* spawn, double* data, double* rebuild) const {
  if (spawn) *spawn = t_spawn_;
  if (data) *data = t_data_;
  if (rebuild) *rebuild = t_rebuild_;
}

// ---- the end -------------------------------------------------------------------------------

void Runtime::wake_wards() {
  std::vector<MPI_Comm> comms;
  for (auto& w : wards_) {
    int token = 1;
    int rc = MPI_Send(&token, 1, MPI_INT, w.rank, kTagWake, w.comm);
    if (rc != MPI_SUCCESS) plog()->warn("could not wake a retired process (MPI error {})", rc);
    if (std::find(comms.begin(), comms.end(), w.comm) == comms.end()) comms.push_back(w.comm);
  }
  for (auto& c : comms) MPI_Comm_free(&c);  // several wards may share one communicator
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
        plog()->warn("[rank 0] could not tell pcmd that job {} finished: {}", job_, e.what());
      }
    }
    wake_wards();
    if (migrant_comm_owned_) MPI_Comm_free(&migrant_comm_);
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
