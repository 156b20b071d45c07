// runtime.cpp — libpcm's lifecycle (MPI_PCM_Init, PCM_Init, PCM_Finalize, PCM_Exit and the state
// checks) and the per-iteration status check.
#include "runtime.h"

#include <limits.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "auth.h"
#include "error.h"
#include "log.h"
#include "profiler.h"
#include "protocol.h"
#include "world.h"

namespace pcm::detail {

using proto::json;

Runtime& Runtime::instance() {
  static Runtime r;
  return r;
}

int Runtime::mpi_pcm_init(int* argc, char*** argv) {
  if (phase_ != Phase::kUninit) fail(PCM_ERR_STATE, "MPI_PCM_Init was already called");
  int already = 0;
  MPI_Initialized(&already);
  if (!already) mpi_check(MPI_Init(argc, argv), "MPI_Init");
  phase_ = Phase::kMpiReady;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  if (argc && argv && *argv)
    for (int i = 1; i < *argc; ++i) args_.emplace_back((*argv)[i]);
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf)) cwd_ = buf;
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) self_exe_.assign(buf, static_cast<std::size_t>(n));

  Outcome setup = attempt([&] {
    const Config config = read_config(default_config_path());
    settings_ = Settings::from_env();
    split_leaves_ = settings_.retire_leave >= 0 ? settings_.retire_leave == 1
                                                : Retirement::mpi_lets_spawners_leave();
    window_ = StatusWindow(settings_.status_window_us);
    link_.open(config, default_config_path(), settings_.poll_interval_ms, settings_.reconnect_ms);
  });

  // A spawned process joins the world its parents are rebuilding before anything else: the
  // parents are waiting for it, whatever happens to its own set-up.
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) join_as_child(parent);

  try {
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (setup.ok() && me == 0) {
      setup = attempt([&] {
        link_.request({{"op", "ping"}}, nullptr, 0, settings_.connect_timeout_ms);
      });
      if (!setup.ok())
        setup.msg = fmt::format("{} (configuration file {})", setup.msg, default_config_path());
    }
    agree(MPI_COMM_WORLD, setup.code, setup.msg);
  } catch (const Error& e) {
    init_error_ = e.what();
    throw;
  }
  return PCM_SUCCESS;
}

int Runtime::init(MPI_Comm* comm) {
  if (phase_ == Phase::kUninit) fail(PCM_ERR_STATE, "call MPI_PCM_Init first");
  if (!init_error_.empty()) fail(PCM_ERR_STATE, "MPI_PCM_Init failed: {}", init_error_);
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  if (phase_ == Phase::kActive) {
    if (process_status_ != PCM_MIGRATED && process_status_ != PCM_SPLITTED)
      fail(PCM_ERR_STATE, "PCM_Init was already called");
    *comm = world_.get();  // a spawned process got its world while joining
    return PCM_SUCCESS;
  }
  if (phase_ != Phase::kMpiReady) fail(PCM_ERR_STATE, "PCM_Init was already called");
  if (*comm == MPI_COMM_NULL) fail(PCM_ERR_ARG, "comm is MPI_COMM_NULL");

  mpi::Comm dup;
  mpi_check(MPI_Comm_dup(*comm, dup.out()), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup.get(), MPI_ERRORS_RETURN);
  MPI_Comm_rank(dup.get(), &rank_);
  MPI_Comm_size(dup.get(), &size_);

  std::vector<std::string> hosts = gather_hosts(dup.get());
  agreed(dup.get(), [&] {  // on failure, dup goes
    if (rank_ != 0) return;
    json req{{"op", "register"},
             {"size", size_},
             {"hosts", hosts},
             {"executable", self_exe_},
             {"pid", static_cast<long>(::getpid())},
             // Known again if the request is sent twice (pcmd restarted before answering).
             {"nonce", random_hex(16)}};
    if (!settings_.job.empty()) {
      if (!proto::valid_name(settings_.job))
        fail(PCM_ERR_ARG, "PCM_JOB='{}' is not a valid job name (1-64 of A-Z a-z 0-9 . _ -)",
             settings_.job);
      req["job"] = settings_.job;
    }
    // The job's placement strategy for the processes pcmd places later (pcmd checks it).
    if (!settings_.placement.empty()) req["placement"] = proto::clean_text(settings_.placement, 32);
    if (settings_.restart) {
      if (!req.contains("job")) fail(PCM_ERR_ARG, "PCM_RESTART=1 needs PCM_JOB, the job's name");
      req["restart"] = true;
    }
    // A restart waits while pcmd verifies the newest version (every byte's checksum): that
    // grows with the data, like a store or a load. pcmd has answered a ping already.
    auto reply = link_.request(
        req, nullptr, 0,
        req.contains("restart") ? settings_.data_timeout_ms : settings_.connect_timeout_ms);
    job_ = proto::get_string(reply.header, "job", proto::kMaxName);
    incarnation_ = proto::opt_int(reply.header, "incarnation", 0, INT64_MAX).value_or(0);
    if (auto it = reply.header.find("restart"); it != reply.header.end() && it->is_object()) {
      restart_iteration_ = proto::get_int(*it, "iteration", 0, INT64_MAX);
      restart_nprocs_ = static_cast<int>(proto::get_int(*it, "nprocs", 1, 1 << 20));
    }
  });
  world_ = std::move(dup);
  profiler().start(settings_.profile_ms, world_.get(), rank_, size_);
  json shared = bcast_json(json{{"job", job_},
                                {"incarnation", incarnation_},
                                {"restart_iteration", restart_iteration_},
                                {"restart_nprocs", restart_nprocs_}},
                           0, world_.get());
  job_ = shared.at("job").get<std::string>();
  incarnation_ = shared.at("incarnation").get<std::int64_t>();
  link_.watch(job_, incarnation_, processor_name(), settings_.connect_timeout_ms);
  restart_iteration_ = shared.at("restart_iteration").get<std::int64_t>();
  restart_nprocs_ = shared.at("restart_nprocs").get<int>();
  if (restart_iteration_ >= 0) {
    process_status_ = PCM_RESTARTED;
    reading_version_ = true;
  }
  phase_ = Phase::kActive;
  *comm = world_.get();
  plog()->info("[rank {}] job {} started with {} processes", rank_, job_, size_);
  return PCM_SUCCESS;
}

