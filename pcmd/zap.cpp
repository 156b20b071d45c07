// zap.cpp — the ZAP handler that checks CURVE clients' keys (see zap.h).
#include "zap.h"

#include <zmq_addon.hpp>

#include "error.h"
#include "log.h"
#include "pcm_types.h"

namespace pcm::daemon {

namespace {

std::string decode_key(const std::string& z85) {
  std::string raw(32, '\0');
  if (z85.size() != 40 || !zmq_z85_decode(reinterpret_cast<std::uint8_t*>(raw.data()), z85.c_str()))
    fail(PCM_ERR_CONFIG, "not a Z85 CURVE key");
  return raw;
}

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, const std::string& client_public_z85)
    : socket_(context, zmq::socket_type::rep),
      client_key_(decode_key(client_public_z85)),
      log_(logger("pcmd", spdlog::level::info)) {
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.bind("inproc://zeromq.zap.01");
  } catch (const zmq::error_t& e) {
    fail(PCM_ERR_CONFIG, "cannot start the CURVE authentication handler: {}", e.what());
  }
  thread_ = std::thread([this] { loop(); });
}

ZapHandler::~ZapHandler() {
  stop_.store(true);
  thread_.join();
}

void ZapHandler::loop() {
  while (!stop_.load()) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
      // RFC 27: version, request id, domain, address, identity, mechanism, credentials...
      std::vector<zmq::message_t> req;
      if (!zmq::recv_multipart(socket_, std::back_inserter(req))) continue;
      auto text = [&](std::size_t i) { return i < req.size() ? req[i].to_string() : ""; };
      const bool curve = text(5) == "CURVE" && req.size() >= 7;
      const bool ok = text(0) == "1.0" && curve && req[6].size() == 32 &&
                      std::memcmp(req[6].data(), client_key_.data(), 32) == 0;
      if (!ok) {
        refused_.fetch_add(1);
        // Rate-limited: a peer trying keys must not fill the log.
        auto now = std::chrono::steady_clock::now();
        if (now - last_log_ >= std::chrono::seconds(10)) {
          log_->warn(
              "refused a {} client from {} (its key is not the one in pcmd's "
              "configuration){}",
              curve ? "CURVE" : "non-CURVE", text(3).substr(0, 64),
              unlogged_ ? fmt::format("; {} more refused before", unlogged_) : "");
          last_log_ = now;
          unlogged_ = 0;
        } else {
          ++unlogged_;
        }
      }
      std::array<zmq::const_buffer, 6> reply{
          zmq::str_buffer("1.0"),
          zmq::buffer(req.size() > 1 ? req[1].data() : nullptr, req.size() > 1 ? req[1].size() : 0),
          ok ? zmq::str_buffer("200") : zmq::str_buffer("400"),
          ok ? zmq::str_buffer("OK") : zmq::str_buffer("client key not admitted"),
          zmq::str_buffer(""),
          zmq::str_buffer("")};
      zmq::send_multipart(socket_, reply);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      log_->warn("CURVE authentication handler: {}", e.what());
    }
  }
}

std::unique_ptr<ZapHandler> make_curve_server(zmq::context_t& context, zmq::socket_t& socket,
                                              const CurveServerKeys& keys) {
  if (!keys.enabled()) return nullptr;
  auto zap = std::make_unique<ZapHandler>(context, keys.client_public);
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, "pcm");
  return zap;
}

}  // namespace pcm::daemon
