// runtime.h — the per-process state of libpcm behind the C API (one instance per process).
#pragma once

#include <mpi.h>
#include <time.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "client.h"
#include "command.h"
#include "config.h"
#include "distribution.h"
#include "pcm.h"
#include "registry.h"

// What a PCM_Dist handle points to.
struct PCM_Dist_s {
  pcm::detail::Distribution d;
};

namespace pcm::detail {

using proto::Command;

// One distributed array that a split or merge moves: the application's buffer and map variables
// (replaced by the reshape).
struct ArrayRef {
  void** buf;
  int type;
  PCM_Dist* dist;
};

// A retired process this one must wake when it ends (by an MPI message on comm).
struct Ward {
  MPI_Comm comm;
  int rank;
};

class Runtime {
 public:
  static Runtime& instance();

  int mpi_pcm_init(int* argc, char*** argv);
  int init(MPI_Comm* comm);
  int process_status() const;
  int comm_rank(MPI_Comm comm, int* rank) const;
  int status(MPI_Comm comm);
  int store(int rank, const char* key, const void* buf, int type, long count);
  int load(int rank, const char* key, void* buf, int type, long count);
  int load_count(int rank, const char* key, int* type, long* count);
  int reconfigure(MPI_Comm* comm, const char* command);
  int split(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
            MPI_Comm* comm, const char* command);
  int merge(void** buf, int type, PCM_Dist* dist, int* iteration, int* rank, int* size,
            MPI_Comm* comm);
  int merge_datacnts(const Distribution* dist, long* count, int* merge_rank, MPI_Comm comm);
  void reconfig_times(double* spawn, double* data, double* rebuild) const;
  int reconfig_last(int* kind, int* size_before, double* started) const;
  int commit(MPI_Comm comm, int iteration);
  int restart_info(int* iteration, int* nprocs) const;
  int load_redistribute(const char* key, int type, const Distribution& from, const Distribution& to,
                        int rank, void* buf);
  int exit_retired();
  int finalize(MPI_Comm comm);

  // The register-once layer (adapt.cpp).
  Registry& registry() { return registry_; }
  int resume(MPI_Comm* comm);
  int adapt(MPI_Comm* comm);
  int checkpoint(MPI_Comm comm, int iteration);

 private:
  Runtime() = default;
  void require_world(MPI_Comm comm) const;
  Client& client();
  void join_as_child(MPI_Comm parent);
  void check_pending(MPI_Comm comm, bool want_split) const;
  void agree_reshape_args(const std::vector<ArrayRef>& arrays);
  // Split: the old world sends arrays (and `extra`, any header) to a newly spawned world and
  // retires; a process of the new world receives them (replacing *buf and *dist) and `extra`.
  void send_split(const std::vector<ArrayRef>& arrays, const nlohmann::json& extra,
                  const char* command);
  void receive_split(const std::vector<ArrayRef>& arrays, nlohmann::json* extra);
  void merge_arrays(const std::vector<ArrayRef>& arrays);
  void abandon(const Command& cmd, const std::string& why);
  void note_reconfig(const Command& cmd);
  nlohmann::json restart_json() const;
  // Migration; in the mover, send(merged, child) runs once the new world is built.
  using MigrationSender = std::function<void(MPI_Comm merged, int child)>;
  void migrate(const char* command, const MigrationSender& send);
  // The register-once layer's parts (adapt.cpp).
  void check_registrations();
  void resume_migrated();
  void resume_restarted();
  void send_migration(MPI_Comm merged, int child, int rank);
  void agree_spawnable(const std::string& exe, const Command& cmd);
  MPI_Comm spawn(const std::string& exe, const std::vector<std::string>& hosts);
  // Where each new rank of a merge comes from (-1: a leaver); new_of[old rank].
  Distribution merged_distribution(const Distribution& d, std::vector<int>* new_of) const;
  // The same without a map (a merge that moves no array): survivors in old rank order.
  std::vector<int> merged_ranks() const;
  void retire(MPI_Comm waker_comm, int waker_rank, const Command& cmd);
  void adopt_world(MPI_Comm world);
  void finish_reconfigure(MPI_Comm merged, int waker_in_merged, int mover_in_merged,
                          bool i_am_mover, const Command& cmd);
  void poll_daemon();
  long long next_window_calls();
  void reset_poller();
  void report_reconfigured(const Command& cmd, bool success, const std::string& error,
                           const nlohmann::json& layout = nullptr);
  std::vector<std::string> gather_hosts() const;
  void wake_wards();
  std::string spawn_command(const char* command) const;

