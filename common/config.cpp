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

#include "auth.h"
#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

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
  if (auto k = j.find("curve"); k != j.end()) {
    auto key = [&](const char* name) {
      auto it = k->is_object() ? k->find(name) : k->end();
      if (it == k->end() || !it->is_string() || !valid_curve_key(it->get<std::string>()))
        fail(PCM_ERR_CONFIG, "configuration file {}: \"curve\" needs a Z85 key \"{}\"", path, name);
      return it->get<std::string>();
    };
    c.curve = {key("server_public"), key("client_public"), key("client_secret")};
  }
  return c;
}

namespace {

// Writes text to path atomically (a new temporary file, fsync, rename) with mode 0600, creating
// the parent directory (0700) if needed.
void write_private_file(const std::string& path, const std::string& text) {
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path() && !fs::exists(p.parent_path())) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) fail(PCM_ERR_CONFIG, "cannot create {}: {}", p.parent_path().string(), ec.message());
    fs::permissions(p.parent_path(), fs::perms::owner_all, ec);
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());  // ours from an earlier run with this pid; O_EXCL follows no link
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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

std::string mode_text(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

}  // namespace

void write_config(const std::string& path, const Config& config) {
  json j{{"endpoint", config.endpoint}, {"secret", config.secret}, {"pid", config.pid}};
  if (!config.watch.empty()) j["watch"] = config.watch;
  if (config.curve.enabled())
    j["curve"] = {{"server_public", config.curve.server_public},
                  {"client_public", config.curve.public_key},
                  {"client_secret", config.curve.secret_key}};
  write_private_file(path, j.dump(2) + "\n");
}

std::string random_secret() { return random_hex(32); }

std::string server_key_path(const std::string& config_path) { return config_path + ".key"; }

std::string read_server_key(const std::string& config_path) {
  const std::string path = server_key_path(config_path);
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return "";
    fail(PCM_ERR_CONFIG, "cannot read pcmd's key file {}: {}", path, std::strerror(errno));
  }
  check_private_file(path, "pcmd's CURVE key file");
  std::string key;
  std::getline(in, key);
  if (!valid_curve_key(key))
    fail(PCM_ERR_CONFIG,
         "pcmd's key file {} does not hold a Z85 CURVE key. Fix: remove it and {} (pcmd makes "
         "new keys; running jobs must then be restarted)",
         path, config_path);
  return key;
}

void write_server_key(const std::string& config_path, const std::string& secret_key) {
  write_private_file(server_key_path(config_path), secret_key + "\n");
}

void check_private_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(PCM_ERR_CONFIG, "cannot examine {} {}: {}", what, path, std::strerror(errno));
  }
  if (st.st_uid != ::geteuid())
    fail(PCM_ERR_CONFIG,
         "{} {} belongs to user {}, not to this user ({}). Fix: remove it, or use a file of "
         "your own (--config or PCM_CONFIG)",
         what, path, st.st_uid, ::geteuid());
  if (st.st_mode & 077)
    fail(PCM_ERR_CONFIG,
         "{} {} is open to group or others (mode {}): they could read or change its secret. "
         "Fix: chmod 600 {} (and if others may have read it, remove it: pcmd then writes a new "
         "secret)",
         what, path, mode_text(st.st_mode), path);
}

void check_private_dir(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(PCM_ERR_CONFIG, "cannot examine {} {}: {}", what, path, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) fail(PCM_ERR_CONFIG, "{} {} is not a directory", what, path);
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    fail(PCM_ERR_CONFIG,
         "{} {} belongs to user {}, not to this user ({}). Fix: use a directory of your own", what,
         path, st.st_uid, ::geteuid());
  if (st.st_mode & 022)
    fail(PCM_ERR_CONFIG,
         "{} {} is writable by group or others (mode {}): they could replace what pcmd reads "
         "and writes there. Fix: chmod 700 {}, or choose a private directory",
         what, path, mode_text(st.st_mode), path);
}

}  // namespace pcm::common
