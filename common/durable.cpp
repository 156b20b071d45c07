// durable.cpp — files that survive a crash (see durable.h): pcmd's checkpoints and job table
// (journal.cpp), and libpcm's node-local checkpoint levels (checkpoint_levels.cpp).
#include "durable.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

namespace fs = std::filesystem;

void fsync_path(const fs::path& p, bool directory) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0)
    fail(PCM_ERR_INTERNAL, "cannot open {} to fsync it: {}", p.string(), std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail(PCM_ERR_INTERNAL, "fsync of {} failed: {}", p.string(), std::strerror(err));
}

namespace {

// Writes a new file (and fsyncs it if sync); on failure it is removed.
void write_file(const fs::path& path, const void* data, std::size_t size, bool sync) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail(PCM_ERR_INTERNAL, "cannot create {}: {}", path.string(), std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    ssize_t w = ::write(fd, p + done, size - done);
    if (w <= 0) {
      int err = w < 0 ? errno : ENOSPC;
      if (err == EINTR) continue;
      ::close(fd);
      ::unlink(path.c_str());
      fail(PCM_ERR_INTERNAL, "cannot write {}: {}", path.string(), std::strerror(err));
    }
    done += static_cast<std::size_t>(w);
  }
  if ((sync && ::fsync(fd) != 0) || ::close(fd) != 0) {
    int err = errno;
    ::unlink(path.c_str());
    fail(PCM_ERR_INTERNAL, "cannot sync {}: {}", path.string(), std::strerror(err));
  }
}

void rename_into(const fs::path& tmp, const fs::path& final_path) {
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(PCM_ERR_INTERNAL, "cannot rename {}: {}", tmp.string(), std::strerror(err));
  }
}

}  // namespace

void write_synced(const fs::path& path, const void* data, std::size_t size) {
  write_file(path, data, size, true);
}

void write_replaced(const fs::path& final_path, const std::string& content) {
  const fs::path tmp = final_path.string() + ".tmp";
  write_file(tmp, content.data(), content.size(), false);
  rename_into(tmp, final_path);
}

// Temporary file, fsync, rename, fsync of the directory.
void write_atomically(const fs::path& final_path, const void* data, std::size_t size) {
  const fs::path tmp = final_path.string() + ".tmp";
  write_synced(tmp, data, size);
  rename_into(tmp, final_path);
  fsync_path(final_path.parent_path(), true);
}

void write_atomically(const fs::path& final_path, const std::string& content) {
  write_atomically(final_path, content.data(), content.size());
}

}  // namespace pcm::common
