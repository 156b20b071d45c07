// fuzz_request.cpp — libFuzzer target: the input is the frames of one request as a peer sends
// them (the router adds the peer's routing id), through pcmd's decode-and-dispatch path
// (Server::respond, which serve_one runs), on a Server with a temporary data directory.
//
// Input: frames one after another, each a 4-byte little-endian length and that many bytes (the
// last one takes what is left). The reply must be a map with "ok" that encodes and decodes again
// (it goes back on the wire, and clients decode it); anything else aborts.
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>
#include <zmq.hpp>

#include "protocol.h"
#include "server.h"

namespace {

// The secret of the seed corpus's authenticated requests (tests/fuzz/make_corpus.py).
constexpr char kSecret[] = "fuzz-secret-0123456789abcdef";
// State carries over from input to input (jobs registered, data stored) within this many; then
// the Server and its data directory start afresh, so that neither grows without bound.
constexpr int kInputsPerServer = 2000;

struct Fixture {
  zmq::context_t context{1};
  std::filesystem::path dir;
  std::unique_ptr<pcm::daemon::Server> server;
  int inputs = 0;

  Fixture() { reset(); }
  ~Fixture() { clear(); }
  void clear() {
    server.reset();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    dir.clear();
  }
  void reset() {
    clear();
    std::string tmpl = (std::filesystem::temp_directory_path() / "pcm-fuzz.XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    dir = tmpl;
    pcm::daemon::ServerOptions o;
    o.bind = "tcp://127.0.0.1:*";
    o.data_dir = (dir / "data").string();
    o.secret = kSecret;
    o.hosts = {"localhost:4", "nodeb:2"};
    o.probe_port = 0;  // made-up host names: never looked up
    server = std::make_unique<pcm::daemon::Server>(context, o);
    inputs = 0;
  }
};

Fixture* fixture = nullptr;

}  // namespace

// A fresh Server for the next input (the replay runs each file on its own).
extern "C" void PcmFuzzReset() {
  if (fixture) fixture->reset();
}

// Frees everything and removes the data directory (leak checkers then see no live Server).
extern "C" void PcmFuzzFinish() {
  delete fixture;
  fixture = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("PCM_LOG_LEVEL", "off", 0);  // pcmd's warnings about each bad input
  std::atexit(PcmFuzzFinish);           // libFuzzer ends a run with exit()
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!fixture) fixture = new Fixture;
  if (++fixture->inputs > kInputsPerServer) fixture->reset();
  auto frames = std::make_shared<std::vector<zmq::message_t>>();
  frames->emplace_back("peer", 4);
  std::size_t at = 0;
  while (at < size && frames->size() < 6) {
    std::uint32_t len = 0;
    const std::size_t n = std::min<std::size_t>(4, size - at);
    std::memcpy(&len, data + at, n);
    at += n;
    const std::size_t take = std::min<std::size_t>(len, size - at);
    frames->emplace_back(data + at, take);
    at += take;
  }
  std::vector<char> reply_data;
  auto reply = fixture->server->respond(frames, reply_data, /*disk_inline=*/true);
  if (!reply || !reply->is_object() || !reply->contains("ok")) {
    std::fprintf(stderr, "fuzz_request: no reply, or one without \"ok\"\n");
    std::abort();
  }
  const std::string bytes = pcm::proto::encode(*reply);
  try {
    (void)pcm::proto::decode(bytes.data(), bytes.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_request: a reply clients cannot decode: %s\n", e.what());
    std::abort();
  }
  return 0;
}
