// protocol.h — the messages between libpcm/pcmctl and pcmd: MessagePack maps, validated on receipt.
//
// A request is one or two ZeroMQ frames: a MessagePack map (the header) and, for the requests
// that carry data (ops.h's table: OpTraits::pieces), the raw data. Every header has "v" (protocol
// version), "op" and "secret"; the requests and their fields are in ops.h. A reply header has "ok"
// (bool); a failed one also has "code" (a PCM_ERR_* value) and "error" (a message); the replies
// of OpTraits::replies_data carry their data as a second frame.
//
// No frame a peer sends pcmd exceeds kMaxFrame bytes (pcmd's socket drops a peer that tries:
// ZeroMQ would otherwise take in a whole message of any size before pcmd could check its
// secret). Data longer than kMaxPiece travels in pieces: requests of the same op and header, each
// authenticated, with "xfer" (the transfer's id, chosen by the client), "total" (all its bytes)
// and "offset" (where this piece starts), sent in order; pcmd reassembles them and carries out the
// request when the last one arrives. A piece out of order drops the transfer; an abandoned one is
// freed after a while.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace pcm::proto {

using json = nlohmann::json;

inline constexpr int kVersion = 1;
inline constexpr std::size_t kMaxName = 64;          // job names and keys
inline constexpr std::size_t kMaxHost = 255;         // host names
inline constexpr std::size_t kMaxHeader = 1 << 20;   // bytes of a request header
inline constexpr std::size_t kMaxDepth = 32;         // nesting of a header's maps and arrays
inline constexpr std::size_t kMaxPiece = 4 << 20;    // data bytes in one request
inline constexpr std::size_t kMaxFrame = kMaxPiece;  // any frame a peer sends pcmd (>= kMaxHeader)
static_assert(kMaxFrame >= kMaxHeader && kMaxFrame >= kMaxPiece);

// Serialises a header to MessagePack.
std::string encode(const json& header);

// Checks, without recursion or allocation beyond one small stack, that data is one well-formed
// MessagePack value: nesting at most max_depth, every declared length present, every string
// UTF-8, nothing after the end. Throws pcm::Error(PCM_ERR_ARG) saying what is wrong.
void check_msgpack(const void* data, std::size_t size, std::size_t max_depth);

// Parses a MessagePack header; throws pcm::Error(PCM_ERR_ARG) unless it is a map of at most
// kMaxHeader bytes that check_msgpack accepts with kMaxDepth.
json decode(const void* data, std::size_t size);
// The same for a bulk record sent as a data frame (a checkpoint's shard table): up to max_size.
json decode_large(const void* data, std::size_t size, std::size_t max_size);

// Field access that validates as it reads; each throws pcm::Error(PCM_ERR_ARG) naming the field.
std::string get_string(const json& m, const char* key, std::size_t max_len);
std::optional<std::string> opt_string(const json& m, const char* key, std::size_t max_len);
std::int64_t get_int(const json& m, const char* key, std::int64_t lo, std::int64_t hi);
std::optional<std::int64_t> opt_int(const json& m, const char* key, std::int64_t lo,
                                    std::int64_t hi);
bool get_bool(const json& m, const char* key, bool fallback);

// Job names and keys: 1..kMaxName of [A-Za-z0-9._-], not starting with '.' or '-'. They become
// HDF5 link names and directory names, so nothing else may pass.
bool valid_name(std::string_view s);
// Host names: 1..kMaxHost of [A-Za-z0-9.-], not starting with '-' or '.'.
bool valid_host(std::string_view s);
// Whether a secret a peer sent equals ours (never for an empty one), in time that does not
// depend on where they differ, so that a secret cannot be guessed byte by byte.
bool same_secret(std::string_view given, std::string_view ours);

// Whether s is valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view s);
// s as valid UTF-8 of at most max_bytes: each byte that is not part of a valid character becomes
// the four characters \xNN, and the text is cut at a character boundary (ending in "...") when too
// long. For text that goes into a reply, a job's events or a request (JSON and MessagePack need
// UTF-8).
std::string clean_text(std::string_view s, std::size_t max_bytes = 4000);
// s for a log line: control characters (newlines among them) and bytes that are not UTF-8 become
// escapes (\n, \xNN), a backslash becomes \\, and at most max_bytes of s are shown,
// so that text from a request can never start a line of its own.
std::string printable(std::string_view s, std::size_t max_bytes = 512);

// Element types (the PCM_Datatype values) and their sizes in bytes; 0 for an unknown type.
std::size_t type_size(int type);
const char* type_name(int type);

json ok_reply();
json error_reply(int code, const std::string& message);

}  // namespace pcm::proto
