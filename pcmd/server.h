// server.h — pcmd's request loop: job table, command queue, and the HDF5 store behind one socket.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "checkpoint.h"
#include "command.h"
#include "data_thread.h"
#include "hosts.h"
#include "journal.h"
#include "log.h"
#include "policy.h"
#include "probe.h"
#include "protocol.h"
#include "store.h"
#include "watch.h"
#include "zap.h"

namespace pcm::detail {

struct ServerOptions {
  std::string bind = "tcp://127.0.0.1:*";  // ZeroMQ endpoint; '*' port: any free one
  std::string data_dir;                    // holds jobs/<job>/store.h5
  std::string secret;                      // required in every request
  // Inventory: "host" or "host:slots", the hosts reconfigurations may place processes on and
  // how many processes each may hold (over all running jobs). Default: localhost and this
  // host's name, each with 4 slots per core.
  std::vector<std::string> hosts;
  std::vector<HostSlots> more_hosts;              // from --hostfile or --slurm, after `hosts`
  std::size_t keep_versions = 3;                  // committed checkpoint versions kept per job
  Placement placement = Placement::kConcentrate;  // for jobs and commands that name none
  int probe_port = 9;  // the TCP port whose answer times a host's round trip (probe.h); 0: off
  std::chrono::milliseconds probe_period{30000};
  CurveServerKeys curve;  // enabled: every connection is CURVE, with the one client key admitted
  // A transfer in pieces (protocol.h) whose next piece has not come for this long is dropped and
  // its memory freed.
  std::chrono::milliseconds transfer_timeout{60000};
  // A host whose agent has not reported for this long is lost: drained, then removed.
  std::chrono::milliseconds agent_timeout{5000};
  // --policy auto: pcmd reconfigures jobs by itself (policy.h); manual (default): only commands.
  bool policy_auto = false;
  PolicyConfig policy;
};

// A host of the inventory.
struct InventoryHost {
  std::string name;
  int slots = 0;
  std::string site = "default";
  std::optional<double> latency_ms;  // declared by the operator; wins over the measured RTT
  bool draining = false;             // receives no process; leaves once empty
  // Joined through an agent (pcmd --agent, agent.h), which reports every period: the host's
  // cores, how many of them were busy over the last period, the 1-minute load average.
  bool agent = false;
  int cores = 0;
  double busy = 0, load1 = 0, runnable = 0;
  std::chrono::steady_clock::time_point last_report;
  bool lost = false;  // its agent fell silent for ServerOptions::agent_timeout: being drained
};

// A job's state as pcmctl shows it ("running", "finished", "failed" on the wire).
enum class JobState { kRunning, kFinished, kFailed };
const char* state_name(JobState state);

// One entry of a job's history: when (wall clock, seconds since the epoch; 0 for entries of a job
// table from before pcmd kept times) and what.
struct JobEvent {
  double time = 0;
  std::string text;
};

struct Job {
  std::string name;
  JobState state = JobState::kRunning;
  int size = 0;
  std::vector<std::string> hosts;  // by rank
  std::string executable;          // what reconfigurations spawn (checked before each)
  std::int64_t iteration = 0;
  int reconfigurations = 0;
  std::optional<proto::Command> pending;  // requested by an operator, not yet carried out
  bool pending_delivered = false;         // rank 0 has been told
  bool pending_drain = false;             // the pending command is a step of a host's drain
  std::string last_event;
  std::vector<JobEvent> events;  // the last few events, oldest first
  std::chrono::steady_clock::time_point last_seen;
  std::int64_t layout_command = 0;         // the command whose data layout pcmd holds (0: none)
  nlohmann::json layout;                   // that layout (null: none reported)
  std::optional<Manifest> restarted_from;  // the verified version a restarted job reads
  std::optional<Placement> placement;      // the job's own (PCM_PLACEMENT at launch)
  std::string drain_stalled;               // a drain step failed: the job is no longer drained
  long rank0_pid = 0;                      // watched while rank 0 runs on pcmd's host
  std::string rank0_host;
  // The job's processes holding a connection to the watch port (watch.h), by host and pid.
  std::map<std::pair<std::string, long>, int> watched;
  long long incarnation = 0;  // this run of the job: only its processes' hellos count
  std::string nonce;          // its registration's, so that a registration sent again is known
  std::int64_t last_done_command = 0;  // the last command the job reported (done or failed)
  bool ever_watched = false;
  // Processes lost without saying bye ("PID on HOST"), first first: when a host vanishes, MPI
  // tears the rest of the job down and those losses follow the first one.
  std::vector<std::string> lost;
  std::optional<std::chrono::steady_clock::time_point> unwatched_since;
  // The last profile rank 0 sent (profile.h, validated; null: none) and when it came. Kept in
  // memory only: a restarted pcmd has the next one within PCM_PROFILE_MS.
  nlohmann::json profile;
  std::chrono::steady_clock::time_point profile_at;
  // Iterations reported by rank 0's polls lately (the policy's iteration rate).
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::int64_t>> progress;
  // Iterations per second over the last few seconds of polls (< 0: not known).
  double rate(std::chrono::steady_clock::time_point now) const;
  // The history as status and the job table show it: "events" (texts) and "event_times".
  void put_events(nlohmann::json& j) const;
};

class Server {
 public:
  Server(zmq::context_t& context, ServerOptions options);
  ~Server();  // finishes the data thread's queued work first
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The endpoint actually bound (with the port chosen by the system).
  const std::string& endpoint() const { return endpoint_; }
  // The watch port's endpoint, for the configuration file.
  const std::string& watch_endpoint() const { return watcher_->endpoint(); }

