// protocol.cpp — encoding and validating protocol headers.
#include "protocol.h"

#include <algorithm>
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

// The length of the valid UTF-8 character at p (n > 0 bytes available), 0 if there is none there
// (overlong forms, surrogates and code points above U+10FFFF are not valid); *cp: its code point.
std::size_t utf8_char(const std::uint8_t* p, std::size_t n, std::uint32_t* cp_out) {
  const std::uint8_t c = p[0];
  std::size_t len;
  std::uint32_t cp;
  if (c < 0x80) {
    *cp_out = c;
    return 1;
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
    return 0;
  }
  if (n < len) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((p[k] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3f);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *cp_out = cp;
  return len;
}

// Whether bytes [p, p + n) are valid UTF-8.
bool valid_utf8(const std::uint8_t* p, std::size_t n) {
  std::uint32_t cp;
  for (std::size_t i = 0; i < n;) {
    const std::size_t len = utf8_char(p + i, n - i, &cp);
    if (len == 0) return false;
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

bool valid_utf8(std::string_view s) {
  return valid_utf8(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::string clean_text(std::string_view s, std::size_t max_bytes) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  std::uint32_t cp;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_char(p + i, s.size() - i, &cp);
    const std::string piece = len ? std::string(s.substr(i, len)) : fmt::format("\\x{:02x}", p[i]);
    if (out.size() + piece.size() > max_bytes) {
      // Too long: cut whole characters until "..." fits.
      while (!out.empty() && out.size() + 3 > max_bytes) {
        while (out.size() > 1 && (static_cast<std::uint8_t>(out.back()) & 0xc0) == 0x80)
          out.pop_back();
        out.pop_back();
      }
      if (max_bytes >= 3) out += "...";
      return out;
    }
    out += piece;
    i += len ? len : 1;
  }
  return out;
}

std::string printable(std::string_view s, std::size_t max_bytes) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 16);
  std::uint32_t cp;
  for (std::size_t i = 0; i < s.size();) {
    if (i >= max_bytes) {
      out += fmt::format("...({} bytes)", s.size());
      break;
    }
    const std::uint8_t c = p[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      std::size_t len = c < 0x80 ? 0 : utf8_char(p + i, s.size() - i, &cp);
      // C1 controls and the Unicode line and paragraph separators break lines for some readers.
      if (len > 0 && !(cp <= 0x9f || cp == 0x2028 || cp == 0x2029)) {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
      if (len == 0) len = 1;
      for (std::size_t k = 0; k < len; ++k) out += fmt::format("\\x{:02x}", p[i + k]);
      i += len;
      continue;
    }
    ++i;
  }
  return out;
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
  // Messages quote what requests, files and the system said: a reply must stay valid UTF-8.
  return json{{"ok", false}, {"code", code}, {"error", clean_text(message)}};
}

}  // namespace pcm::proto
