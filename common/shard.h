// shard.h — one rank's part of a checkpoint version: an HDF5 file the rank writes itself, straight
// from its buffers, with an XXH3-64 checksum per fixed-size chunk of every dataset computed from
// memory on the way (never by reading the file back); and the verified reads a restart makes.
//
// File: r<rank>.h5 in the version's directory. Root attributes pcm_format ("pcm-shard-1"), job,
// iteration, rank, nprocs. One 1-D contiguous dataset per key under /data (native type, a
// "pcm_type" attribute, no filters, no fill, aligned), readable with h5dump. What the checksums
// are, and where each dataset's bytes start in the file, is in the record (ShardRecord) that
// pcmd writes into the version's manifest.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "namespaces.h"

namespace pcm::common {

// Bytes per checksummed chunk of a dataset (the last chunk may be shorter).
constexpr std::uint64_t kShardChunk = 1 << 20;

// One dataset of a shard, as the manifest records it.
struct ShardDataset {
  std::string key;
  int type = 0;              // PCM_Datatype
  std::uint64_t count = 0;   // elements
  std::uint64_t offset = 0;  // byte offset of the data in the file (0 and unused when count is 0)
  std::vector<std::uint64_t> xxh3;  // one per kShardChunk bytes of data, in order
  // A key PCM_Store wrote itself lives in a file of its own (staged_file_name), linked into the
  // version: its name and size. Empty: the dataset is in its record's file.
  std::string file;
  std::uint64_t file_size = 0;

  std::uint64_t bytes() const;
};

// One rank's shard, as the manifest records it.
struct ShardRecord {
  int rank = 0;
  std::string file;  // name inside the version directory; empty: every dataset has its own file
  std::uint64_t size = 0;
  std::vector<ShardDataset> datasets;

  const ShardDataset* find(const std::string& key) const;
  // The record of the one file that holds d (this one, or d's own file).
  ShardRecord holding(const ShardDataset& d) const;
  // Every file the record names, with its size.
  std::vector<std::pair<std::string, std::uint64_t>> files() const;
  nlohmann::json to_json() const;
  // Checks what a file name, sizes and offsets can be checked for; throws pcm::Error(PCM_ERR_ARG).
  static ShardRecord from_json(const nlohmann::json& j);
};

// What a rank puts into its shard: count elements of type, gathered from pieces of memory in
// order (one piece for a plain buffer; the owned segments of a buffer with halos).
struct ShardItem {
  struct Piece {
    const void* data = nullptr;
    std::uint64_t bytes = 0;
  };
  std::string key;
  int type = 0;
  std::uint64_t count = 0;
  std::vector<Piece> pieces;  // their bytes add up to count * type size
};

struct ShardHeader {
  std::string job;
  std::int64_t iteration = 0;
  int rank = 0;
  int nprocs = 0;
};

std::string shard_file_name(int rank);

// Bytes free to this user on the file system holding path (or its nearest existing parent);
// UINT64_MAX when that cannot be asked.
std::uint64_t free_bytes(const std::string& path);
// Whether this process sees pcmd's directory dir (and not one of the same name on another host):
// its token file holds token.
bool holds_token(const std::string& dir, const std::string& token);
// The file of one key that PCM_Store wrote itself: s<rank>.<key>.<16 hex digits>.h5 (tag: the
// hex digits, new for every store), and whether name is such a file of (rank, key).
std::string staged_file_name(int rank, const std::string& key, const std::string& tag);
bool is_staged_file_name(const std::string& name, int rank, const std::string& key);

// How write_shard writes the data. kDirect: whole blocks with O_DIRECT, past the page cache,
// where the file system takes it (else as kBuffered): steadier and faster where the page cache's
// new pages are dear (on this project's VMs, two writers of 128 MiB each took 0.13 s with O_DIRECT
// against 0.13-0.49 s buffered, `dd conv=fsync` of the 256 MiB 0.16-0.40 s), but a read of the
// file soon after comes from the disk, not from memory.
enum class ShardIo { kBuffered, kDirect };

// Writes the shard into dir/<file> (default shard_file_name(rank); it must not exist), fsyncs
// it (unless !sync: a version the next run reads at once, whose loss in a crash before the
// page cache is written back costs only a fallback to the version before it, as any damaged
// version does), and returns its record. Throws pcm::Error (PCM_ERR_INTERNAL with the system's
// reason: a full disk, a missing directory); the partial file is removed.
ShardRecord write_shard(const std::string& dir, const ShardHeader& header,
                        const std::vector<ShardItem>& items, const std::string& file = "",
                        bool sync = true, ShardIo io = ShardIo::kBuffered);
// The same shard built in memory, for a rank that cannot see the version directory: the bytes
// of the file (sent through pcmd), and its record.
ShardRecord image_shard(const ShardHeader& header, const std::vector<ShardItem>& items,
                        std::vector<char>& image);

// Reads from one shard file, verifying every chunk it touches against the record (a chunk read
// once stays cached while the next reads fall into it).
class ShardReader {
 public:
  // Opens path and checks its size against the record. Throws pcm::Error: PCM_ERR_NOT_FOUND
  // (missing), PCM_ERR_CORRUPT (size differs).
  ShardReader(const std::string& path, const ShardRecord& record);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // Copies bytes [first, first + n) of dataset d's data to out. Throws pcm::Error
  // (PCM_ERR_CORRUPT naming the file, dataset and chunk whose checksum does not match).
  void read(const ShardDataset& d, std::uint64_t first, std::uint64_t n, void* out);
  const ShardRecord& record() const { return record_; }

 private:
  void read_chunks(const ShardDataset& d, std::uint64_t chunk, std::uint64_t nchunks, char* out);
  std::string path_;
  ShardRecord record_;
  int fd_ = -1;
  // The last partial chunk read: dataset key, chunk index and bytes.
  std::string cached_key_;
  std::uint64_t cached_chunk_ = UINT64_MAX;
  std::vector<char> cached_;
};

// XXH3-64 of each kShardChunk bytes of data (exposed for tests and pcmd's scrub).
std::vector<std::uint64_t> chunk_hashes(const void* data, std::uint64_t bytes);

}  // namespace pcm::common
