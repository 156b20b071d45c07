// pcmctl.h — pcmctl's pieces: the connection to pcmd, one builder per request, the printers.
#pragma once

#include <map>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "client.h"
#include "config.h"
#include "protocol.h"

namespace CLI {
class App;
}

namespace pcm::ctl {

// The options every subcommand shares (set on pcmctl itself, before the subcommand).
struct ConnectOptions {
  std::string config_path;
  int timeout_ms = 5000;
};

// A connection to the pcmd that the configuration file names; every request waits at most
// timeout_ms. Throws pcm::Error (PCM_ERR_CONFIG) if the file cannot be read.
class Connection {
 public:
  explicit Connection(const ConnectOptions& options);
  // The reply's header; throws pcm::Error as Client::request does.
  proto::json request(const proto::json& req);
  const std::string& endpoint() const { return config_.endpoint; }

 private:
  Config config_;
  zmq::context_t context_{1};
  Client client_;
  int timeout_ms_;
};

// Where a reconfiguration's new processes go and why (--host, --placement, --why; "": not given).
struct Target {
  std::string host;
  std::string placement;
  std::string why;
};

// One builder per request pcmctl sends (requests.cpp). In req_verify and req_host_add,
// "" or a negative number leaves the optional field out.
proto::json req_ping();
proto::json req_status();  // every job
proto::json req_status(const std::string& job);
proto::json req_profile(const std::string& job);
proto::json req_migrate(const std::string& job, int rank, const Target& target);
proto::json req_split(const std::string& job, int rank, int into, const Target& target);
proto::json req_merge(const std::string& job, const std::vector<int>& ranks, const Target& target);
proto::json req_resize(const std::string& job, int size, const Target& target);
proto::json req_checkpoints(const std::string& job);
proto::json req_verify(const std::string& job, long iteration);
proto::json req_prune(const std::string& job, int keep);
// why "": no reason; at_once: written from the application's buffers, not staged (the run ends
// right after it).
proto::json req_checkpoint(const std::string& job, const std::string& why, bool at_once = false,
                           bool stop = false);
proto::json req_host_add(const std::string& host, int slots, const std::string& site,
                         double latency);
proto::json req_host_list();
proto::json req_host_remove(const std::string& host);
proto::json req_host_drain(const std::string& host);

// `pcmctl run` (run.cpp): a supervised launch that relaunches the job from its newest
// valid version when a run fails, up to max_restarts times; returns the job's exit code.
struct RunOptions {
  std::string job;
  int np = 1;      // processes; with on_inventory, the most
  int min_np = 1;  // with on_inventory: the fewest a run may start on
  int max_restarts = 3;
  std::string mpiexec;
  // "mpiexec" (hydra's or Open MPI's syntax) or "srun": each run is a step of the Slurm
  // allocation pcmctl run is in (`srun [ARGS] [-w NODES -m arbitrary] -n N --kill-on-bad-exit=1`),
  // and its processes reshape by restart unless PCM_RESHAPE says otherwise (an srun-launched
  // world cannot spawn: docs/user/restart-reshape.md).
  std::string launcher = "mpiexec";
  // The launcher's own arguments (before -n); "{hosts}" in one is replaced by the run's hosts.
  std::vector<std::string> mpiexec_args;
  // Each run goes on the inventory's hosts that are up and answer a TCP probe on probe_port,
  // at as many processes as their free slots hold (min_np..np), given to the launcher as
  // "h1:n1,h2:n2" (in place of "{hosts}", else after -hosts).
  bool on_inventory = false;
  int probe_port = 9;
  // A run that has not registered with pcmd within this long is ended and counts as lost.
  int start_timeout_s = 120;
  // A launcher still there this long after pcmd saw the job finish is ended (exit 0): processes
  // stuck in MPI_Finalize with a peer on a host that died after the last reconfiguration.
  int finish_grace_s = 30;
  // Sites (move.cpp, docs/ops/sites.md): with on_inventory, the site whose hosts the runs
  // go on ("": every host) until a move (pcmctl move) takes the job to another; how a run is
  // launched in a site: a prefix before the launcher ("ssh frontend-b", split at spaces: hydra's
  // proxies must reach their mpiexec, so it runs inside the site) and the PCM_CONFIG of its
  // processes there (the site's relay). A move gives up when its checkpoint takes longer than
  // move_timeout_s (the job goes on where it was).
  std::string site;
  std::vector<std::string> site_launcher_specs, site_config_specs;  // SITE=VALUE, as given
  std::map<std::string, std::string> site_launchers, site_configs;  // by site, from the specs
  int move_timeout_s = 120;
  // A run that ends stopped (a signal, `pcmctl stop`: its last version written) has its Slurm
  // job requeued (`scontrol requeue $SLURM_JOB_ID`); in a requeued batch script
  // (SLURM_RESTART_COUNT > 0) the job resumes from its newest valid version, stopped or not.
  bool requeue = false;
  std::vector<std::string> command;  // the program and its arguments
};
int run_supervised(Connection& pcmd, const RunOptions& options);
// pcmctl run's options for sites and moves (move.cpp); finish: the specs into the maps.
void add_run_site_options(CLI::App* sub, RunOptions& options);
void finish_run_site_options(RunOptions& options);

// `pcmctl move JOB --site B`: asks pcmd to have the job moved (pcmctl run carries it out); with
// wait_s > 0 waits until the move is done (0) or failed (1), printing how it went.
struct MoveOptions {
  std::string job;
  std::string site;
  double wait_s = 0;
  // A job not running yet (pcmctl run has not launched it or it is between two runs): wait this
  // long for its run to register before asking.
  double start_wait_s = 60;
};
int move_job(Connection& pcmd, const MoveOptions& options);

// The MPI port range of pcmd's site links (site_env.cpp): `pcmctl site-env` prints the
// variables (links touching `sites`, every link when empty); set_site_port_range sets each one
// the environment does not set already (pcmctl run, before its launches).
int print_site_env(Connection& pcmd, const std::vector<std::string>& sites);
void set_site_port_range(Connection& pcmd);

// Printers (print.cpp): the tables and texts pcmctl shows; scripts parse them.
void print_status_table(const proto::json& reply);
void print_host_table(const proto::json& hosts);
void print_events(const proto::json& events, const proto::json& times);
// The versions table; returns whether every version is valid.
bool print_versions(const proto::json& versions);
void print_reshape(const proto::json& reply, const std::string& job);

}  // namespace pcm::ctl
