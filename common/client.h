// client.h — a synchronous request/reply connection to pcmd with a time limit on every request.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <zmq.hpp>

#include "config.h"
#include "namespaces.h"
#include "protocol.h"

namespace pcm::common {

struct Reply {
  proto::json header;
  zmq::message_t data;  // second frame, empty if none
};

class Client {
 public:
  // context must outlive the client. With curve enabled, the connection is encrypted and
  // authenticated with CURVE (a pcmd beyond loopback requires it).
  Client(zmq::context_t& context, std::string endpoint, std::string secret,
         CurveClientKeys curve = {});

  // Sends header (with "v" and "secret" added) and optional data; waits at most timeout_ms.
  // Throws pcm::Error: PCM_ERR_DAEMON if pcmd does not answer in time, or as soon as gone()
  // (asked every quarter second while waiting) says it went away (the connection is then
  // reset, so the client stays usable); the reply's own code if pcmd answers ok=false.
  // Data longer than proto::kMaxPiece goes as a transfer in pieces (protocol.h), each piece a
  // request with its own time limit; the reply is the last piece's.
  Reply request(proto::json header, const void* data = nullptr, std::size_t size = 0,
                int timeout_ms = 10000, const std::function<bool()>& gone = nullptr);

  const std::string& endpoint() const { return endpoint_; }

 private:
  void connect();
  // One request and its reply.
  Reply exchange(const proto::json& header, const void* data, std::size_t size, int timeout_ms,
                 const std::function<bool()>& gone);

  zmq::context_t& context_;
  std::string endpoint_;
  std::string secret_;
  CurveClientKeys curve_;
  zmq::socket_t socket_;
  std::int64_t next_transfer_;  // a random start, so that clients' transfer ids do not meet
};

// Makes socket a CURVE client of pcmd with these keys (before it connects); nothing if disabled.
void apply_curve(zmq::socket_t& socket, const CurveClientKeys& curve);

}  // namespace pcm::common
