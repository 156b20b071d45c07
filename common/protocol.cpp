// protocol.cpp — encoding and validating protocol headers.
#include "protocol.h"

#include <vector>

#include "error.h"
#include "pcm_types.h"

namespace pcm::proto {

std::string encode(const json& header) {
  std::string out;
  json::to_msgpack(header, out);
  return out;
}

namespace {

// Whether bytes [p, p + n) are valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool valid_utf8(const std::uint8_t* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    const std::uint8_t c = p[i];
    std::size_t len;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::uint64_t be(const std::uint8_t* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < n; ++k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

void check_msgpack(const void* data, std::size_t size, std::size_t max_depth) {
  // Iterative, with an explicit stack of the items each open container still holds: a message
  // from anyone (before its secret is checked) must not make the decoder recurse without bound,
  // allocate for lengths it does not carry, or pass strings that are not UTF-8.
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::size_t at = 0;
  std::vector<std::uint64_t> open{1};
  auto need = [&](std::uint64_t n) {
    if (n > size - at) fail(PCM_ERR_ARG, "message is truncated or declares {} bytes it lacks", n);
  };
  while (!open.empty()) {
    if (open.back() == 0) {
      open.pop_back();
      continue;
    }
    --open.back();
    need(1);
    const std::uint8_t t = p[at++];
    std::uint64_t items = 0, skip = 0;
    bool container = false, str = false;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
    } else if (t >= 0x80 && t <= 0x8f) {
      container = true, items = 2 * (t & 0x0f);
    } else if (t >= 0x90 && t <= 0x9f) {
      container = true, items = t & 0x0f;
    } else if (t >= 0xa0 && t <= 0xbf) {
      str = true, skip = t & 0x1f;
    } else {
      // Sized headers: the width of the length (or of the value) that follows.
      static constexpr int kWidth[] = {/*c4-c6 bin*/ 1,    2, 4,
                                       /*c7-c9 ext*/ 1,    2, 4,
                                       /*ca cb float*/ 4,  8,
                                       /*cc-cf uint*/ 1,   2, 4, 8,
                                       /*d0-d3 int*/ 1,    2, 4, 8,
                                       /*d4-d8 fixext*/ 0, 0, 0, 0, 0,
                                       /*d9-db str*/ 1,    2, 4,
                                       /*dc dd array*/ 2,  4,
                                       /*de df map*/ 2,    4};
      if (t == 0xc1) fail(PCM_ERR_ARG, "message is not valid MessagePack");
      const int w = kWidth[t - 0xc4];
      need(static_cast<std::uint64_t>(w));
      const std::uint64_t v = be(p + at, static_cast<std::size_t>(w));
      at += static_cast<std::size_t>(w);
      if (t <= 0xc6)
        skip = v;  // bin
      else if (t <= 0xc9)
        skip = 1 + v;  // ext: type byte + data
      else if (t <= 0xd3)
        skip = 0;  // numbers: read already
      else if (t <= 0xd8)
        skip = 1 + (1u << (t - 0xd4));  // fixext: type byte + 1..16
      else if (t <= 0xdb)
        str = true, skip = v;
      else if (t <= 0xdd)
        container = true, items = v;
      else
        container = true, items = 2 * v;
    }
    if (container) {
      if (open.size() >= max_depth) fail(PCM_ERR_ARG, "message nests deeper than {}", max_depth);
      need(items);  // every item takes at least one byte
      open.push_back(items);
    } else {
      need(skip);
      if (str && !valid_utf8(p + at, static_cast<std::size_t>(skip)))
        fail(PCM_ERR_ARG, "message holds a string that is not UTF-8");
      at += static_cast<std::size_t>(skip);
    }
  }
  if (at != size) fail(PCM_ERR_ARG, "message has {} bytes after its end", size - at);
}

json decode(const void* data, std::size_t size) { return decode_large(data, size, kMaxHeader); }

json decode_large(const void* data, std::size_t size, std::size_t max_size) {
  if (size == 0) fail(PCM_ERR_ARG, "empty message");
  if (size > max_size) fail(PCM_ERR_ARG, "message of {} bytes is too large", size);
  check_msgpack(data, size, kMaxDepth);
  const auto* p = static_cast<const std::uint8_t*>(data);
  json j = json::from_msgpack(p, p + size, /*strict=*/true, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(PCM_ERR_ARG, "message is not valid MessagePack");
  if (!j.is_object()) fail(PCM_ERR_ARG, "message is not a MessagePack map");
  return j;
}

std::optional<std::string> opt_string(const json& m, const char* key, std::size_t max_len) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail(PCM_ERR_ARG, "field \"{}\" must be a string", key);
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max_len) fail(PCM_ERR_ARG, "field \"{}\" is longer than {} bytes", key, max_len);
  return s;
}

std::string get_string(const json& m, const char* key, std::size_t max_len) {
  auto s = opt_string(m, key, max_len);
  if (!s) fail(PCM_ERR_ARG, "field \"{}\" is missing", key);
  return *s;
}

std::optional<std::int64_t> opt_int(const json& m, const char* key, std::int64_t lo,
                                    std::int64_t hi) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return std::nullopt;
  std::int64_t v;
  if (it->is_number_unsigned()) {
    auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX))
      fail(PCM_ERR_ARG, "field \"{}\" is out of range", key);
    v = static_cast<std::int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<std::int64_t>();
  } else {
    fail(PCM_ERR_ARG, "field \"{}\" must be an integer", key);
  }
  if (v < lo || v > hi) fail(PCM_ERR_ARG, "field \"{}\" = {} is outside [{}, {}]", key, v, lo, hi);
  return v;
}

