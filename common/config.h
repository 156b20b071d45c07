// config.h — the file pcmd writes and clients read to find it: endpoint and secret (JSON, 0600).
#pragma once

#include <cstddef>
#include <string>

namespace pcm::detail {

struct Config {
  std::string endpoint;  // ZeroMQ endpoint, e.g. tcp://127.0.0.1:40123
  std::string secret;    // shared secret every request must carry
  long pid = 0;          // pid of the pcmd that wrote the file
  std::string watch;     // tcp://ADDRESS:PORT every PCM process holds a connection to ("": none)
};

// $PCM_CONFIG, else $HOME/.pcm/pcmd.conf.
std::string default_config_path();

// Reads and validates a configuration file; throws pcm::Error(PCM_ERR_CONFIG) with the reason.
Config read_config(const std::string& path);

// Writes the file atomically (temporary name, fsync, rename) with mode 0600, creating the parent
// directory (mode 0700) if needed. Throws pcm::Error(PCM_ERR_CONFIG).
void write_config(const std::string& path, const Config& config);

// 32 random bytes from /dev/urandom, hex encoded.
std::string random_secret();
// n random bytes from /dev/urandom, hex encoded.
std::string random_hex(std::size_t n);

}  // namespace pcm::detail
