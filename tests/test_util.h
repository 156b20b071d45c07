// test_util.h — helpers shared by the unit tests: a temporary directory, and the error code of a
// call.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <string>

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
