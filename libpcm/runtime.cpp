// runtime.cpp — libpcm's lifecycle (MPI_PCM_Init, PCM_Init, PCM_Finalize, PCM_Exit and the state
// checks), the per-iteration status check, and the paper's reconfiguration calls' state checks
// (the reconfigurations themselves: reshaper.h).
#include "runtime.h"

#include <limits.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "auth.h"
#include "buffer.h"
#include "c_boundary.h"
#include "error.h"
#include "log.h"
#include "ops.h"
#include "profiler.h"
#include "protocol.h"
#include "reshape.h"
#include "stop_signals.h"
#include "world.h"

namespace pcm::lib {

using proto::json;

Runtime& Runtime::instance() {
  static Runtime r;
  return r;
}

int Runtime::mpi_pcm_init(int* argc, char*** argv) {
  if (life_.phase != Phase::kUninit) fail(PCM_ERR_STATE, "MPI_PCM_Init was already called");
  int already = 0;
  MPI_Initialized(&already);
  // PCM_OVERLAP=1: a split's spawn runs in a helper thread (overlap.h), which needs
  // MPI_THREAD_MULTIPLE; where the MPI (or the application's own MPI_Init) gives less, splits
  // block as they do by default. MPICH only (MPI_Get_library_version may be called before
  // MPI_Init): Open MPI's spawns from a thread were not tried.
  const bool overlap = Settings::overlap_requested();
  const bool mpich = overlap && mpi::is_mpich();
  int provided = MPI_THREAD_SINGLE;
  if (!already && overlap && mpich) {
    mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  } else if (!already) {
    mpi_check(MPI_Init(argc, argv), "MPI_Init");
  } else {
    MPI_Query_thread(&provided);
  }
  life_.phase = Phase::kMpiReady;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  program_ = Program::of_this_process(argc, argv);

  Outcome setup = attempt([&] {
    const Config config = read_config(default_config_path());
    settings_ = Settings::from_env();
    reshaped_by_restart_ = settings_.reshaped_command > 0;
    world_.parking.split_leaves = settings_.retire_leave >= 0
                                      ? settings_.retire_leave == 1
                                      : Retirement::mpi_lets_spawners_leave();
    window_ = StatusWindow(settings_.status_window_us);
    link_.open(config, default_config_path(), settings_.poll_interval_ms, settings_.reconnect_ms);
  });
  if (setup.ok()) stop_signals::install(settings_.stop_signals);
  background_.allow(overlap && mpich && provided == MPI_THREAD_MULTIPLE);
  if (overlap && !(mpich && provided == MPI_THREAD_MULTIPLE))
    plog()->info("PCM_OVERLAP=1: splits block ({})",
                 !mpich ? "only MPICH's spawns are overlapped"
                        : "the MPI gives no MPI_THREAD_MULTIPLE (or the application's MPI_Init "
                          "asked for less)");

  // A spawned process joins the world its parents are rebuilding before anything else: the
  // parents are waiting for it, whatever happens to its own set-up.
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) reshaper_.join_as_child(parent);