int Runtime::process_status() const {
  if (phase_ != Phase::kActive && process_status_ != PCM_RETIRED) return PCM_ERROR;
  return process_status_;
}

void Runtime::require_world(MPI_Comm comm) const {
  if (process_status_ == PCM_RETIRED)
    fail(PCM_ERR_STATE, "this process has retired; call PCM_Exit");
  if (phase_ != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  if (comm != world_.get())
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

int Runtime::status(MPI_Comm comm) {
  require_world(comm);
  if (join_inter_)
    fail(PCM_ERR_STATE,
         "this process was spawned by a split: call PCM_Resume (or PCM_Split) first");
  reading_version_ = false;  // a restarted process's set-up is over: loads use the working store
  if (skip_next_status_) {
    skip_next_status_ = false;
    return PCM_NONE;
  }
  ++iteration_;
  if (!current_) {
    if (window_.inside()) return PCM_NONE;
    Profiler& prof = profiler();
    if (prof.on()) prof.agreement(iteration_);
    // One small broadcast per window is all that the ranks pay when nothing is pending: the
    // pending command's id (0: none), the length of its encoding, the next window's size, and
    // the pid of the pcmd rank 0 talks to (the others follow it when pcmd restarts), and whether
    // the ranks gather their profile now (once per PCM_PROFILE_MS).
    long long msg[5] = {0, 0, 1, 0, 0};
    std::string bytes;
    if (rank_ == 0) {
      if (auto c = link_.poll(job_, iteration_, size_); c && c->id > last_done_command_)
        if (keep_parking_bounded(*c)) received_ = std::move(c);
      if (received_) {
        bytes = proto::encode(received_->to_json());
        msg[0] = received_->id;
        msg[1] = static_cast<long long>(bytes.size());
      }
      msg[2] = window_.next_calls();
      msg[3] = link_.pcmd_pid();
      msg[4] = prof.due();
    }
    mpi_check(MPI_Bcast(msg, 5, MPI_LONG_LONG, 0, world_.get()), "MPI_Bcast");
    if (rank_ != 0 && msg[3] != link_.pcmd_pid()) link_.follow(static_cast<long>(msg[3]));
    if (msg[4]) {
      JobProfile p = prof.gather(iteration_);
      if (rank_ == 0) link_.send_profile(p.to_json());
    }
    if (msg[0] == 0) {
      window_.begin(msg[2]);
      return PCM_NONE;
    }
    // A command: every process leaves the window at this call (countdown 0), so the world that
    // the reconfiguration builds starts with the same countdown everywhere.
    bytes.resize(static_cast<std::size_t>(msg[1]));
    mpi_check(MPI_Bcast(bytes.data(), static_cast<int>(msg[1]), MPI_CHAR, 0, world_.get()),
              "MPI_Bcast");
    current_ = Command::from_json(proto::decode(bytes.data(), bytes.size()), size_);
    received_.reset();
    note_reconfig(*current_);
  }
  // Until the reconfiguration runs, every call reports the same command.
  const Command& c = *current_;
  if (c.respawn) return PCM_SPLIT;  // only in PCM_Adapt (keep_parking_bounded)
  if (c.kind == Command::Kind::kMigrate) return rank_ == c.rank ? PCM_MIGRATE : PCM_RECONFIGURE;
  return c.size > size_ ? PCM_SPLIT : PCM_MERGE;
}

bool Runtime::keep_parking_bounded(Command& cmd) {
  if (!split_leaves_ || cmd.respawn) return true;  // nothing can leave: nothing to bound by
  const int adds = cmd.kind == Command::Kind::kMigrate ? 1 : std::max(0, size_ - cmd.size);
  const int cap = settings_.max_parked > 0 ? settings_.max_parked
                  : resumed_               ? std::max(largest_, size_)
                                           : 0;
  if (adds == 0 || cap == 0 || parked_ + adds <= cap) return true;
  if (resumed_ && cmd.hosts.size() == static_cast<std::size_t>(cmd.size)) {
    cmd.respawn = true;
    plog()->info(
        "[rank 0] {}: carried out by respawning the whole world, which lets the {} parked "
        "processes leave (it would park {}, over the cap of {})",
        cmd.describe(), parked_, parked_ + adds, cap);
    return true;
  }
  abandon(cmd, fmt::format("refused: it would park {} processes, over the cap of {} "
                           "(PCM_MAX_PARKED); {}",
                           parked_ + adds, cap,
                           resumed_ ? "pcmd sent no host for each new rank, which a respawn needs"
                                    : "a job that does not use PCM_Adapt cannot be respawned "
                                      "instead; a split or a growing resize lets every parked "
                                      "process leave"));
  return false;
}

int Runtime::reconfig_last(int* kind, int* size_before, double* started) const {
  if (last_reconfig_.is_null()) fail(PCM_ERR_STATE, "this world has not been reconfigured");
  if (kind) *kind = last_reconfig_.at("kind").get<int>();
  if (size_before) *size_before = last_reconfig_.at("size_before").get<int>();
  if (started) *started = last_reconfig_.at("started").get<double>();
  return PCM_SUCCESS;
}

int Runtime::reconfig_reason(char* reason, int len) const {
  if (!reason || len < 1) fail(PCM_ERR_ARG, "reason must be a buffer of at least 1 byte");
  if (last_reconfig_.is_null()) fail(PCM_ERR_STATE, "this world has not been reconfigured");
  // Cut at a character boundary (never half a UTF-8 sequence), ending in "..." when cut.
  const std::string why = proto::clean_text(last_reconfig_.value("why", std::string()),
                                            static_cast<std::size_t>(len - 1));
  std::memcpy(reason, why.data(), why.size());
  reason[why.size()] = '\0';
  return PCM_SUCCESS;
}

void Runtime::reconfig_times(double* spawn, double* data, double* rebuild) const {
  if (spawn) *spawn = t_spawn_;
  if (data) *data = t_data_;
  if (rebuild) *rebuild = t_rebuild_;
}

// ---- the end -------------------------------------------------------------------------------

// Closes the link to pcmd and ends MPI.
void Runtime::shut_down() {
  profiler().stop();
  link_.close();
  phase_ = Phase::kFinalized;
  if (!mpi::finalized()) mpi_check(PMPI_Finalize(), "MPI_Finalize");  // not ours (api.cpp)
}

int Runtime::exit_retired() {
  if (process_status_ != PCM_RETIRED)
    fail(PCM_ERR_STATE, "this process has not retired (call PCM_Finalize)");
  if (phase_ == Phase::kFinalized) fail(PCM_ERR_STATE, "already finalized");
  // Park until the job ends (retirement.cpp: sleeping between tests for the wake-up).
  retirement_.park();
  link_.close();
  phase_ = Phase::kFinalized;
  mpi_check(PMPI_Finalize(), "MPI_Finalize");
  return PCM_SUCCESS;
}

int Runtime::finalize(MPI_Comm comm) {
  if (phase_ == Phase::kFinalized) fail(PCM_ERR_STATE, "already finalized");
  if (process_status_ == PCM_RETIRED) return exit_retired();
  if (phase_ == Phase::kActive) {
    require_world(comm);
    if (rank_ == 0) {
      try {
        // A pcmd that went away gets a short while to come back: the job is over anyway.
        link_.request({{"op", "finished"}, {"job", job_}, {"iteration", iteration_}}, nullptr, 0,
                      settings_.connect_timeout_ms,
                      std::min(settings_.reconnect_ms, settings_.connect_timeout_ms));
      } catch (const Error& e) {
        plog()->warn("[rank 0] could not tell pcmd that job {} finished: {}", job_, e.what());
      }
    }
    retirement_.wake_all();
    migrant_owned_.reset();
    migrant_comm_ = MPI_COMM_NULL;
    world_.reset();
    phase_ = Phase::kMpiReady;
  }
  shut_down();
  return PCM_SUCCESS;
}

}  // namespace pcm::detail
