// protocol.cpp — encoding and validating protocol headers.
#include "protocol.h"

#include "error.h"
#include "pcm_types.h"

namespace pcm::proto {

std::string encode(const json& header) {
  std::string out;
  json::to_msgpack(header, out);
  return out;
}

json decode(const void* data, std::size_t size) {
  if (size == 0) fail(PCM_ERR_ARG, "empty message");
  if (size > kMaxHeader) fail(PCM_ERR_ARG, "message header of {} bytes is too large", size);
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

bool valid_host(std::string_view s) {
  if (s.empty() || s.size() > kMaxHost || s[0] == '.' || s[0] == '-') return false;
  for (char c : s)
    if (!(name_char(c) && c != '_')) return false;
  return true;
}

std::size_t type_size(int type) {
  switch (type) {
    case PCM_CHAR: return sizeof(char);
    case PCM_INT: return sizeof(int);
    case PCM_LONG: return sizeof(long);
    case PCM_FLOAT: return sizeof(float);
    case PCM_DOUBLE: return sizeof(double);
    case PCM_LONG_LONG: return sizeof(long long);
    case PCM_BYTE: return sizeof(unsigned char);
    default: return 0;
  }
}

const char* type_name(int type) {
  switch (type) {
    case PCM_CHAR: return "char";
    case PCM_INT: return "int";
    case PCM_LONG: return "long";
    case PCM_FLOAT: return "float";
    case PCM_DOUBLE: return "double";
    case PCM_LONG_LONG: return "long long";
    case PCM_BYTE: return "byte";
    default: return "unknown";
  }
}

json ok_reply() { return json{{"ok", true}}; }

json error_reply(int code, const std::string& message) {
  return json{{"ok", false}, {"code", code}, {"error", message}};
}

}  // namespace pcm::proto
