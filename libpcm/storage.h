// storage.h — Storage: PCM_Store and PCM_Load (written and read here where this process sees
// pcmd's data directory: direct_store.h; else through pcmd), PCM_Commit's request, and a restarted
// process's reads of a version made that way (format 1: PCM_Load_redistribute, and the
// register-once layer's restart from it). Definitions: storage.cpp.
#pragma once

#include "async_stores.h"
#include "context.h"
#include "direct_store.h"
#include "distribution.h"

namespace pcm::lib {

class Storage {
 public:
  explicit Storage(const Context& ctx) : ctx_(ctx) {}

  // PCM_Store, PCM_Load_count, PCM_Load (in a world: Runtime::storage checks).
  void store(int rank, const char* key, const void* buf, int type, long count);
  void load_count(int rank, const char* key, int* type, long* count);
  void load(int rank, const char* key, void* buf, int type, long count);
  // PCM_Commit, its world checked: collective; rank 0 asks pcmd to commit. With PCM_STORE_ASYNC=1
  // and keys kept (async_stores.h): the previous such commit settled, then the keys written and
  // the version made behind the application.
  void commit(int iteration);
  // Collective: how the last commit made behind the application went; every rank throws the same
  // error if it was not made. quietly: logged by rank 0 instead (PCM_Finalize).
  void settle(bool quietly = false);
  // Collective (the world's processes reconfigure or end): the commit made behind settled (its
  // failure logged by rank 0), then the keys kept here written now (a failure is logged, and
  // pcmd refuses commits until the key is stored again).
  void flush();
  // The process ends: the writer's thread joined, its link closed.
  void close() { async_.close(); }
  // PCM_Load_redistribute: this rank's share (by to) of key, saved by the ranks of from.
  void load_redistribute(const char* key, int type, const Distribution& from,
                         const Distribution& to, int rank, void* buf);
  // A restarted process, from a version made through pcmd (format 1, PCM_Store and PCM_Commit):
  // the registered values, this world's share of every array (at any process count), and the
  // locals where the process count is the same. Collective.
  void read_registered();

 private:
  Context ctx_;
  DirectStore direct_store_;  // PCM_Store's keys written here
  AsyncStores async_{ctx_};   // PCM_STORE_ASYNC=1's copies and writer
};

// A store made now: written by this process where it sees pcmd's directory (direct_store.h),
// else sent to pcmd with its data.
void store_now(DaemonLink& link, DirectStore& direct, const Settings& s, const std::string& job,
               int rank, const std::string& key, const void* buf, int type, std::uint64_t count);
// A load's buffer must be what was stored (type and count), else PCM_ERR_TYPE / PCM_ERR_COUNT.
void check_loaded(int rank, const char* key, int stored_type, std::int64_t stored_count, int type,
                  long count);

}  // namespace pcm::lib