  // Lifecycle.
  bool mpi_pcm_initialized_ = false;
  bool world_ready_ = false;
  bool finalized_ = false;
  int process_status_ = PCM_STARTED;
  std::string init_error_;  // why MPI_PCM_Init failed (then only PCM_Finalize is allowed)

  // Job and world.
  Config config_;
  int connect_timeout_ms_ = 5000;
  int data_timeout_ms_ = 600000;  // store, load, commit, restart: grows with the data
  std::string job_;
  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = -1;
  int size_ = 0;
  std::int64_t iteration_ = 0;  // PCM_Status calls over the job's life
  std::vector<std::string> args_;
  std::string cwd_;
  std::string self_exe_;

  // Talking to pcmd.
  std::unique_ptr<zmq::context_t> context_;
  std::unique_ptr<Client> client_;

  // Rank 0's asynchronous poll of pcmd (a DEALER socket: PCM_Status never waits for pcmd).
  std::unique_ptr<zmq::socket_t> poller_;
  bool poll_outstanding_ = false;
  std::int64_t poll_sent_ms_ = 0;
  std::int64_t poll_interval_ms_ = 50;
  std::optional<Command> received_;  // from pcmd, not yet broadcast
  std::int64_t last_done_command_ = 0;

  std::optional<Command> current_;  // broadcast, not yet carried out

  // The ranks agree on pending commands (one broadcast) once per window of PCM_Status calls; the
  // calls in between only count down. Rank 0 sizes each window from the measured time per call
  // so that a window lasts about status_window_us_ (PCM_STATUS_WINDOW_US; 0: every call), at
  // most kMaxWindowCalls calls, and broadcasts the size with the agreement. Every process of the
  // world holds the same countdown; it is 0 whenever the world changes.
  static constexpr long long kMaxWindowCalls = 256;
  long long status_countdown_ = 0;
  long long status_window_calls_ = 1;  // size of the window that ended at the last agreement
  double status_window_start_ = 0;     // rank 0: MPI_Wtime() of the last agreement
  double status_window_us_ = 1000;
  // A spawned process resumes at the iteration whose PCM_Status the others have already made.
  bool skip_next_status_ = false;

  // A process spawned by a split, between PCM_Init and its PCM_Split: the intercommunicator to
  // the old world and what the old world told it.
  MPI_Comm join_inter_ = MPI_COMM_NULL;
  nlohmann::json join_ctx_;

  // Set in a restarted job: the version it resumes from.
  std::int64_t restart_iteration_ = -1;
  int restart_nprocs_ = 0;
  bool reading_version_ = false;  // until the first PCM_Status of a restarted process

  // A split's old ranks: the token that proves to the new processes that they read this process.
  std::uint64_t cma_token_ = 0;

  // The reconfiguration pending or last carried out (kind, size_before, started); null if none.
  nlohmann::json last_reconfig_;

  // Seconds spent in the phases of this process's last split or merge.
  double t_spawn_ = 0, t_data_ = 0, t_rebuild_ = 0;

  // A migrated process, until PCM_Resume has received the mover's registered state: the
  // communicator to the mover and the mover's rank in it (owned unless it is also in wards_).
  MPI_Comm migrant_comm_ = MPI_COMM_NULL;
  int migrant_src_ = -1;
  bool migrant_comm_owned_ = false;

  // The register-once layer.
  Registry registry_;
  bool resumed_ = false;

  // Retirement.
  std::vector<Ward> wards_;
  MPI_Comm waker_comm_ = MPI_COMM_NULL;
  int waker_rank_ = -1;
};

}  // namespace pcm::detail
