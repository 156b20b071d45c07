// settings.h — libpcm's PCM_* environment variables: every one is read here, most of them once by
// MPI_PCM_Init (from_env), the rest by the few calls that need no MPI_PCM_Init.
#pragma once

#include <string>
#include <vector>

namespace pcm::lib {

struct Settings {
  int connect_timeout_ms = 5000;   // PCM_CONNECT_TIMEOUT_MS: pcmd's answer to a small request
  int data_timeout_ms = 600000;    // PCM_DATA_TIMEOUT_MS: store, load, commit, restart
  int reconnect_ms = 60000;        // PCM_RECONNECT_MS: how long a request waits for a pcmd that
                                   // went away to come back (0: fail at once)
  long poll_interval_ms = 50;      // PCM_POLL_MS: rank 0 asks pcmd for commands at most this often
  double status_window_us = 1000;  // PCM_STATUS_WINDOW_US: length of an agreement window (0: none)
  bool split_cma = true;           // PCM_SPLIT_CMA: a split's new processes (a merge's survivors)
                                   // may read old buffers directly
  // PCM_CHECKPOINT_DIRECT: PCM_Checkpoint's ranks write and read their shards, and PCM_Store
  // its keys, themselves where they see pcmd's data directory (0: always through pcmd).
  bool checkpoint_direct = true;
  // PCM_WRITE_DIRECT=1: PCM_Store's files written with O_DIRECT (common/shard.h: ShardIo).
  bool write_direct = false;
  // PCM_STORE_ASYNC: PCM_Store keeps a copy and PCM_Commit writes behind the application
  // (async_stores.h).
  bool store_async = false;
  // PCM_CHECKPOINT_ASYNC: PCM_Checkpoint returns once the registered data is copied, and the
  // shards are written and committed in the background (0: the call waits for the commit).
  bool checkpoint_async = true;
  // Checkpoint levels (levels.h). PCM_CHECKPOINT_LOCAL_DIR: an absolute directory on each host
  // (a tmpfs or a local disk) that turns levels on ("": off, every version on the shared level
  // as without levels). PCM_CHECKPOINT_FLUSH_EVERY=k: the first version of a run and every k-th
  // also go to the shared level. PCM_CHECKPOINT_PARTNER: 1, each shard is also kept by a rank on
  // another host; 0, not; unset (-1): 1 when the job's ranks are on more than one host.
  std::string checkpoint_local_dir;
  long checkpoint_flush_every = 4;
  int checkpoint_partner = -1;
  // PCM_TEST_SHARD_FAIL=ITERATION:RANK, for the tests: that rank's shard of that version fails
  // as a write would (-1: none).
  long test_fail_iteration = -1;
  int test_fail_rank = -1;
  // PCM_TEST_SHARD_HOLD=FILE:ITERATION:RANK, for the tests: that rank reports its shard of that
  // version to pcmd only once FILE is gone (120 s at most); it creates FILE.held as it begins to
  // wait.
  std::string test_hold_file;
  long test_hold_iteration = -1;
  int test_hold_rank = -1;
  // PCM_PROFILE_MS: the application's profile (profiler.h) is gathered and sent to pcmd once per
  // this many ms (0: not profiled at all).
  long profile_ms = 2000;
  // PCM_RETIRE_LEAVE: 1, a split's old world (and every process parked so far) disconnects,
  // finalizes and exits at once; 0, they park until the job ends; unset (-1), by the MPI library
  // (Retirement::mpi_lets_spawners_leave).
  int retire_leave = -1;
  // PCM_MAX_PARKED: where a split's old world can leave, the processes parked by merges and
  // migrations stay at most this many. A reconfiguration that would park more is carried out by
  // respawning the whole world in a job that uses PCM_Adapt (unset: the cap is the largest size
  // the job's world has had); a job that uses the calls of the paper's Table 1 (which hand PCM
  // only the moving process's data) has no cap unless this is set, and then it is refused.
  int max_parked = 0;
  // PCM_CHECKPOINT_MTBF: the mean time between failures in seconds; PCM_Adapt then writes a
  // checkpoint by itself at Daly's interval for the measured cost (0, the default: it does not).
  long checkpoint_mtbf_s = 0;
  // PCM_RECONFIG_TIMEOUT_S: a reconfiguration's blocking part (the spawn, joining, the data
  // exchange) must end within this many seconds, or the process ends with kExitReconfigTimeout
  // (watchdog.h) so that the job ends instead of hanging (0: no bound).
  int reconfig_timeout_s = 300;
  // PCM_JOB and PCM_RESTART (=1) as given; PCM_Init checks them on rank 0 and agrees.
  std::string job;
  bool restart = false;
  // PCM_RESHAPE: spawn (the default: reconfigurations spawn, MPI_Comm_spawn), restart (this MPI or
  // launcher cannot spawn: pcmd hands the job no command, and pcmctl run carries each out by a
  // version, a stop and a relaunch at the new count) or auto (as spawn; told to pcmd, whose
  // pcmctl run then finishes a command whose spawn hung by a restart).
  std::string reshape = "spawn";
  // PCM_RESHAPED_COMMAND, set by pcmctl run: this run is the relaunch of a restart reshape that
  // carries out that command (0: none); its first PCM_Adapt returns PCM_RESHAPED.
  long long reshaped_command = 0;
  // PCM_SUPERVISED=1, set by pcmctl run: the job is supervised from its registration on.
  bool supervised = false;
  // PCM_LAUNCHER=srun, set by pcmctl run --launcher srun ("": mpiexec).
  std::string launcher;
  // PCM_STOP_SIGNALS: the signals that make the job write a version and end (stop_signals.h;
  // docs/user/preemption.md); by default what Slurm sends before it takes a job away.
  std::vector<int> stop_signals;
  // PCM_PLACEMENT: the job's placement strategy for the processes pcmd places later, as given
  // ("" when unset); pcmd checks it.
  std::string placement;

  // Throws pcm::Error(PCM_ERR_ARG) naming a variable that is set but out of range.
  static Settings from_env();

  // PCM_OVERLAP=1: a split's spawn (PCM_Adapt) runs in the background while the loop goes on
  // (overlap.h); MPI_PCM_Init then asks MPI for MPI_THREAD_MULTIPLE. Read before MPI_Init (checked
  // again by from_env, which rejects other values than 0 and 1).
  static bool overlap_requested();

  // Read where they are used, because their users may run without MPI_PCM_Init:
  // PCM_SITE: this process's own site for PCM_Topology ("" when unset).
  static std::string site();
  // PCM_HUGEPAGES (1, the default): the buffers a reconfiguration allocates ask for huge pages
  // (buffer.h). Read at the first call; throws pcm::Error(PCM_ERR_ARG) when out of range.
  static bool hugepages();
};

}  // namespace pcm::lib
