// settings.cpp — reading libpcm's PCM_* environment variables (see settings.h).
#include "settings.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "error.h"
#include "ops.h"
#include "pcm_types.h"
#include "stop_signals.h"

namespace pcm::lib {

namespace {

// An integer setting: fallback when unset; throws PCM_ERR_ARG when it is not a number in [lo, hi].
long env_long(const char* name, long fallback, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < lo || x > hi)
    fail(PCM_ERR_ARG, "{}={} is not a number in [{}, {}]", name, v, lo, hi);
  return x;
}

}  // namespace

Settings Settings::from_env() {
  Settings s;
  s.connect_timeout_ms = static_cast<int>(env_long("PCM_CONNECT_TIMEOUT_MS", 5000, 1, 3600000));
  s.data_timeout_ms = static_cast<int>(env_long("PCM_DATA_TIMEOUT_MS", 600000, 1, 86400000));
  s.reconnect_ms = static_cast<int>(env_long("PCM_RECONNECT_MS", 60000, 0, 86400000));
  s.poll_interval_ms = env_long("PCM_POLL_MS", 50, 1, 3600000);
  s.status_window_us = static_cast<double>(env_long("PCM_STATUS_WINDOW_US", 1000, 0, 1000000));
  s.split_cma = env_long("PCM_SPLIT_CMA", 1, 0, 1) == 1;
  env_long("PCM_OVERLAP", 0, 0, 1);  // used before MPI_Init (overlap_requested); checked here
  s.checkpoint_direct = env_long("PCM_CHECKPOINT_DIRECT", 1, 0, 1) == 1;
  s.write_direct = env_long("PCM_WRITE_DIRECT", 0, 0, 1) == 1;
  s.store_async = env_long("PCM_STORE_ASYNC", 0, 0, 1) == 1;
  s.checkpoint_async = env_long("PCM_CHECKPOINT_ASYNC", 1, 0, 1) == 1;
  if (const char* d = std::getenv("PCM_CHECKPOINT_LOCAL_DIR"); d && *d) {
    s.checkpoint_local_dir = d;
    if (d[0] != '/' || s.checkpoint_local_dir.size() > 3000)
      fail(PCM_ERR_ARG, "PCM_CHECKPOINT_LOCAL_DIR={} is not an absolute path", d);
    while (s.checkpoint_local_dir.size() > 1 && s.checkpoint_local_dir.back() == '/')
      s.checkpoint_local_dir.pop_back();
  }
  s.checkpoint_flush_every = env_long("PCM_CHECKPOINT_FLUSH_EVERY", 4, 1, 1000000);
  s.checkpoint_partner = static_cast<int>(env_long("PCM_CHECKPOINT_PARTNER", -1, 0, 1));
  if (const char* h = std::getenv("PCM_TEST_SHARD_HOLD")) {
    const std::string text = h;
    const auto colon = text.find(':');
    long it = -1;
    int rank = -1;
    if (colon != std::string::npos &&
        std::sscanf(text.c_str() + colon + 1, "%ld:%d", &it, &rank) == 2) {
      s.test_hold_file = text.substr(0, colon);
      s.test_hold_iteration = it;
      s.test_hold_rank = rank;
    }
  }
  if (const char* f = std::getenv("PCM_TEST_SHARD_FAIL")) {
    long it = -1;
    int rank = -1;
    if (std::sscanf(f, "%ld:%d", &it, &rank) == 2) {
      s.test_fail_iteration = it;
      s.test_fail_rank = rank;
    }
  }
  s.profile_ms = env_long("PCM_PROFILE_MS", 2000, 0, 86400000);
  s.retire_leave = static_cast<int>(env_long("PCM_RETIRE_LEAVE", -1, -1, 1));
  s.max_parked = static_cast<int>(env_long("PCM_MAX_PARKED", 0, 0, 1 << 20));
  s.checkpoint_mtbf_s = env_long("PCM_CHECKPOINT_MTBF", 0, 0, 1000000000);
  s.reconfig_timeout_s = static_cast<int>(env_long("PCM_RECONFIG_TIMEOUT_S", 300, 0, 1000000000));
  if (const char* name = std::getenv("PCM_JOB")) s.job = name;
  if (const char* r = std::getenv("PCM_RESTART")) s.restart = std::string(r) == "1";
  if (const char* p = std::getenv("PCM_PLACEMENT")) s.placement = p;
  if (const char* m = std::getenv("PCM_RESHAPE"); m && *m) {
    s.reshape = m;
    if (!ops::valid_reshape(s.reshape))
      fail(PCM_ERR_ARG, "PCM_RESHAPE={} is not spawn, restart or auto", m);
  }
  s.reshaped_command = env_long("PCM_RESHAPED_COMMAND", 0, 0, LONG_MAX);
  s.supervised = env_long("PCM_SUPERVISED", 0, 0, 1) == 1;
  if (const char* l = std::getenv("PCM_LAUNCHER"); l && *l) {
    s.launcher = l;
    if (s.launcher != "srun") fail(PCM_ERR_ARG, "PCM_LAUNCHER={} is not srun", l);
  }
  const char* stop = std::getenv("PCM_STOP_SIGNALS");
  s.stop_signals = parse_stop_signals(stop ? stop : "TERM,USR1,USR2");
  return s;
}

std::string Settings::site() {
  const char* site = std::getenv("PCM_SITE");
  return site ? site : "";
}

bool Settings::hugepages() {
  static const bool huge = env_long("PCM_HUGEPAGES", 1, 0, 1) == 1;
  return huge;
}

bool Settings::overlap_requested() {
  const char* v = std::getenv("PCM_OVERLAP");
  return v && std::string(v) == "1";
}

}  // namespace pcm::lib