  // Serves until stop becomes true (checked at least every 200 ms).
  void run(const std::atomic<bool>& stop);

  // For tests: runs f on the data thread, in turn with the requests' disk work (thread-safe).
  void run_on_data_thread(std::function<void()> f) {
    data_->post(nullptr, DataWork{[f = std::move(f)](std::vector<char>&) {
                                    f();
                                    return proto::ok_reply();
                                  },
                                  nullptr});
  }

  // The request path of serve_one without the socket: decodes one request's frames ([routing id,
  // (empty delimiter), header, (data)], as the router socket gives them) and handles it. Returns
  // the reply header (and fills reply_data), or nothing when the request's disk work went to the
  // data thread and the reply follows from there. disk_inline: do that disk work now instead
  // (the fuzz harness, which runs no request loop). Never throws for anything a peer sent.
  std::optional<proto::json> respond(std::shared_ptr<std::vector<zmq::message_t>> frames,
                                     std::vector<char>& reply_data, bool disk_inline = false);

  // Transfers in pieces under way (protocol.h).
  std::size_t transfers() const { return transfers_.size(); }

  // Handles one request; exposed for tests. data/size: the optional second frame.
  // Returns the reply header and fills reply_data for "load".
  proto::json handle(const proto::json& request, const void* data, std::size_t size,
                     std::vector<char>& reply_data);

 private:
  void serve_one();
  // Sends a reply along the route of a request's frames.
  void send_reply(std::vector<zmq::message_t>& frames, const proto::json& reply,
                  const std::vector<char>& reply_data);
  // Replies to the requests whose disk work the data thread has finished.
  void finish_data_work();
  // A request's disk part: carried out at once when handle() is called directly (tests), else
  // handed to the data thread, the reply following when it is done.
  proto::json defer(DataWork work, std::vector<char>& reply_data);
  // Disk work nobody waits for (a layout kept for a restart), in order with the rest.
  void in_background(std::function<void()> f);
  std::string registration_name(const proto::json& req);
  proto::json register_job(const proto::json& req, const std::string& name,
                           std::optional<Manifest> restarted_from);
  void check_jobs_alive();
  bool rank0_gone(const Job& job) const;
  void take_watch_events();
  void fail_job(Job& job, std::string why);
  void note(Job& job, std::string event);  // also a change of the job table

  // The job table on disk (job_table.cpp, journal.h).
  std::filesystem::path table_file() const;
  proto::json snapshot() const;
  void restore(const proto::json& table);
  void restore_table();
  void changed();
  // Hands the journal the table if it changed since it was last handed over; its generation.
  std::uint64_t persist();
  // Sends a reply, or holds it until the journal has written the table as it is now when the
  // request changed it (changes_before: changes_ when the request came in).
  void answer(std::shared_ptr<std::vector<zmq::message_t>> frames, const proto::json& reply,
              const std::vector<char>& reply_data, std::uint64_t changes_before);
  // Sends the held replies whose table is written.
  void release_replies();
  proto::json dispatch(const std::string& op, const proto::json& req, const void* data,
                       std::size_t size, std::vector<char>& reply_data);
  Job& find_job(const proto::json& req);
  proto::json job_json(const Job& job) const;

