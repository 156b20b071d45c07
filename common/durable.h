// durable.h — files that survive a crash: written whole, fsynced, and renamed into place.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "namespaces.h"

namespace pcm::common {

// fsync of a file or (directory = true) a directory. Throws pcm::Error(PCM_ERR_INTERNAL).
void fsync_path(const std::filesystem::path& p, bool directory);

// Writes a new file (mode 0600) and fsyncs it; on failure it is removed. Throws pcm::Error.
void write_synced(const std::filesystem::path& path, const void* data, std::size_t size);

// Temporary file (PATH.tmp), fsync, rename, fsync of the directory: afterwards the file holds
// either its old content or all of the new one, whatever crashes when. Throws pcm::Error.
void write_atomically(const std::filesystem::path& final_path, const std::string& content);
void write_atomically(const std::filesystem::path& final_path, const void* data, std::size_t size);

// Temporary file (PATH.tmp) and rename, without fsync: afterwards the file holds its old content
// or all of the new one whenever pcmd itself dies (the kernel keeps what was written), but a crash
// of the machine may lose the change. Throws pcm::Error.
void write_replaced(const std::filesystem::path& final_path, const std::string& content);

}  // namespace pcm::common
