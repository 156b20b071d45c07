// shard_writer.cpp — a version's shard written now or in the background, and reported to pcmd
// (shard_writer.h).
#include "shard_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "buffer.h"
#include "config.h"
#include "error.h"
#include "log.h"
#include "ops.h"
#include "protocol.h"

namespace pcm::lib {

void ShardWriter::FreeDeleter::operator()(char* p) const { std::free(p); }

void ShardWriter::open_link(const std::string& config_path, int reconnect_ms) {
  if (link_.is_open()) return;
  // Its own connection: the request loop's socket belongs to the application's thread. It never
  // polls for commands and holds no watch connection.
  link_.open(read_config(config_path), config_path, 1000, reconnect_ms);
}

void ShardWriter::write_and_report(const ShardTask& task) {
  const ShardHeader& h = task.header;
  link_.set_incarnation(task.incarnation);
  ops::ShardDone done{h.job, h.iteration, h.rank, h.nprocs, std::nullopt, false, std::nullopt};
  std::string record;
  const Outcome wrote = attempt([&] {
    if (task.fail_for_test)
      fail(PCM_ERR_INTERNAL, "PCM_TEST_SHARD_FAIL: the shard of rank {} failed on purpose", h.rank);
    ShardRecord rec;
    if (task.levels) {
      rec = write_levels(task);
      const LevelPlan& l = *task.levels;
      done.levels = ShardLevels{l.host, l.partner_host, l.flush};
    } else {
      rec = write_shared(task);
    }
    record = proto::encode(rec.to_json());
  });
  if (!wrote.ok()) done.error = wrote.msg.substr(0, 1900);
  if (!task.hold_for_test.empty()) {
    // FILE.held says that the report is held from now on (a test waits for it).
    std::ofstream(task.hold_for_test + ".held").put('\n');
    for (int i = 0; i < 12000; ++i) {
      struct stat st;
      if (::stat(task.hold_for_test.c_str(), &st) != 0) break;
      ::usleep(10000);
    }
  }
  // pcmd learns either way: a version one rank could not write is no version, at once.
  link_.request(ops::request(done), record.data(), record.size(), task.timeout_ms);
  if (!wrote.ok()) throw Error(wrote.code, wrote.msg);
}

ShardRecord ShardWriter::write_shared(const ShardTask& task) {
  const ShardHeader& h = task.header;
  if (task.direct && holds_token(task.dir, task.token))
    return write_shard(task.dir, h, task.items, "", !task.at_once);
  std::vector<char> image;
  ShardRecord rec = image_shard(h, task.items, image);
  link_.request(ops::request(ops::ShardPut{h.job, h.iteration, h.rank}), image.data(), image.size(),
                task.timeout_ms);
  return rec;
}

ShardRecord ShardWriter::write_levels(const ShardTask& task) {
  const LevelPlan& l = *task.levels;
  const ShardHeader& h = task.header;
  // Versions older than the two before this one go first: the local level holds few.
  prune_local(l.job_dir, h.iteration);
  ShardRecord rec = write_shard_replacing(l.dir, h, task.items, shard_file_name(h.rank));
  if (l.flush) rec = write_shared(task);
  // The partners' copies, once the application's thread has them (the same layout as their
  // owners' shards: the same items written the same way).
  const Outcome in = handoff_.wait();
  if (!in.ok()) throw Error(in.code, in.msg);
  for (const KeptCopy& k : kept_)
    write_shard_replacing(l.dir, ShardHeader{h.job, h.iteration, k.rank, h.nprocs},
                          items_of(k.desc, k.bytes), partner_file_name(k.rank));
  return rec;
}

Outcome ShardWriter::write_now(ShardTask task, const std::string& config_path, int reconnect_ms) {
  if (in_flight_) fail(PCM_ERR_INTERNAL, "a version is in flight");
  handoff_.expect(false);  // levels go through start()
  return attempt([&] {
    open_link(config_path, reconnect_ms);
    write_and_report(task);
  });
}

void ShardWriter::start(ShardTask task, const std::string& config_path, int reconnect_ms) {
  if (in_flight_) fail(PCM_ERR_INTERNAL, "a version is in flight");
  open_link(config_path, reconnect_ms);
  std::uint64_t total = 0;
  for (const ShardItem& it : task.items)
    for (const auto& p : it.pieces) total += p.bytes;
  if (total > staging_bytes_) {
    staging_.reset();  // the old one goes first: never both at once
    staging_.reset(static_cast<char*>(alloc_for_exchange(total)));  // the copy below touches it
    if (!staging_ && total > 0) fail(PCM_ERR_INTERNAL, "out of memory for {} bytes", total);
    staging_bytes_ = total;
  }
  // Every item becomes one piece of staging memory. The maps' bytes are copied too: the task
  // owns them, but not the application's buffers they describe.
  char* at = staging_.get();
  for (ShardItem& it : task.items) {
    char* first = at;
    for (const auto& p : it.pieces) {
      if (p.bytes) std::memcpy(at, p.data, p.bytes);
      at += p.bytes;
    }
    it.pieces = {{first, static_cast<std::uint64_t>(at - first)}};
  }
  handoff_.expect(task.levels && (task.levels->partner >= 0 || !task.levels->keeps.empty()));
  in_flight_ = task.header.iteration;
  outcome_ = {};
  thread_ = std::thread(
      [this, task = std::move(task)] { outcome_ = attempt([&] { write_and_report(task); }); });
}

Outcome ShardWriter::finish() {
  if (!in_flight_) return {};
  thread_.join();
  in_flight_.reset();
  return outcome_;
}

void ShardWriter::close() {
  // Partners' copies that the application's thread can no longer bring in do not come.
  handoff_.deliver({PCM_ERR_STATE, "the process ended before the partners' copies came"});
  if (thread_.joinable()) thread_.join();
  in_flight_.reset();
  if (link_.is_open()) link_.close();
  staging_.reset();
  staging_bytes_ = 0;
  kept_.clear();
}

}  // namespace pcm::lib
