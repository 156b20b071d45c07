// async_stores.h — PCM_STORE_ASYNC=1: the paper's PCM_Store and PCM_Commit behind the
// application. Every PCM_Store copies the data into memory kept here and returns. PCM_Commit hands
// the keys stored since to a thread that writes each as PCM_Store would (where this process sees
// pcmd's directory, a file, checksummed, fsynced, recorded by pcmd: store_direct; else through
// pcmd) and then tells pcmd that this rank's stores are in (stores_done); pcmd makes the version
// once every rank has, and rank 0's commit (after_stores) has come. Nothing reaches the working
// store between two commits, so a version holds exactly the stores made before its PCM_Commit.
// The next PCM_Commit (or PCM_Finalize) learns how it went. A process that reconfigures or ends
// writes what it kept first (flush), so that the processes after it load the data.
// Definitions: async_stores.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "context.h"
#include "daemon_link.h"
#include "direct_store.h"
#include "mpi_util.h"

namespace pcm::lib {

class AsyncStores {
 public:
  explicit AsyncStores(const Context& ctx) : ctx_(ctx) {}
  ~AsyncStores();
  AsyncStores(const AsyncStores&) = delete;
  AsyncStores& operator=(const AsyncStores&) = delete;

  // PCM_Store of (rank, key): copied here (true), or PCM_STORE_ASYNC is off (false: the caller
  // stores it now). Waits for the thread first (it may be writing the kept copies).
  bool keep(int rank, const std::string& key, const void* buf, int type, std::uint64_t count);
  // PCM_Load and PCM_Load_count of (rank, key) from the copy kept here: true if kept (the newest
  // data of the key). Checks type and count as a load does.
  bool load(int rank, const std::string& key, void* buf, int type, long count) const;
  bool load_count(int rank, const std::string& key, int* type, long* count) const;
  // Whether a key was stored here and not yet written.
  bool dirty() const;
  // PCM_Commit's part on every rank, dirty or not: the thread writes the keys not yet written and
  // says so (stores_done of iteration, as rank of size).
  void start(std::int64_t iteration, int rank, int size);
  // Rank 0, after start(): how the commit's request went (a failure is reported by finish(), as
  // the thread's), and whether pcmd's reply was the commit's (every rank's stores were in).
  void asked(Outcome o, bool committed) {
    asked_ = std::move(o);
    if (committed) committed_ = true;
  }
  // How the last commit started here went: waits for the thread. commit_seen: this process got
  // the commit's reply (exactly one process of the job does when the version is made).
  struct Result {
    bool started = false;
    std::int64_t iteration = 0;
    Outcome outcome;
    bool commit_seen = false;
  };
  Result finish();
  // The process reconfigures or ends: every key not yet written is written now, in this thread
  // (through direct, the application thread's view of pcmd's directory),
  // and the copies forgotten (ranks may change); a failure is logged (pcmd then refuses commits
  // until the key is stored again) and returned. Local: the caller settles the commit in flight
  // first (Storage::flush), so that no store of the next version reaches it.
  Outcome flush(DirectStore& direct);
  // The process ends: waits for the thread and closes its link to pcmd.
  void close();

 private:
  struct Kept {
    std::unique_ptr<char[]> bytes;
    std::uint64_t size = 0;  // bytes
    int type = 0;
    std::uint64_t count = 0;
    bool written = false;
  };
  // Waits for the thread, and marks what it wrote.
  void finish_thread();
  using Name = std::pair<int, std::string>;  // (rank, key)
  // Writes the keys not yet written through link and store; returns the keys written.
  std::vector<Name> write(DaemonLink& link, DirectStore& store, Outcome* outcome);

  Context ctx_;
  std::map<Name, Kept> kept_;
  DirectStore thread_store_;  // the thread's view of pcmd's directory
  DaemonLink thread_link_;    // the thread's connection to pcmd
  std::thread thread_;
  bool started_ = false;
  std::atomic<bool> committed_{false};  // set by the thread, or by rank 0's application thread
  std::int64_t iteration_ = 0;
  Outcome outcome_, asked_;
  std::vector<Name> written_;  // by the thread
};

}  // namespace pcm::lib
