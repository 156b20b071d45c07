// config.h — the file pcmd writes and clients read to find it: endpoint, secret and, beyond
// loopback, the CURVE keys (JSON, 0600); and the checks that keep it and pcmd's data private.
#pragma once

#include <cstddef>
#include <string>

#include "namespaces.h"

namespace pcm::common {

// The CURVE keys clients use (Z85): pcmd's public key and the clients' key pair, which pcmd's
// ZAP handler checks. All empty: pcmd does not use CURVE.
struct CurveClientKeys {
  std::string server_public;
  std::string public_key;
  std::string secret_key;
  bool enabled() const { return !server_public.empty(); }
};

struct Config {
  std::string endpoint;  // ZeroMQ endpoint, e.g. tcp://127.0.0.1:40123
  std::string secret;    // shared secret every request must carry
  long pid = 0;          // pid of the pcmd that wrote the file
  std::string watch;     // tcp://ADDRESS:PORT every PCM process holds a connection to ("": none)
  CurveClientKeys curve;
};

// $PCM_CONFIG, else $HOME/.pcm/pcmd.conf.
std::string default_config_path();

// Reads and validates a configuration file; throws pcm::Error(PCM_ERR_CONFIG) with the reason.
Config read_config(const std::string& path);

// Writes the file atomically (temporary name, fsync, rename) with mode 0600, creating the parent
// directory (mode 0700) if needed. Throws pcm::Error(PCM_ERR_CONFIG).
void write_config(const std::string& path, const Config& config);

// 32 random bytes, hex encoded.
std::string random_secret();

// pcmd's CURVE secret key, kept beside the configuration (path + ".key", 0600) so that clients,
// which read only the configuration, never hold it. read_server_key returns "" when the file is
// absent; both throw pcm::Error(PCM_ERR_CONFIG).
std::string server_key_path(const std::string& config_path);
std::string read_server_key(const std::string& config_path);
void write_server_key(const std::string& config_path, const std::string& secret_key);

// Private by default. Each throws pcm::Error(PCM_ERR_CONFIG) with the reason and the fix.
// A file (if it exists) must belong to this user and be neither readable nor writable by group
// or others.
void check_private_file(const std::string& path, const std::string& what);
// A directory (if it exists) must belong to this user (or root) and not be writable by group or
// others: another user could otherwise replace what pcmd reads and writes there.
void check_private_dir(const std::string& path, const std::string& what);

}  // namespace pcm::common
