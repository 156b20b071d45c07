// mux.cpp — the multiplexing header (mux.h).
#include "mux.h"

#include <fmt/format.h>

#include <cstring>

namespace pcm::relay {

namespace {
constexpr char kMagic[4] = {'P', 'C', 'M', 'X'};
}

MuxHeader encode_mux_header(int port) {
  MuxHeader h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  h[4] = static_cast<char>(kMuxVersion);
  h[5] = 0;
  h[6] = static_cast<char>((port >> 8) & 0xff);
  h[7] = static_cast<char>(port & 0xff);
  return h;
}

int decode_mux_header(const MuxHeader& h, std::string& why) {
  if (std::memcmp(h.data(), kMagic, sizeof kMagic) != 0) {
    why = "not a pcm-relay --mux header";
    return 0;
  }
  const auto version = static_cast<unsigned char>(h[4]);
  if (version != kMuxVersion || h[5] != 0) {
    why = fmt::format("header version {} (this relay speaks {})", version, kMuxVersion);
    return 0;
  }
  const int port = (static_cast<unsigned char>(h[6]) << 8) | static_cast<unsigned char>(h[7]);
  if (port == 0) why = "header names port 0";
  return port;
}

}  // namespace pcm::relay