  try {
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (setup.ok() && me == 0) {
      setup = attempt([&] {
        link_.request(ops::request(ops::Ping{}), nullptr, 0, settings_.connect_timeout_ms);
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
  if (life_.phase == Phase::kUninit) fail(PCM_ERR_STATE, "call MPI_PCM_Init first");
  if (!init_error_.empty()) fail(PCM_ERR_STATE, "MPI_PCM_Init failed: {}", init_error_);
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  if (life_.phase == Phase::kActive) {
    if (life_.process_status != PCM_MIGRATED && life_.process_status != PCM_SPLITTED)
      fail(PCM_ERR_STATE, "PCM_Init was already called");
    *comm = world_.comm();  // a spawned process got its world while joining
    return PCM_SUCCESS;
  }
  if (life_.phase != Phase::kMpiReady) fail(PCM_ERR_STATE, "PCM_Init was already called");
  if (*comm == MPI_COMM_NULL) fail(PCM_ERR_ARG, "comm is MPI_COMM_NULL");

  mpi::Comm dup;
  mpi_check(MPI_Comm_dup(*comm, dup.out()), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup.get(), MPI_ERRORS_RETURN);
  int rank = -1, size = 0;
  MPI_Comm_rank(dup.get(), &rank);
  MPI_Comm_size(dup.get(), &size);

  std::vector<std::string> hosts = gather_hosts(dup.get());
  agreed(dup.get(), [&] {  // on failure, dup goes
    if (rank != 0) return;
    ops::Register req;
    req.size = size;
    req.hosts = hosts;
    req.executable = program_.exe;
    req.pid = static_cast<long>(::getpid());
    req.nonce = random_hex(16);  // known again if sent twice (pcmd restarted before answering)
    if (!settings_.job.empty()) {
      if (!proto::valid_name(settings_.job))
        fail(PCM_ERR_ARG, "PCM_JOB='{}' is not a valid job name (1-64 of A-Z a-z 0-9 . _ -)",
             settings_.job);
      req.job = settings_.job;
    }
    // The job's placement strategy for the processes pcmd places later (pcmd checks it).
    if (!settings_.placement.empty()) req.placement = proto::clean_text(settings_.placement, 32);
    if (settings_.restart) {
      if (!req.job) fail(PCM_ERR_ARG, "PCM_RESTART=1 needs PCM_JOB, the job's name");
      req.restart = true;
    }
    if (settings_.reshape != "spawn") req.reshape = settings_.reshape;
    if (settings_.reshaped_command > 0) req.reshaped_command = settings_.reshaped_command;
    req.supervised = settings_.supervised;
    if (!settings_.launcher.empty()) req.launcher = settings_.launcher;
    // A restart waits while pcmd verifies the newest version (every byte's checksum): that
    // grows with the data, like a store or a load. pcmd has answered a ping already.
    auto reply =
        link_.request(ops::request(req), nullptr, 0,
                      req.restart ? settings_.data_timeout_ms : settings_.connect_timeout_ms);
    life_.job = proto::get_string(reply.header, "job", proto::kMaxName);
    life_.incarnation = proto::opt_int(reply.header, "incarnation", 0, INT64_MAX).value_or(0);
    if (auto it = reply.header.find("restart"); it != reply.header.end() && it->is_object()) {
      restart_.iteration = proto::get_int(*it, "iteration", 0, INT64_MAX);
      restart_.nprocs = static_cast<int>(proto::get_int(*it, "nprocs", 1, 1 << 20));
    }
  });
  world_.begin(std::move(dup), rank, size);
  profiler().start(settings_.profile_ms, world_.comm(), world_.rank(), world_.size());
  json shared = bcast_json(json{{"job", life_.job},
                                {"incarnation", life_.incarnation},
                                {"restart_iteration", restart_.iteration},
                                {"restart_nprocs", restart_.nprocs}},
                           0, world_.comm());
  life_.job = shared.at("job").get<std::string>();
  life_.incarnation = shared.at("incarnation").get<std::int64_t>();
  link_.watch(life_.job, life_.incarnation, processor_name(), settings_.connect_timeout_ms);
  if (settings_.checkpoint_mtbf_s > 0)
    link_.set_checkpoint_schedule(-1, -1, static_cast<double>(settings_.checkpoint_mtbf_s));
  restart_.iteration = shared.at("restart_iteration").get<std::int64_t>();
  restart_.nprocs = shared.at("restart_nprocs").get<int>();
  if (restart_.restarted()) {
    life_.process_status = PCM_RESTARTED;
    restart_.reading = true;
  }
  life_.phase = Phase::kActive;
  *comm = world_.comm();
  plog()->info("[rank {}] job {} started with {} processes", world_.rank(), life_.job,
               world_.size());
  return PCM_SUCCESS;
}

int Runtime::process_status() const {
  if (life_.phase != Phase::kActive && life_.process_status != PCM_RETIRED) return PCM_ERROR;
  return life_.process_status;
}

void Runtime::require_world(MPI_Comm comm) const {
  if (life_.process_status == PCM_RETIRED)
    fail(PCM_ERR_STATE, "this process has retired; call PCM_Exit");
  if (life_.phase != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  if (!world_.is(comm))
    fail(PCM_ERR_ARG,
         "comm is not the PCM world (use the communicator PCM_Init or PCM_Reconfigure returned)");
}

int Runtime::comm_rank(MPI_Comm comm, int* rank) const {
  if (!rank) fail(PCM_ERR_ARG, "rank is NULL");
  require_world(comm);
  *rank = world_.rank();
  return PCM_SUCCESS;
}

int Runtime::commit(MPI_Comm comm, int iteration) {
  require_world(comm);
  storage_.commit(iteration);
  return PCM_SUCCESS;
}

// ---- per-iteration path -------------------------------------------------------------------

// What status() checks before returning PCM_NONE from inside a window, in the same order: a call
// it would answer without communicating (it still counts the call and pumps, as status() does).
bool Runtime::status_is_local(MPI_Comm comm) const {
  return life_.process_status != PCM_RETIRED && life_.phase == Phase::kActive &&
         comm != MPI_COMM_NULL && world_.is(comm) && !world_.joining.inter && !life_.stop &&
         !life_.skip_next_status && (!reconfig_.current || background_.pending()) &&
         window_.has_room();
}

int Runtime::status(MPI_Comm comm) {
  require_world(comm);
  if (world_.joining.inter)
    fail(PCM_ERR_STATE,
         "this process was spawned by a split: call PCM_Resume (or PCM_Split) first");
  restart_.reading = false;  // a restarted process's set-up is over: loads use the working store
  if (life_.stop) return PCM_STOP;  // agreed: the job ends (PCM_Adapt carries it out)
  if (life_.skip_next_status) {
    life_.skip_next_status = false;
    return PCM_NONE;
  }
  ++life_.iteration;
  checkpointer_.pump();  // a checkpoint's partner level, behind
  // While a split's spawn or a merge's buffers are made in the background (overlap.h) the
  // windows go on as if nothing were pending, their broadcast carrying whether rank 0's helper
  // has finished.
  const bool spawning = background_.pending();
  if (!reconfig_.current || spawning) {
    if (window_.inside()) return PCM_NONE;
    Profiler& prof = profiler();
    if (prof.on()) prof.agreement(life_.iteration);
    // One small broadcast per window is all that the ranks pay when nothing is pending: the
    // pending command's id (0: none), the length of its encoding, the next window's size, and
    // the pid of the pcmd rank 0 talks to (the others follow it when pcmd restarts), whether
    // the ranks gather their profile now (once per PCM_PROFILE_MS), and the checkpoint pcmd asks
    // for (its id; 0: none; PCM_Adapt writes it) and, but while a split's spawn runs in the
    // background, whether it is written at once (not staged: the run ends after it); during
    // that spawn, whether rank 0's helper has finished it; and a stop (stop_signals.h): the
    // signal rank 0 received, or pcmd's request. (A reduction would let every rank's signal in,
    // but it costs twice a broadcast and makes rank 0 wait for the slowest rank at every window,
    // measured: another rank's signal goes through pcmd instead, tell_stop.)
    long long msg[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    std::string bytes;
    // A stop signal: pcmd is told (once), which rank 0's poll brings to an agreement; rank 0's
    // own is in this broadcast once pcmd has taken it.
    const int stop_sig = stop_signals::pending() && !stop_told_ ? tell_stop() : 0;
    if (world_.rank() == 0) {
      // pcmd sends the next command once this one is reported: none is taken meanwhile.
      if (auto c = link_.poll(life_.job, life_.iteration, world_.size());
          c && reconfig_.is_new(*c) && !spawning) {
        std::string refusal;
        if (world_.parking.admit(*c, world_.size(), settings_.max_parked, resumed_, &refusal))
          reconfig_.received = std::move(c);
        else
          reshaper_.abandon(*c, refusal);
      }
      if (reconfig_.received && !spawning) {
        bytes = proto::encode(reconfig_.received->to_json());
        msg[0] = reconfig_.received->id;
        msg[1] = static_cast<long long>(bytes.size());
      }
      msg[2] = window_.next_calls();
      msg[3] = link_.pcmd_pid();
      msg[4] = prof.due();
      if (spawning) {
        // No checkpoint of PCM_Adapt's own meanwhile.
        msg[6] = background_.helper_done();
      } else {
        msg[5] = checkpointer_.wanted(resumed_);
        msg[6] = msg[5] > 0 && link_.checkpoint_at_once();
      }
      msg[7] = stop_sig ? stop_sig : link_.stop_wanted() ? Lifecycle::kStopAsked : 0;
    }
    mpi_check(MPI_Bcast(msg, 8, MPI_LONG_LONG, 0, world_.comm()), "MPI_Bcast");
    if (msg[7] && !spawning) {
      // Every process leaves the window here; the command (if any) stays pending in pcmd.
      life_.stop = static_cast<int>(msg[7]);
      stop_signals::taken_up();
      return PCM_STOP;
    }
    checkpointer_.set_due(msg[5], !spawning && msg[6] != 0);
    if (world_.rank() != 0 && msg[3] != link_.pcmd_pid()) link_.follow(static_cast<long>(msg[3]));
    if (msg[4]) {
      JobProfile p = prof.gather(life_.iteration);
      if (world_.rank() == 0) link_.send_profile(p.to_json());
    }
    if (spawning && msg[6]) {
      // Every process leaves the window here, as for a new command.
      background_.switch_now(*reconfig_.current, life_.iteration);
      return reconfig_.status_of(world_.rank(), world_.size(), resumed_);
    }
    if (msg[0] == 0) {
      window_.begin(msg[2]);
      return PCM_NONE;
    }
    // A command: every process leaves the window at this call (countdown 0), so the world that
    // the reconfiguration builds starts with the same countdown everywhere.
    bytes.resize(static_cast<std::size_t>(msg[1]));
    mpi_check(MPI_Bcast(bytes.data(), static_cast<int>(msg[1]), MPI_CHAR, 0, world_.comm()),
              "MPI_Bcast");
    reconfig_.current =
        Command::from_json(proto::decode(bytes.data(), bytes.size()), world_.size());
    reconfig_.received.reset();
    reconfig_.note(*reconfig_.current, world_.size());
    // The world is about to change: the version in flight is committed in this one first
    // (every rank has one in flight, or none).
    if (checkpointer_.in_flight()) checkpointer_.settle_quietly("before a reconfiguration");
    // A job of the paper's calls: a split's spawn or a merge's buffers, in the background where
    // they can be; the command is reported at the switch, as PCM_Adapt's.
    if (!resumed_ && background_.start_for_paper_calls(
                         *reconfig_.current,
                         reconfig_.status_of(world_.rank(), world_.size(), false), life_.iteration))
      return PCM_NONE;
  }
  // Until the reconfiguration runs, every call reports the same command.
  return reconfig_.status_of(world_.rank(), world_.size(), resumed_);
}

// ---- the paper's reconfiguration calls: state checks; the work is the Reshaper's (reshaper.h) --

namespace {
void check_reshape_args(void** buf, PCM_Dist* dist, int* iteration, int* rank, int* size,
                        MPI_Comm* comm, int type) {
  if (!buf || !dist || !iteration || !rank || !size || !comm)
    fail(PCM_ERR_ARG, "buf, dist, iteration, rank, size and comm must not be NULL");
  if (proto::type_size(type) == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
}
}  // namespace

int Runtime::reconfigure(MPI_Comm* comm, const char* command) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  require_world(*comm);
  storage_.flush();  // the keys this process kept, for the processes after it
  reshaper_.migrate(command, nullptr);
  *comm = world_.comm();
  return PCM_SUCCESS;
}

void Runtime::check_pending(MPI_Comm comm, bool want_split) const {
  require_world(comm);
  reconfig_.check_pending(want_split, world_.size(), resumed_);
}

int Runtime::split(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
                   MPI_Comm* comm, const char* command) {
  check_reshape_args(buf, dist, iteration, rank, size, comm, type);
  const std::vector<ArrayRef> arrays{{buf, type, dist}};
  if (world_.joining.inter) {
    json extra;
    reshaper_.receive_split(arrays, &extra);
    *iteration = extra.at("iteration").get<int>();
    background_.remember(arrays);
  } else {
    check_pending(*comm, true);
    const BackgroundSplit::EndBound end_bound{background_};
    storage_.flush();
    background_.keep_spawn_of(command);  // spawned in the background: this program
    struct GiveUpSetAside {
      BackgroundSplit& b;
      ~GiveUpSetAside() { b.give_up_set_aside(); }
    } after{background_};
    reshaper_.send_split(arrays, json{{"iteration", *iteration}}, command);
  }
  *rank = world_.rank();
  *size = world_.size();
  *comm = world_.comm();
  return PCM_SUCCESS;
}

int Runtime::merge_datacnts(const Distribution* dist, long* count, int* merge_rank, MPI_Comm comm) {
  check_pending(comm, false);
  if (!dist || dist->size() != world_.size())
    fail(PCM_ERR_ARG, "dist does not describe this world");
  std::vector<int> new_of;
  Distribution next = merged_distribution(*reconfig_.current, *dist, &new_of);
  // A respawned merge (PCM_Merge) leaves every element to the new world: none stays here.
  int me = reconfig_.current->respawn ? -1 : new_of[world_.rank()];
  if (count) *count = me >= 0 ? static_cast<long>(next.local_elements(me)) : 0;
  if (merge_rank) *merge_rank = me;
  return PCM_SUCCESS;
}

int Runtime::merge(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
                   MPI_Comm* comm) {
  check_reshape_args(buf, dist, iteration, rank, size, comm, type);
  check_pending(*comm, false);
  const BackgroundSplit::EndBound end_bound{background_};
  storage_.flush();
  if (reconfig_.current->respawn) {
    // pcmd asked for the merge to leave nothing behind (a node that goes back to Slurm): the
    // world that remains is spawned anew, as a split's, and receives the merged data there (its
    // processes start as PCM_SPLITTED and call PCM_Split); every process here retires and the
    // old world leaves the job at once, with whatever was parked (retirement.h, case d).
    reshaper_.send_split({{buf, type, dist}}, json{{"iteration", *iteration}}, nullptr);
  } else {
    // Nothing spawned: every survivor knows the iteration.
    reshaper_.merge_arrays({{buf, type, dist}});
    if (world_.comm() != MPI_COMM_NULL) background_.remember({{buf, type, dist}});
  }
  *rank = world_.rank();
  *size = world_.size();
  *comm = world_.comm();
  return PCM_SUCCESS;
}

// ---- pcmd's inventory, for PCM_Topology (topology.cpp) -------------------------------------

std::vector<std::string> Runtime::sites_of(const std::vector<std::string>& hosts) {
  std::vector<std::string> none(hosts.size());
  if (life_.phase != Phase::kActive || !link_.is_open() || life_.job.empty()) return none;
  try {
    auto reply =
        link_.request(ops::request(ops::Topology{hosts}), nullptr, 0, settings_.connect_timeout_ms);
    const auto& sites = reply.header.at("sites");
    if (!sites.is_array() || sites.size() != hosts.size()) return none;
    std::vector<std::string> out;
    for (const auto& s : sites) {
      std::string v = s.is_string() ? s.get<std::string>() : "";
      out.push_back(proto::valid_name(v) ? v : "");
    }
    return out;
  } catch (const std::exception& e) {
    plog()->warn("PCM_Topology: no sites from pcmd ({}); processes' PCM_SITE used", e.what());
    return none;
  }
}

// ---- the end -------------------------------------------------------------------------------

// Closes the link to pcmd and ends MPI.
void Runtime::shut_down() {
  profiler().stop();
  checkpointer_.close();
  storage_.close();
  link_.close();
  life_.phase = Phase::kFinalized;
  if (!mpi::finalized()) mpi_check(PMPI_Finalize(), "MPI_Finalize");  // not ours (api.cpp)
}

void Runtime::exit_if_retired() {
  Runtime& rt = instance();
  if (!rt.retired_unfinished()) return;
  plog()->warn(
      "a retired process is ending without PCM_Exit: it waits for the end of the job as "
      "PCM_Exit does (call PCM_Exit, or PCM_Finalize, before returning from main)");
  try {
    rt.exit_retired();
  } catch (const std::exception& e) {
    plog()->error("PCM_Exit at exit failed: {}", e.what());
  }
}

int Runtime::exit_retired() {
  if (life_.process_status != PCM_RETIRED)
    fail(PCM_ERR_STATE, "this process has not retired (call PCM_Finalize)");
  if (life_.phase == Phase::kFinalized) fail(PCM_ERR_STATE, "already finalized");
  // Park until the job ends (retirement.cpp: sleeping between tests for the wake-up); a stopped
  // job has ended already.
  if (!life_.stopped()) retirement_.park();
  checkpointer_.close();
  storage_.close();
  link_.close();
  life_.phase = Phase::kFinalized;
  mpi_check(PMPI_Finalize(), "MPI_Finalize");
  return life_.stopped() ? PCM_EXIT_STOPPED : PCM_SUCCESS;
}

int Runtime::tell_stop() {
  stop_told_ = true;  // once, whatever pcmd answers
  const int sig = stop_signals::pending();
  ops::CheckpointRequest r;
  r.job = life_.job;
  r.why = fmt::format("{} received by rank {}", signal_name(sig), world_.rank());
  r.at_once = r.stop = true;
  try {
    link_.request(ops::request(r), nullptr, 0, settings_.connect_timeout_ms,
                  std::min(settings_.reconnect_ms, settings_.connect_timeout_ms));
    return sig;
  } catch (const Error& e) {
    // Refused: pcmctl run is ending this run itself (a restart reshape: its version is written)
    // or the job has ended; unreachable: nobody can carry the stop out. Either way the
    // signal does what it does without PCM.
    plog()->warn("[rank {}] {}, not a stop ({}): its default action", world_.rank(), *r.why,
                 e.what());
    stop_signals::default_action(sig);
    return 0;
  }
}

std::string Runtime::stop_reason() const {
  if (life_.stop != Lifecycle::kStopAsked) return signal_name(life_.stop) + " received";
  const std::string& why = link_.stop_why();  // rank 0's (it polls), which tells pcmd
  return why.empty() ? std::string("asked to stop by pcmd") : "asked to stop by pcmd: " + why;
}

void Runtime::end_world(ops::Finished done) {
  if (world_.rank() == 0) {
    try {
      // A pcmd that went away gets a short while to come back: the job is over anyway.
      link_.request(ops::request(done), nullptr, 0, settings_.connect_timeout_ms,
                    std::min(settings_.reconnect_ms, settings_.connect_timeout_ms));
    } catch (const Error& e) {
      plog()->warn("[rank 0] could not tell pcmd that job {} {}: {}", life_.job,
                   done.stopped ? "stopped" : "finished", e.what());
    }
  }
  retirement_.wake_all();
  world_.migrant.clear();
  world_.leave();
}

int Runtime::finalize(MPI_Comm comm) {
  if (life_.phase == Phase::kFinalized) fail(PCM_ERR_STATE, "already finalized");
  if (life_.process_status == PCM_RETIRED) return exit_retired();
  if (life_.phase == Phase::kActive) {
    require_world(comm);
    // A split or merge whose switch the loop did not reach is given up.
    background_.drop(reconfig_.current ? &*reconfig_.current : nullptr);
    // The last version is committed before the job ends (every rank has one in flight, or none).
    if (checkpointer_.in_flight()) checkpointer_.settle_quietly("at PCM_Finalize");
    // What PCM_Store kept is written (stores outlive the process), a commit made behind settled.
    storage_.flush();
    ops::Finished done;
    done.job = life_.job;
    done.iteration = life_.iteration;
    if (!t_mpi_failure.empty()) done.error = t_mpi_failure.substr(0, 1900);
    // The paper's calls: PCM_Status said PCM_STOP and the application saved its own state.
    if (life_.stop) done.stopped = stop_reason() + "; the application ended at PCM_STOP";
    end_world(done);
    life_.phase = Phase::kMpiReady;
  }
  shut_down();
  return PCM_SUCCESS;
}

}  // namespace pcm::lib
