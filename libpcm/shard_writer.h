// shard_writer.h — this process's shard of a checkpoint version, written and reported to pcmd
// (shard_done) either at once or in the background: PCM_Checkpoint copies the registered data
// into staging memory (kept from one version to the next, so that only the first copy touches new
// pages) and returns; a thread writes the shard from there, fsyncs it (or sends it through pcmd
// when this process does not see the version's directory) and reports its record. pcmd commits
// the version when every rank has reported. At most one version is in flight: finish() waits for
// it and says how this process's part ended (the caller agrees on it with the others).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint_levels.h"
#include "daemon_link.h"
#include "mpi_util.h"
#include "partner_copy.h"
#include "shard.h"

namespace pcm::lib {

// One rank's shard of one version: where it goes and what it holds.
struct ShardTask {
  ShardHeader header;
  std::string dir, token;  // pcmd's temporary directory of the version, and the file that proves it
  bool direct = true;      // write into dir when this process sees it (PCM_CHECKPOINT_DIRECT)
  int timeout_ms = 0;
  std::int64_t incarnation = 0;  // the job's run, stamped on the writer's requests (ops::Fence)
  bool fail_for_test = false;    // PCM_TEST_SHARD_FAIL named this shard
  std::string hold_for_test;     // PCM_TEST_SHARD_HOLD: report once this file is gone
  // Written for the next run to read at once (a restart reshape, a move): the shared level's
  // file is not fsynced (write_shard's sync).
  bool at_once = false;
  std::vector<ShardItem> items;   // pointing into the application's buffers, or into staging
  std::vector<std::string> maps;  // bytes some items point into (reserved: they never move)
  // Checkpoint levels: where the shard goes; the partners' copies this rank keeps come through
  // the writer's kept() and handoff() (partner_copy.h).
  std::optional<LevelPlan> levels;
};

class ShardWriter {
 public:
  ShardWriter() = default;
  ~ShardWriter() { close(); }
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Writes the shard and reports it now, in this thread (task's items may point anywhere).
  // Returns how it went; the link to pcmd is opened on first use (config_path).
  Outcome write_now(ShardTask task, const std::string& config_path, int reconnect_ms);
  // Copies what task's items point to into staging memory, then writes and reports the shard in
  // a thread of its own; returns as soon as the copy is made. Nothing may be in flight. With a
  // partner level, the thread waits for handoff() before it writes the copies it keeps.
  void start(ShardTask task, const std::string& config_path, int reconnect_ms);
  // The staged bytes of the version in flight (its items, one after the other).
  const char* staging() const { return staging_.get(); }
  // The iteration of the version in flight (started, not finish()ed), if any.
  std::optional<std::int64_t> in_flight() const { return in_flight_; }
  // Waits for the version in flight and returns how this process's part of it went (success
  // when none is in flight).
  Outcome finish();
  // Waits for anything in flight, closes the link to pcmd and frees the staging memory.
  void close();
  // Checkpoint levels: the partners' copies this process keeps, filled by the application's
  // thread while a version is in flight (kept from one version to the next, so that only the
  // first fill touches new pages), and the handoff that says they are in.
  std::vector<KeptCopy>& kept() { return kept_; }
  PartnerHandoff& handoff() { return handoff_; }

 private:
  void open_link(const std::string& config_path, int reconnect_ms);
  // Writes task's shard (into its directory, or through pcmd) and reports it (shard_done).
  void write_and_report(const ShardTask& task);
  // The shard into the version's directory where this process sees it, else through pcmd
  // (ShardPut); returns its record.
  ShardRecord write_shared(const ShardTask& task);
  // Checkpoint levels: the shard into the local directory, on a flush also into the version's
  // directory (or through pcmd), then the partners' copies beside it; returns the record.
  ShardRecord write_levels(const ShardTask& task);

  DaemonLink link_;  // used by one thread at a time: the caller's, or the writer's
  std::thread thread_;
  std::optional<std::int64_t> in_flight_;
  Outcome outcome_;  // the writer thread's, read after it is joined
  struct FreeDeleter {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, FreeDeleter> staging_;  // alloc_for_exchange: huge pages
  std::uint64_t staging_bytes_ = 0;
  std::vector<KeptCopy> kept_;
  PartnerHandoff handoff_;
};

}  // namespace pcm::lib
