// store.h — pcmd's HDF5 store of the data ranks send with PCM_Store, one file per job.
//
// Layout: <root>/jobs/<job>/store.h5, group /rank_<r>, one 1-D dataset per key in the element's
// native HDF5 type, with a "pcm_type" string attribute. Readable with h5dump/h5ls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pcm::detail {

class Store {
 public:
  struct Meta {
    int type = 0;             // a PCM_Datatype value
    std::uint64_t count = 0;  // elements
  };

  // Creates root/jobs if needed. Throws pcm::Error(PCM_ERR_INTERNAL) if it cannot.
  explicit Store(std::filesystem::path root);

  // Replaces (job, rank, key) with count elements of type. Names must satisfy
  // proto::valid_name (checked again here: they become paths). Throws pcm::Error.
  void put(const std::string& job, int rank, const std::string& key, int type, const void* data,
           std::uint64_t count);

  // Type and count of (job, rank, key), or nullopt if nothing is stored there.
  std::optional<Meta> meta(const std::string& job, int rank, const std::string& key) const;

  // Reads (job, rank, key) into out (resized); returns its meta. Throws pcm::Error
  // (PCM_ERR_NOT_FOUND if absent).
  Meta get(const std::string& job, int rank, const std::string& key, std::vector<char>& out) const;

  std::filesystem::path job_file(const std::string& job) const;

  // Keeps the job's current data layout (a MessagePack distribution map, after a split or merge)
  // as the byte dataset /pcm_layout, with a "command" attribute; replaced each time.
  void put_layout(const std::string& job, const std::string& encoded, std::int64_t command);

 private:
  std::filesystem::path root_;
};

}  // namespace pcm::detail
