// client.cpp — request/reply to pcmd; a REQ socket that is rebuilt after a timeout.
#include "client.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <random>

#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

void apply_curve(zmq::socket_t& socket, const CurveClientKeys& curve) {
  if (!curve.enabled()) return;
  socket.set(zmq::sockopt::curve_serverkey, curve.server_public);
  socket.set(zmq::sockopt::curve_publickey, curve.public_key);
  socket.set(zmq::sockopt::curve_secretkey, curve.secret_key);
}

Client::Client(zmq::context_t& context, std::string endpoint, std::string secret,
               CurveClientKeys curve)
    : context_(context),
      endpoint_(std::move(endpoint)),
      secret_(std::move(secret)),
      curve_(std::move(curve)) {
  std::random_device random;
  next_transfer_ =
      static_cast<std::int64_t>((std::uint64_t{random()} << 31) ^ random()) & ((1LL << 52) - 1);
  connect();
}

void Client::connect() {
  socket_ = zmq::socket_t(context_, zmq::socket_type::req);
  socket_.set(zmq::sockopt::linger, 0);
  apply_curve(socket_, curve_);
  try {
    socket_.connect(endpoint_);
  } catch (const zmq::error_t& e) {
    fail(PCM_ERR_CONFIG, "cannot connect to pcmd endpoint '{}': {}", endpoint_, e.what());
  }
}

Reply Client::request(proto::json header, const void* data, std::size_t size, int timeout_ms,
                      const std::function<bool()>& gone) {
  header["v"] = proto::kVersion;
  header["secret"] = secret_;
  if (!data || size <= proto::kMaxPiece) return exchange(header, data, size, timeout_ms, gone);
  header["xfer"] = next_transfer_++;
  header["total"] = size;
  const char* p = static_cast<const char*>(data);
  for (std::size_t offset = 0;;) {
    const std::size_t n = std::min(proto::kMaxPiece, size - offset);
    header["offset"] = offset;
    Reply reply = exchange(header, p + offset, n, timeout_ms, gone);
    offset += n;
    if (offset == size) return reply;
  }
}

Reply Client::exchange(const proto::json& header, const void* data, std::size_t size,
                       int timeout_ms, const std::function<bool()>& gone) {
  std::string bytes = proto::encode(header);
  const std::string op = header.value("op", std::string("?"));
  try {
    auto more = data ? zmq::send_flags::sndmore : zmq::send_flags::none;
    socket_.send(zmq::buffer(bytes), more);
    if (data) socket_.send(zmq::const_buffer(data, size), zmq::send_flags::none);
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      const auto slice = gone ? std::min(left, std::chrono::milliseconds(250)) : left;
      int ready = 0;
      try {
        ready = slice.count() > 0 ? zmq::poll(&item, 1, slice) : 0;
      } catch (const zmq::error_t& e) {
        // A signal the process handles (libpcm's stop signals: stop_signals.h) is no failure.
        if (e.num() != EINTR) throw;
        continue;
      }
      if (ready > 0) break;
      if (left <= slice) {
        connect();  // a REQ socket that got no reply cannot send again
        // A CURVE handshake that fails is silent: say what the keys may have to do with it.
        fail(PCM_ERR_DAEMON, "pcmd at {} did not answer '{}' within {} ms{}", endpoint_, op,
             timeout_ms,
             curve_.enabled()
                 ? " (with CURVE: pcmd answers only the client keys of its own configuration file)"
                 : " (a pcmd beyond loopback answers only CURVE clients: its configuration file "
                   "has the keys)");
      }
      if (gone()) {
        connect();
        fail(PCM_ERR_DAEMON, "pcmd at {} went away while '{}' waited for its answer", endpoint_,
             op);
      }
    }
    zmq::message_t head;
    (void)socket_.recv(head);
    Reply reply;
    if (head.more()) (void)socket_.recv(reply.data);
    while (socket_.get(zmq::sockopt::rcvmore)) {  // tolerate extra frames, drop them
      zmq::message_t extra;
      (void)socket_.recv(extra);
    }
    reply.header = proto::decode(head.data(), head.size());
    if (!proto::get_bool(reply.header, "ok", false)) {
      int code = static_cast<int>(
          proto::opt_int(reply.header, "code", PCM_ERR_NOSPACE, -1).value_or(PCM_ERR_INTERNAL));
      auto msg = proto::opt_string(reply.header, "error", 4096).value_or("no message");
      throw Error(code, msg);
    }
    return reply;
  } catch (const zmq::error_t& e) {
    connect();
    fail(PCM_ERR_DAEMON, "talking to pcmd at {} ('{}'): {}", endpoint_, op, e.what());
  }
}

}  // namespace pcm::common
