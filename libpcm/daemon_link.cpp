// daemon_link.cpp — requests to pcmd and rank 0's asynchronous poll (see daemon_link.h).
#include "daemon_link.h"

#include <iterator>
#include <vector>
#include <zmq_addon.hpp>

#include "error.h"
#include "mpi_util.h"
#include "pcm_types.h"

namespace pcm::detail {

using proto::json;

void DaemonLink::open(const Config& config, long poll_interval_ms) {
  endpoint_ = config.endpoint;
  secret_ = config.secret;
  poll_interval_ms_ = poll_interval_ms;
  context_.emplace(1);
}

void DaemonLink::close() {
  client_.reset();
  poller_ = zmq::socket_t();
  context_.reset();
}

Reply DaemonLink::request(const json& header, const void* data, std::size_t size, int timeout_ms) {
  if (!context_) fail(PCM_ERR_CONFIG, "no configuration");
  if (!client_) client_.emplace(*context_, endpoint_, secret_);
  return client_->request(header, data, size, timeout_ms);
}

void DaemonLink::reset_poller() {
  poller_ = zmq::socket_t(*context_, zmq::socket_type::dealer);
  poller_.set(zmq::sockopt::linger, 0);
  poller_.set(zmq::sockopt::sndhwm, 4);
  poller_.connect(endpoint_);
  poll_outstanding_ = false;
}

std::optional<proto::Command> DaemonLink::poll(const std::string& job, std::int64_t iteration,
                                               int world_size) {
  if (!poller_) reset_poller();
  std::optional<proto::Command> command;
  const std::int64_t now = now_ms();
  if (poll_outstanding_) {
    // A reply to a DEALER that mimics REQ: [empty, header]; whatever frames there are.
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(poller_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      if (now - poll_sent_ms_ > 10000) {
        plog()->warn("[rank 0] pcmd has not answered a poll for 10 s; reconnecting");
        reset_poller();
      }
      return command;
    }
    poll_outstanding_ = false;
    try {
      const zmq::message_t head = frames.size() > 1 ? std::move(frames[1]) : zmq::message_t();
      json reply = proto::decode(head.data(), head.size());
      if (!proto::get_bool(reply, "ok", false)) {
        plog()->warn("[rank 0] pcmd refused a poll: {}",
                     proto::opt_string(reply, "error", 4096).value_or("?"));
      } else if (auto it = reply.find("command"); it != reply.end() && it->is_object()) {
        command = proto::Command::from_json(*it, world_size);
      }
    } catch (const Error& e) {
      plog()->warn("[rank 0] bad poll reply from pcmd: {}", e.what());
    }
  }
  if (!poll_outstanding_ && now - poll_sent_ms_ >= poll_interval_ms_) {
    json req{{"v", proto::kVersion},
             {"op", "poll"},
             {"secret", secret_},
             {"job", job},
             {"iteration", iteration}};
    std::string bytes = proto::encode(req);
    if (poller_.send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
        poller_.send(zmq::buffer(bytes), zmq::send_flags::dontwait)) {
      poll_outstanding_ = true;
    }
    poll_sent_ms_ = now;
  }
  return command;
}

}  // namespace pcm::detail
