// store_direct.cpp — the keys ranks store themselves: their direct-store directory, the records
// that make a direct file the key's data, and the listing a commit links into a version; the
// events of a commit made behind the job (PCM_STORE_ASYNC), kept for a pcmd that restarts
// (store.h).
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "durable.h"
#include "error.h"
#include "h5.h"
#include "pcm_types.h"
#include "protocol.h"
#include "storage/checkpoint_files.h"
#include "storage/store.h"

namespace pcm::daemon {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string record_name(int rank, const std::string& key) {
  return fmt::format("r{}.{}.json", rank, key);
}

void check(const std::string& job, int rank, const std::string& key) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  if (!proto::valid_name(key)) fail(PCM_ERR_ARG, "invalid key '{}'", key);
  if (rank < 0) fail(PCM_ERR_ARG, "invalid rank {}", rank);
}

std::optional<ShardRecord> read_record(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) fail(PCM_ERR_INTERNAL, "direct record {} is not JSON", path.string());
  return ShardRecord::from_json(j);
}

}  // namespace

Store::DirectDir Store::direct_dir(const std::string& job) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  const fs::path dir = root_ / "jobs" / job / "stage";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot create {}: {}", dir.string(), ec.message());
  ::chmod(dir.c_str(), 0700);
  DirectDir out{fs::absolute(dir, ec), ""};
  // The token stays while the directory does: ranks that checked it once need not again.
  const fs::path token = dir / ckpt::kTokenName;
  std::ifstream in(token);
  if (!in || !std::getline(in, out.token) || out.token.empty()) {
    out.token = ckpt::random_token();
    write_atomically(token, out.token + "\n");
  }
  return out;
}

std::optional<ShardRecord> Store::direct_record(const std::string& job, int rank,
                                                const std::string& key) const {
  check(job, rank, key);
  return read_record(root_ / "jobs" / job / "stage" / record_name(rank, key));
}

std::map<int, std::vector<ShardRecord>> Store::direct_of(const std::string& job) const {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  std::map<int, std::vector<ShardRecord>> out;
  const fs::path dir = root_ / "jobs" / job / "stage";
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (name.size() < 6 || name[0] != 'r' || name.compare(name.size() - 5, 5, ".json") != 0)
      continue;
    auto rec = read_record(it->path());
    // Only a record under its own name counts (a leftover .tmp of an atomic write does not).
    if (!rec || rec->datasets.size() != 1 || name != record_name(rec->rank, rec->datasets[0].key))
      continue;
    out[rec->rank].push_back(std::move(*rec));
  }
  return out;
}

void Store::put_direct(const std::string& job, int rank, const std::string& key,
                       const ShardRecord& rec) {
  check(job, rank, key);
  if (rec.rank != rank || !rec.file.empty() || rec.datasets.size() != 1 ||
      rec.datasets[0].key != key || !is_staged_file_name(rec.datasets[0].file, rank, key))
    fail(PCM_ERR_ARG, "the record of a direct store of rank {} key '{}' does not describe one",
         rank, key);
  const fs::path dir = root_ / "jobs" / job / "stage";
  const ShardDataset& d = rec.datasets[0];
  std::error_code ec;
  const auto size = fs::file_size(dir / d.file, ec);
  if (ec || size != d.file_size)
    fail(PCM_ERR_ARG, "direct file {} of rank {} key '{}' is {} (the rank wrote {} bytes)", d.file,
         rank, key, ec ? "missing" : fmt::format("{} bytes", size), d.file_size);
  // The record's rename is the store: before it the previous data stands, after it the new.
  // Not fsynced, as stores through pcmd are not (a commit makes its version durable): it
  // survives pcmd, not a crash of the machine.
  write_replaced(dir / record_name(rank, key), rec.to_json().dump() + "\n");
  failed_.erase(std::make_tuple(job, rank, key));
  // The key's other files go: the one it replaced, and any a writer left when it died.
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    std::error_code ec2;
    if (name != d.file && is_staged_file_name(name, rank, key)) fs::remove(it->path(), ec2);
  }
}

void Store::failed_direct(const std::string& job, int rank, const std::string& key) {
  check(job, rank, key);
  failed_.insert(std::make_tuple(job, rank, key));
}

void Store::drop_direct(const std::string& job, int rank, const std::string& key) {
  const fs::path dir = root_ / "jobs" / job / "stage";
  auto rec = direct_record(job, rank, key);
  if (!rec) return;
  std::error_code ec;
  fs::remove(dir / record_name(rank, key), ec);
  if (ec) fail(PCM_ERR_INTERNAL, "cannot remove {}: {}", record_name(rank, key), ec.message());
  fsync_path(dir, true);
  fs::remove(dir / rec->datasets.at(0).file, ec);
}

std::vector<std::string> Store::keys(const std::string& job, int rank) const {
  using namespace h5;
  std::vector<std::string> out;
  const fs::path file = job_file(job);
  if (!fs::exists(file)) return out;
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.valid()) fail(PCM_ERR_INTERNAL, "cannot open store {}", file.string());
  const std::string g = "rank_" + std::to_string(rank);
  if (!link_exists(f.get(), g)) return out;
  H5Id grp(H5Gopen2(f.get(), g.c_str(), H5P_DEFAULT), H5Gclose);
  if (!grp.valid()) fail(PCM_ERR_INTERNAL, "cannot open {} in {}", g, file.string());
  out = link_names(grp.get(), g + " in " + file.string());
  return out;
}

// ---- the deferred commit's events (PCM_STORE_ASYNC) ------------------------------------------

namespace {
constexpr const char* kDeferredName = "deferred.log";
}

void Store::keep_deferred(const std::string& job, const json& event) {
  if (!proto::valid_name(job)) fail(PCM_ERR_ARG, "invalid job name '{}'", job);
  const fs::path dir = root_ / "jobs" / job;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string line = event.dump() + "\n";
  const int fd =
      ::open((dir / kDeferredName).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    fail(PCM_ERR_INTERNAL, "cannot keep the commit's event in {}: {}",
         (dir / kDeferredName).string(), std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    fail(PCM_ERR_INTERNAL, "cannot keep the commit's event in {}: {}",
         (dir / kDeferredName).string(), n < 0 ? std::strerror(err) : "a short write");
}

std::vector<json> Store::kept_deferred(const std::string& job) const {
  std::vector<json> out;
  if (!proto::valid_name(job)) return out;
  std::ifstream in(root_ / "jobs" / job / kDeferredName);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: cut short by a pcmd that died while writing it
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

void Store::drop_deferred(const std::string& job) {
  if (!proto::valid_name(job)) return;
  std::error_code ec;
  fs::remove(root_ / "jobs" / job / kDeferredName, ec);
}

}  // namespace pcm::daemon
