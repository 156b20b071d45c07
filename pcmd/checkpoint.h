// checkpoint.h — pcmd's durable, versioned global checkpoints: one HDF5 file and one manifest
// per committed version, each written crash-safely, verified by checksums before use.
//
// Layout: <root>/checkpoints/<job>/v<iteration, 20 digits>.h5 and .manifest.json. A version is
// written as: temporary file, close, fsync, rename, fsync of the directory; then its manifest the
// same way. A version exists only once its manifest does. A file is opened with HDF5 only after
// its whole-file CRC-32 matched the manifest, so a corrupt file never reaches HDF5 (which can hang
// on some corrupt files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store.h"

namespace pcm::detail {

struct DatasetInfo {
  std::string path;  // /rank_R/key
  int type = 0;      // PCM_Datatype
  std::uint64_t count = 0;
  std::uint32_t crc = 0;  // CRC-32 of the data
};

struct Manifest {
  std::string job;
  std::int64_t iteration = 0;
  int nprocs = 0;
  nlohmann::json layout;  // the distribution map, or null
  std::uint64_t file_size = 0;
  std::uint32_t file_crc = 0;
  std::vector<DatasetInfo> datasets;

  nlohmann::json to_json() const;
  static Manifest from_json(const nlohmann::json& j);  // throws pcm::Error(PCM_ERR_ARG)
};

struct VersionStatus {
  std::int64_t iteration = 0;
  bool valid = false;
  std::string why;  // when not valid
  std::uint64_t bytes = 0;
  int nprocs = 0;
};

class Checkpoints {
 public:
  explicit Checkpoints(std::filesystem::path root);

  // Makes version `iteration` of job from the rank groups 0..nprocs-1 of store's file for the
  // job (every rank must have stored something). Throws pcm::Error; on failure (a full disk,
  // a crash) no version appears and earlier versions are untouched.
  Manifest commit(const Store& store, const std::string& job, std::int64_t iteration, int nprocs,
                  const nlohmann::json& layout);

  // Every version found, newest first, each verified (manifest, size, checksums).
  std::vector<VersionStatus> list(const std::string& job) const;
  VersionStatus verify(const std::string& job, std::int64_t iteration) const;
  // The newest version that verifies.
  std::optional<Manifest> latest_valid(const std::string& job) const;

  // Removes all but the `keep` newest versions (keep >= 1), never the newest valid one; returns
  // the iterations removed. Manifests go first, so a crash while pruning leaves no half version
  // that could be mistaken for a whole one.
  // known_valid: a version the caller knows is valid (the one it just committed), which is
  // then not read again.
  std::vector<std::int64_t> prune(const std::string& job, std::size_t keep,
                                  std::optional<std::int64_t> known_valid = std::nullopt);

  // Reads one dataset of a version that verified (the whole file is not checked again; the
  // dataset's checksum is). Throws pcm::Error (PCM_ERR_NOT_FOUND).
  Store::Meta read(const Manifest& m, int rank, const std::string& key,
                   std::vector<char>& out) const;

  std::filesystem::path version_file(const std::string& job, std::int64_t iteration) const;
  std::filesystem::path manifest_file(const std::string& job, std::int64_t iteration) const;

 private:
  // Iterations with a data file or a manifest, newest first; nothing is read.
  std::vector<std::int64_t> iterations(const std::string& job) const;
  // The newest version that verifies, verifying newest first and stopping there.
  std::optional<std::int64_t> newest_valid(const std::string& job,
                                           std::optional<std::int64_t> known) const;
  std::optional<Manifest> load_manifest(const std::string& job, std::int64_t iteration,
                                        std::string* why) const;
  std::filesystem::path root_;
};

}  // namespace pcm::detail
