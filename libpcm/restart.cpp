// restart.cpp — PCM_Store and PCM_Load (written and read here where this process sees pcmd's
// data directory: direct_store.h; else through pcmd), the commit of a checkpoint version, and
// what a restarted process reads from the version it resumes from.
#include <climits>
#include <cstring>

#include "error.h"
#include "ops.h"
#include "protocol.h"
#include "runtime.h"

namespace pcm::detail {

using proto::json;

namespace {
void check_entry(int rank, const char* key) {
  if (!key) fail(PCM_ERR_ARG, "key is NULL");
  if (!proto::valid_name(key))
    fail(PCM_ERR_ARG, "key '{}' is invalid (1-{} of A-Z a-z 0-9 . _ -)", key, proto::kMaxName);
  if (rank < 0) fail(PCM_ERR_ARG, "rank {} is negative", rank);
}

// Checks the arguments of a store or load; returns the element size.
std::size_t check_data(int rank, const char* key, const void* buf, int type, long count) {
  check_entry(rank, key);
  std::size_t elem = proto::type_size(type);
  if (elem == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
  if (count < 0) fail(PCM_ERR_ARG, "count {} is negative", count);
  if (count > 0 && !buf) fail(PCM_ERR_ARG, "buf is NULL");
  return elem;
}

// A load's buffer must be what was stored.
void check_loaded(int rank, const char* key, int stored_type, std::int64_t stored_count, int type,
                  long count) {
  if (stored_type != type)
    fail(PCM_ERR_TYPE, "rank {} key '{}' holds {}, not {}", rank, key,
         proto::type_name(stored_type), proto::type_name(type));
  if (stored_count != count)
    fail(PCM_ERR_COUNT, "rank {} key '{}' holds {} elements, not {}", rank, key, stored_count,
         count);
}
}  // namespace

int Runtime::store(int rank, const char* key, const void* buf, int type, long count) {
  if (phase_ != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  std::size_t bytes = static_cast<std::size_t>(count) * check_data(rank, key, buf, type, count);
  if (direct_store_.store(link_, settings_, job_, rank, key, buf, type,
                          static_cast<std::uint64_t>(count)))
    return PCM_SUCCESS;  // written here, recorded by pcmd
  link_.request(ops::request(ops::Store{job_, rank, key, type, count}), count > 0 ? buf : "", bytes,
                settings_.data_timeout_ms);
  return PCM_SUCCESS;
}

int Runtime::load_count(int rank, const char* key, int* type, long* count) {
  if (phase_ != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  check_entry(rank, key);
  std::optional<ShardRecord> rec;
  if (restart_.reading) {
    auto v = direct_store_.in_version(link_, settings_, job_, restart_.iteration, rank, key);
    if (v) rec = std::move(v->second);
  } else {
    rec = direct_store_.find(link_, settings_, job_, rank, key);
  }
  if (rec) {
    if (type) *type = rec->datasets[0].type;
    if (count) *count = static_cast<long>(rec->datasets[0].count);
    return PCM_SUCCESS;
  }
  ops::Load req{job_, rank, key, true, std::nullopt};
  if (restart_.reading) req.version = restart_.iteration;
  auto r = link_.request(ops::request(req), nullptr, 0, settings_.data_timeout_ms);
  if (type) *type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  if (count) *count = static_cast<long>(proto::get_int(r.header, "count", 0, LONG_MAX));
  return PCM_SUCCESS;
}

int Runtime::load(int rank, const char* key, void* buf, int type, long count) {
  if (phase_ != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  std::size_t elem = check_data(rank, key, buf, type, count);
  if (restart_.reading) {
    // The version's shard straight from its file, where this process sees it.
    if (auto v = direct_store_.in_version(link_, settings_, job_, restart_.iteration, rank, key)) {
      const ShardDataset& d = v->second.datasets[0];
      check_loaded(rank, key, d.type, static_cast<std::int64_t>(d.count), type, count);
      ShardReader(v->first, v->second).read(d, 0, d.bytes(), buf);
      return PCM_SUCCESS;
    }
  } else if (auto rec = direct_store_.find(link_, settings_, job_, rank, key)) {
    const ShardDataset& d = rec->datasets[0];
    check_loaded(rank, key, d.type, static_cast<std::int64_t>(d.count), type, count);
    if (direct_store_.read(*rec, buf)) return PCM_SUCCESS;  // else replaced meanwhile: pcmd
  }
  ops::Load req{job_, rank, key, false, std::nullopt};
  if (restart_.reading) req.version = restart_.iteration;
  auto r = link_.request(ops::request(req), nullptr, 0, settings_.data_timeout_ms);
  int stored_type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  auto stored_count = proto::get_int(r.header, "count", 0, INT64_MAX);
  check_loaded(rank, key, stored_type, stored_count, type, count);
  if (r.data.size() != static_cast<std::size_t>(count) * elem)
    fail(PCM_ERR_INTERNAL, "pcmd sent {} bytes for {} elements", r.data.size(), count);
  if (count > 0) std::memcpy(buf, r.data.data(), r.data.size());
  return PCM_SUCCESS;
}

int Runtime::commit(MPI_Comm comm, int iteration) {
  require_world(comm);
  int code = iteration < 0 ? PCM_ERR_ARG : PCM_SUCCESS;
  std::string msg = code ? fmt::format("iteration {} is negative", iteration) : "";
  // Every rank's stores have returned once all are here; then rank 0 asks pcmd to commit.
  agree(world_.comm(), code, msg);
  agreed(world_.comm(), [&] {
    if (world_.rank() == 0)
      link_.request(ops::request(ops::Commit{job_, iteration, world_.size(), false}), nullptr, 0,
                    settings_.data_timeout_ms);
  });
  return PCM_SUCCESS;
}

int Runtime::load_redistribute(const char* key, int type, const Distribution& from,
                               const Distribution& to, int rank, void* buf) {
  if (!restart_.reading)
    fail(PCM_ERR_STATE, "only a restarted process, before its first PCM_Status, reads a version");
  if (rank < 0 || rank >= to.size()) fail(PCM_ERR_ARG, "rank {} is not in the map", rank);
  const std::size_t elem = proto::type_size(type);
  if (elem == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
  if (!buf && to.local_elements(rank) > 0) fail(PCM_ERR_ARG, "buf is NULL");
  // Each old rank that owns some of this rank's units is read once, whole, then cut up.
  std::vector<Transfer> mine;
  for (const Transfer& t : plan(from, to))
    if (t.to == rank) mine.push_back(t);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const Transfer& a, const Transfer& b) { return a.from < b.from; });
  std::vector<char> part;
  int loaded = -1;
  const std::size_t unit_bytes = elem * static_cast<std::size_t>(from.unit_len());
  for (const Transfer& t : mine) {
    if (t.from != loaded) {
      long count = static_cast<long>(from.local_elements(t.from));
      part.resize(static_cast<std::size_t>(count) * elem);
      load(t.from, key, part.data(), type, count);
      loaded = t.from;
    }
    std::memcpy(static_cast<char*>(buf) + to.unit_offset(t.first, nullptr) * elem,
                part.data() + from.unit_offset(t.first, nullptr) * elem,
                static_cast<std::size_t>(t.count) * unit_bytes);
  }
  return PCM_SUCCESS;
}

}  // namespace pcm::detail
