// mux.h — the header a multiplexing pcm-relay (--mux) puts before a connection's bytes so
// that the next relay (--demux) carries several of pcmd's ports over one (issue 26: sites whose
// front-ends reach one another on one port). Eight bytes: "PCMX", a version, a zero byte, and
// the port it names (big-endian). The rest of the connection is the client's bytes, unchanged:
// CURVE stays end to end.
#pragma once

#include <array>
#include <string>

namespace pcm::relay {

constexpr std::size_t kMuxHeaderBytes = 8;
constexpr unsigned char kMuxVersion = 1;
using MuxHeader = std::array<char, kMuxHeaderBytes>;

MuxHeader encode_mux_header(int port);

// The port a header names (1-65535), or 0 with why it is not a header of this version.
int decode_mux_header(const MuxHeader& h, std::string& why);

}  // namespace pcm::relay
