// test_util.h — helpers shared by the unit tests: a temporary directory, the error code of a
// call, and a map described for failure messages.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

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

// A one-way signal from a forked child to its parent: the child tell()s (never blocking), the
// parent wait()s for the first word, or for the child's end (all write ends closed).
class Pipe {
 public:
  Pipe() {
    if (::pipe(fd_) != 0) fd_[0] = fd_[1] = -1;
    if (fd_[1] >= 0) ::fcntl(fd_[1], F_SETFL, O_NONBLOCK);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    for (int fd : fd_)
      if (fd >= 0) ::close(fd);
  }
  void tell() {
    const char c = 1;
    (void)!::write(fd_[1], &c, 1);
  }
  // True if the child told, false if it ended first.
  bool wait() {
    if (fd_[1] >= 0) ::close(fd_[1]);
    fd_[1] = -1;
    char c = 0;
    return ::read(fd_[0], &c, 1) == 1;
  }

 private:
  int fd_[2] = {-1, -1};
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
inline std::string describe(const pcm::common::Distribution& d) {
  std::ostringstream o;
  o << "{units " << d.units() << ", unit_len " << d.unit_len() << ", halo " << d.halo()
    << ", layout " << static_cast<int>(d.layout()) << ", block " << d.block() << ", ranks [";
  for (int r = 0; r < d.size(); ++r) {
    o << (r ? " " : "") << "[";
    for (const pcm::common::Segment& s : d.segments(r))
      o << "(" << s.first << "+" << s.count << ")";
    o << "]";
  }
  o << "]}";
  return o.str();
}