std::int64_t get_int(const json& m, const char* key, std::int64_t lo, std::int64_t hi) {
  auto v = opt_int(m, key, lo, hi);
  if (!v) fail(PCM_ERR_ARG, "field \"{}\" is missing", key);
  return *v;
}

bool get_bool(const json& m, const char* key, bool fallback) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail(PCM_ERR_ARG, "field \"{}\" must be a boolean", key);
  return it->get<bool>();
}

namespace {
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}
}  // namespace

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxName || s[0] == '.' || s[0] == '-') return false;
  for (char c : s)
    if (!name_char(c)) return false;
  return true;
}

bool same_secret(std::string_view given, std::string_view ours) {
  if (given.size() != ours.size() || ours.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ ours[i]);
  return diff == 0;
}

bool valid_host(std::string_view s) {
  if (s.empty() || s.size() > kMaxHost || s[0] == '.' || s[0] == '-') return false;
  for (char c : s)
    if (!(name_char(c) && c != '_')) return false;
  return true;
}

std::size_t type_size(int type) {
  switch (type) {
    case PCM_CHAR:
      return sizeof(char);
    case PCM_INT:
      return sizeof(int);
    case PCM_LONG:
      return sizeof(long);
    case PCM_FLOAT:
      return sizeof(float);
    case PCM_DOUBLE:
      return sizeof(double);
    case PCM_LONG_LONG:
      return sizeof(long long);
    case PCM_BYTE:
      return sizeof(unsigned char);
    default:
      return 0;
  }
}

const char* type_name(int type) {
  switch (type) {
    case PCM_CHAR:
      return "char";
    case PCM_INT:
      return "int";
    case PCM_LONG:
      return "long";
    case PCM_FLOAT:
      return "float";
    case PCM_DOUBLE:
      return "double";
    case PCM_LONG_LONG:
      return "long long";
    case PCM_BYTE:
      return "byte";
    default:
      return "unknown";
  }
}

json ok_reply() { return json{{"ok", true}}; }

json error_reply(int code, const std::string& message) {
  return json{{"ok", false}, {"code", code}, {"error", message}};
}

}  // namespace pcm::proto
