// runtime.h — the per-process state of libpcm behind the C API (one instance per process).
#pragma once

#include <mpi.h>
#include <time.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "client.h"
#include "config.h"
#include "pcm.h"

namespace pcm::detail {

// A reconfiguration command as every rank sees it after PCM_Status broadcast it.
struct Command {
  std::int64_t id = 0;
  int kind = 0;  // PCM_MIGRATE for now
  int rank = -1;
  std::string host;
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
  int exit_retired();
  int finalize(MPI_Comm comm);

 private:
  Runtime() = default;
  void require_world(MPI_Comm comm) const;
  Client& client();
  void join_as_child(MPI_Comm parent);
  void finish_reconfigure(MPI_Comm merged, int waker_in_merged, int mover_in_merged,
                          bool i_am_mover, const Command& cmd);
  void poll_daemon();
  void reset_poller();
  void report_reconfigured(const Command& cmd, bool success, const std::string& error);
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
  // A spawned process resumes at the iteration whose PCM_Status the others have already made.
  bool skip_next_status_ = false;

  // Retirement.
  std::vector<Ward> wards_;
  MPI_Comm waker_comm_ = MPI_COMM_NULL;
  int waker_rank_ = -1;
};

}  // namespace pcm::detail
