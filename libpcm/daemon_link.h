// daemon_link.h — libpcm's connection to pcmd: synchronous requests (register, store, load,
// commit, reports) and rank 0's asynchronous poll for commands, which never waits for pcmd.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "client.h"
#include "command.h"
#include "config.h"

namespace pcm::lib {

// pcmd may restart while a job runs (kill -9, SIGTERM, an upgrade): its job table is durable,
// so the job carries on with the new pcmd. A request that was waiting when pcmd went away (its
// watch connection closed, or the configuration file names another pcmd) is sent again, marked
// "retry", as soon as a pcmd answers at the endpoint the configuration file then names; after
// reconnect_ms without one it fails with PCM_ERR_DAEMON.
class DaemonLink {
 public:
  // Connects nothing yet: the first request or poll does. config_path: where config was read
  // (read again to find a restarted pcmd).
  void open(const Config& config, const std::string& config_path, long poll_interval_ms,
            int reconnect_ms);
  // Closes every socket and the context; open() may not be called again. A process that watch()ed
  // says "bye" on its watch connection first: it leaves normally.
  void close();
  // Opens this process's connection to pcmd's watch port (pcmd/watch.h) and says who it is; kept
  // open and idle until close(). Without a watch port in the configuration, or when it cannot be
  // reached within timeout_ms, logs a warning and goes on: the job runs unwatched.
  // incarnation: pcmd's number for this run of the job (register's reply), so that pcmd never
  // takes a process of an earlier run of the same job name for one of this run. Every request
  // from now on carries it too (pcmd's fence: ops::Fence), even when the job runs unwatched.
  void watch(const std::string& job, std::int64_t incarnation, const std::string& host,
             int timeout_ms);
  bool is_open() const { return static_cast<bool>(context_); }
  // The run watch() named (0: none yet); a second link of the same process stamps it too.
  std::int64_t incarnation() const { return incarnation_; }
  void set_incarnation(std::int64_t incarnation) { incarnation_ = incarnation; }

  // A request to pcmd; throws pcm::Error as Client::request does (PCM_ERR_CONFIG when closed).
  // If pcmd goes away meanwhile, waits up to reconnect_ms (default: open()'s) for a pcmd and
  // sends the request again there (requests are safe to send twice).
  Reply request(const proto::json& header, const void* data, std::size_t size, int timeout_ms,
                int reconnect_ms = -1);

  // The pid of the pcmd this process talks to (rank 0 tells the others at each agreement).
  long pcmd_pid() const { return pid_; }
  // Another process met a pcmd with this pid: if the configuration file names it, talk to it
  // (and hold a watch connection to it) from now on. Tried once per pid; cheap otherwise.
  void follow(long pid);

  // Rank 0, every agreement: sends a poll request at most every poll interval and picks up the
  // reply to an earlier one. Returns the command pcmd holds for a world of world_size, if any.
  // Never blocks; a bad or refused reply is logged and yields nothing.
  std::optional<proto::Command> poll(const std::string& job, std::int64_t iteration,
                                     int world_size);
  // The checkpoint pcmd asks of the job in its last poll reply (its id; 0: none).
  std::int64_t checkpoint_wanted() const { return checkpoint_wanted_; }
  // That checkpoint is to be written at once, not staged: the run ends right after it.
  bool checkpoint_at_once() const { return checkpoint_at_once_; }
  // pcmd asks the job to end after a last version (`pcmctl stop`, pcmctl run's signal).
  bool stop_wanted() const { return stop_wanted_; }
  // Why pcmd asks the stop (a move, pcmctl stop's --why; "" from an older pcmd): rank 0's.
  const std::string& stop_why() const { return stop_why_; }
  // A process that joined the job in the command in flight and was lost ("PID on HOST"), as the
  // last poll reply says ("": none): a split's old world then gives the split up.
  const std::string& lost_new() const { return lost_new_; }
  // Rank 0: every poll from now on reports the checkpoints PCM_Adapt schedules (seconds; a
  // negative cost or interval: not measured yet).
  void set_checkpoint_schedule(double cost_s, double interval_s, double mtbf_s) {
    schedule_ = {cost_s, interval_s, mtbf_s};
  }
  // Rank 0: the job's profile goes with the next poll request (a newer one replaces it).
  void send_profile(nlohmann::json profile) { profile_ = std::move(profile); }
  // Stops polling (this process is no longer the world's rank 0); poll() reconnects.
  void stop_polling() { poller_ = zmq::socket_t(); }

 private:
  void reset_poller();
  // Whether the pcmd this process talks to went away: its watch connection closed, or the
  // configuration file names another pcmd.
  bool pcmd_gone();
  bool watch_closed() const;
  // Reads the configuration file; if it names a pcmd other than the current one, talks to that
  // one from now on (client, poller, watch connection). True if it did.
  bool adopt_config();
  // Waits up to within_ms for a pcmd that answers a ping, and adopts it. False (why says why)
  // if none did.
  bool reconnect(int within_ms, std::string* why);

  std::string config_path_;
  long pid_ = 0;
  long followed_ = 0;
  int reconnect_ms_ = 60000;
  std::string endpoint_;
  std::string secret_;
  CurveClientKeys curve_;
  std::optional<zmq::context_t> context_;
  std::optional<Client> client_;  // created on first use, holds a reference to context_

  std::string watch_endpoint_;
  int watch_fd_ = -1;
  // What watch() said, to say it again to a restarted pcmd.
  std::string watch_job_, watch_host_;
  std::int64_t incarnation_ = 0;  // stamped on every request (0: none yet)
  int watch_timeout_ms_ = 5000;

  zmq::socket_t poller_;  // a DEALER: PCM_Status never waits for pcmd
  bool poll_outstanding_ = false;
  std::int64_t checkpoint_wanted_ = 0;
  bool checkpoint_at_once_ = false;
  bool stop_wanted_ = false;
  std::string stop_why_;
  std::string lost_new_;
  std::optional<std::array<double, 3>> schedule_;  // cost, interval, MTBF
  nlohmann::json profile_;                         // to send with the next poll (null: none)
  std::int64_t poll_sent_ms_ = 0;
  std::int64_t poll_interval_ms_ = 50;
  std::int64_t gone_checked_ms_ = 0;
  std::int64_t refused_logged_ms_ = 0;  // when a refused poll was last logged
};

}  // namespace pcm::lib