  proto::json op_register(const proto::json& req, std::vector<char>& reply_data);
  proto::json op_shards(const std::string& op, const proto::json& req, const void* data,
                        std::size_t size, std::vector<char>& reply_data);
  proto::json registration_reply(const Job& job) const;
  void forget_ended_jobs();
  std::optional<proto::json> committed_before(const std::string& job, std::int64_t iteration);
  proto::json op_poll(const proto::json& req);
  proto::json op_reconfigured(const proto::json& req);
  proto::json op_finished(const proto::json& req);
  proto::json op_piece(const std::string& op, const proto::json& req, const void* data,
                       std::size_t size, std::vector<char>& reply_data);
  void expire_transfers();
  proto::json op_store(const proto::json& req, const void* data, std::size_t size,
                       std::vector<char>& reply_data);
  proto::json op_load(const proto::json& req, std::vector<char>& reply_data);
  proto::json op_status(const proto::json& req);
  proto::json op_profile(const proto::json& req);
  proto::json op_migrate(const proto::json& req);
  proto::json op_reshape(const std::string& op, const proto::json& req);
  proto::json op_checkpoint(const std::string& op, const proto::json& req,
                            std::vector<char>& reply_data);
  Job& job_for_command(const proto::json& req);
  proto::json queue(Job& job, proto::Command c);

  // The inventory (inventory.cpp).
  void add_host(const std::string& name, int slots, const std::string& site,
                std::optional<double> latency_ms);
  InventoryHost* find_host(const std::string& name);
  int used_slots(const std::string& host, const Job* except) const;
  int free_slots(const std::string& host, const Job* except) const;
  double sort_latency(const InventoryHost& h) const;
  std::vector<Host> placement_hosts(const Job* except) const;
  Placement placement_for(const Job& job, const proto::json& req) const;
  std::vector<std::string> place_near(const Job& job, const std::vector<int>& source_of_new_rank,
                                      int preferred_new, const std::string& preferred_host) const;
  std::string migration_target(const Job& job, int rank, Placement p) const;
  std::vector<std::string> host_names() const;
  std::string requested_host(const proto::json& req) const;
  proto::json op_host(const std::string& op, const proto::json& req);
  proto::json op_agent(const std::string& op, const proto::json& req);
  void check_agents();
  // --policy auto: one round of the policy's decisions (every second).
  void run_policy();
  // Starts draining host (refused, with the reason, when its processes have nowhere to go).
  void start_drain(InventoryHost& host);
  proto::json op_topology(const proto::json& req);
  void progress_drains();
  bool drain_step(Job& job, const InventoryHost& host);

  ServerOptions options_;
  std::vector<InventoryHost> inventory_;
  // Agent hosts that left the inventory (drained): a report from their agent is refused until
  // an agent joins again (its first report). At most kMaxHosts names, the oldest forgotten first
  // (left_order_: oldest first).
  std::set<std::string> left_agents_;
  std::deque<std::string> left_order_;
  void left_agent(const std::string& name, bool left);
  std::unique_ptr<Policy> policy_;  // --policy auto
  bool policy_deciding_ = false;    // the command being queued is the policy's
  std::unique_ptr<RttProber> prober_;
  std::unique_ptr<Watcher> watcher_;
  std::unique_ptr<ZapHandler> zap_;  // with CURVE: checks each client's key
  zmq::socket_t socket_;
  std::string endpoint_;
  Store store_;
  Checkpoints checkpoints_;
  // The data thread and the bell it rings when work is done (destroyed before the store and the
  // checkpoints it uses).
  zmq::socket_t bell_;
  std::unique_ptr<DataThread> data_;
  bool async_ = false;                // serve_one is handling a request: defer() hands work over
  std::optional<DataWork> deferred_;  // what defer() handed over for the request being handled
  // A transfer in pieces: the bytes so far, for one op of one job.
  struct Transfer {
    std::string op, job;
    std::uint64_t total = 0;
    std::shared_ptr<std::vector<char>> bytes;
    std::chrono::steady_clock::time_point last;
  };
  std::map<std::int64_t, Transfer> transfers_;  // by the client's id
  // The reassembled data of the request being handled, kept alive by defer() for the data thread.
  std::shared_ptr<std::vector<char>> assembled_;
  LogLimiter refusals_{10};  // log lines about refused and malformed requests
  std::map<std::string, Job> jobs_;
  // The journal, its bell, and the replies that wait for it.
  zmq::socket_t journal_bell_;
  std::unique_ptr<Journal> journal_;
  std::uint64_t changes_ = 0, persisted_changes_ = 0, posted_gen_ = 0;
  struct HeldReply {
    std::shared_ptr<std::vector<zmq::message_t>> frames;
    proto::json reply;
    std::vector<char> reply_data;
    std::uint64_t gen;
  };
  std::vector<HeldReply> held_;
  std::string boot_id_;
  std::int64_t next_command_ = 1;
  std::int64_t next_job_ = 1;
  long long next_incarnation_ = 1;
  std::shared_ptr<spdlog::logger> log_;
  std::string my_host_;
};

}  // namespace pcm::detail
