// checkpoint_files.h — names and helpers both checkpoint formats' files use (checkpoint.cpp,
// checkpoint_shards.cpp); internal to pcmd's checkpoints.
#pragma once

#include <filesystem>
#include <regex>
#include <string>

namespace pcm::daemon::ckpt {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kBadName = "BAD";  // a version marked damaged
// A version a restart could not read all of (a shard only on hosts that were lost): skipped
// until the next restart of the job looks again.
inline constexpr const char* kUnreachableName = "UNREACHABLE";
inline constexpr const char* kTokenName = ".pcm-token";     // a shard directory's owner
inline constexpr const char* kRecordsName = "records.log";  // shard records kept (keep_record)

// 128 random bits in hex.
std::string random_token();
// Removes the entries of dir whose names match pattern.
void remove_matching(const std::filesystem::path& dir, const std::regex& pattern);

}  // namespace pcm::daemon::ckpt
