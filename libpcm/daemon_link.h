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

namespace pcm::detail {

class DaemonLink {
 public:
  // Connects nothing yet: the first request or poll does.
  void open(const Config& config, long poll_interval_ms);
  // Closes every socket and the context; open() may not be called again. A process that watch()ed
  // says "bye" on its watch connection first: it leaves normally.
  void close();
  // Opens this process's connection to pcmd's watch port (pcmd/watch.h) and says who it is; kept
  // open and idle until close(). Without a watch port in the configuration, or when it cannot be
  // reached within timeout_ms, logs a warning and goes on: the job runs unwatched.
  // incarnation: pcmd's number for this run of the job (register's reply), so that pcmd never
  // takes a process of an earlier run of the same job name for one of this run.
  void watch(const std::string& job, std::int64_t incarnation, const std::string& host,
             int timeout_ms);
  bool is_open() const { return static_cast<bool>(context_); }

  // A request to pcmd; throws pcm::Error as Client::request does (PCM_ERR_CONFIG when closed).
  Reply request(const proto::json& header, const void* data, std::size_t size, int timeout_ms);

  // Rank 0, every agreement: sends a poll request at most every poll interval and picks up the
  // reply to an earlier one. Returns the command pcmd holds for a world of world_size, if any.
  // Never blocks; a bad or refused reply is logged and yields nothing.
  std::optional<proto::Command> poll(const std::string& job, std::int64_t iteration,
                                     int world_size);
  // Stops polling (this process is no longer the world's rank 0); poll() reconnects.
  void stop_polling() { poller_ = zmq::socket_t(); }

 private:
  void reset_poller();

  std::string endpoint_;
  std::string secret_;
  CurveClientKeys curve_;
  std::optional<zmq::context_t> context_;
  std::optional<Client> client_;  // created on first use, holds a reference to context_

  std::string watch_endpoint_;
  int watch_fd_ = -1;

  zmq::socket_t poller_;  // a DEALER: PCM_Status never waits for pcmd
  bool poll_outstanding_ = false;
  std::int64_t poll_sent_ms_ = 0;
  std::int64_t poll_interval_ms_ = 50;
};

}  // namespace pcm::detail
