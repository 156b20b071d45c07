// config.cpp — reading and atomically writing pcmd's configuration file.
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "error.h"
#include "pcm_types.h"

namespace pcm::detail {

namespace fs = std::filesystem;
using nlohmann::json;

std::string default_config_path() {
  if (const char* env = std::getenv("PCM_CONFIG"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.pcm/pcmd.conf";
}

Config read_config(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    fail(PCM_ERR_CONFIG, "cannot read configuration file {}: {}", path, std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) fail(PCM_ERR_CONFIG, "configuration file {} is not a JSON object", path);
  Config c;
  auto endpoint = j.find("endpoint");
  auto secret = j.find("secret");
  if (endpoint == j.end() || !endpoint->is_string() || endpoint->get<std::string>().empty())
    fail(PCM_ERR_CONFIG, "configuration file {} has no \"endpoint\" string", path);
  if (secret == j.end() || !secret->is_string() || secret->get<std::string>().empty())
    fail(PCM_ERR_CONFIG, "configuration file {} has no \"secret\" string", path);
  c.endpoint = endpoint->get<std::string>();
  c.secret = secret->get<std::string>();
  if (auto pid = j.find("pid"); pid != j.end() && pid->is_number_integer())
    c.pid = pid->get<long>();
  if (auto w = j.find("watch"); w != j.end() && w->is_string()) c.watch = w->get<std::string>();
  return c;
}

void write_config(const std::string& path, const Config& config) {
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path() && !fs::exists(p.parent_path())) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) fail(PCM_ERR_CONFIG, "cannot create {}: {}", p.parent_path().string(), ec.message());
    fs::permissions(p.parent_path(), fs::perms::owner_all, ec);
  }
  json j{{"endpoint", config.endpoint}, {"secret", config.secret}, {"pid", config.pid}};
  if (!config.watch.empty()) j["watch"] = config.watch;
  std::string text = j.dump(2) + "\n";
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail(PCM_ERR_CONFIG, "cannot create {}: {}", tmp, std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) saved = errno;
    ::unlink(tmp.c_str());
    fail(PCM_ERR_CONFIG, "cannot write {}: {}", path, std::strerror(saved));
  }
}

std::string random_hex(std::size_t n) {
  std::vector<unsigned char> bytes(n);
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::read(fd, bytes.data(), n) != static_cast<ssize_t>(n)) {
    if (fd >= 0) ::close(fd);
    fail(PCM_ERR_INTERNAL, "cannot read /dev/urandom");
  }
  ::close(fd);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char b : bytes) {
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

std::string random_secret() { return random_hex(32); }

}  // namespace pcm::detail
