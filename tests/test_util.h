// test_util.h — helpers shared by the unit tests: a temporary directory, the error code of a
// call, and a map described for failure messages.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

#include "distribution.h"
#include "error.h"
#include "pcm_types.h"

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pcm-test.XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The pcm::Error code that f throws, or PCM_SUCCESS.
inline int code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const pcm::Error& e) {
    return e.code();
  }
  return PCM_SUCCESS;
}

// A compact description of a map, for failure messages.
inline std::string describe(const pcm::detail::Distribution& d) {
  std::ostringstream o;
  o << "{units " << d.units() << ", unit_len " << d.unit_len() << ", halo " << d.halo()
    << ", layout " << static_cast<int>(d.layout()) << ", block " << d.block() << ", ranks [";
  for (int r = 0; r < d.size(); ++r) {
    o << (r ? " " : "") << "[";
    for (const pcm::detail::Segment& s : d.segments(r))
      o << "(" << s.first << "+" << s.count << ")";
    o << "]";
  }
  o << "]}";
  return o.str();
}
