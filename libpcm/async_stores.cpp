// async_stores.cpp — PCM_Store and PCM_Commit behind the application (async_stores.h).
#include "async_stores.h"

#include <cstring>

#include "config.h"
#include "error.h"
#include "ops.h"
#include "protocol.h"
#include "storage.h"

namespace pcm::lib {

AsyncStores::~AsyncStores() {
  if (thread_.joinable()) thread_.join();
}

bool AsyncStores::keep(int rank, const std::string& key, const void* buf, int type,
                       std::uint64_t count) {
  if (!ctx_.settings.store_async) return false;
  finish_thread();
  const std::uint64_t bytes = count * proto::type_size(type);
  Kept& k = kept_[Name{rank, key}];
  if (k.size != bytes || !k.bytes) {
    k.bytes.reset();  // the old one goes first: never both at once
    k.bytes.reset(new char[bytes]);
    k.size = bytes;
  }
  if (bytes > 0) std::memcpy(k.bytes.get(), buf, bytes);
  k.type = type;
  k.count = count;
  k.written = false;
  return true;
}

bool AsyncStores::load(int rank, const std::string& key, void* buf, int type, long count) const {
  auto it = kept_.find(Name{rank, key});
  if (it == kept_.end()) return false;
  check_loaded(rank, key.c_str(), it->second.type, static_cast<std::int64_t>(it->second.count),
               type, count);
  if (it->second.size > 0) std::memcpy(buf, it->second.bytes.get(), it->second.size);
  return true;
}

bool AsyncStores::load_count(int rank, const std::string& key, int* type, long* count) const {
  auto it = kept_.find(Name{rank, key});
  if (it == kept_.end()) return false;
  if (type) *type = it->second.type;
  if (count) *count = static_cast<long>(it->second.count);
  return true;
}

bool AsyncStores::dirty() const {
  for (const auto& [key, k] : kept_)
    if (!k.written) return true;
  return false;
}

std::vector<AsyncStores::Name> AsyncStores::write(DaemonLink& link, DirectStore& store,
                                                  Outcome* outcome) {
  std::vector<Name> done;
  *outcome = attempt([&] {
    for (const auto& [name, k] : kept_) {
      if (k.written) continue;
      store_now(link, store, ctx_.settings, ctx_.job, name.first, name.second, k.bytes.get(),
                k.type, k.count);
      done.push_back(name);
    }
  });
  return done;
}

void AsyncStores::start(std::int64_t iteration, int rank, int size) {
  finish_thread();
  if (!thread_link_.is_open())  // its own connection: the application's belongs to its thread
    thread_link_.open(read_config(default_config_path()), default_config_path(), 1000,
                      ctx_.settings.reconnect_ms);
  thread_link_.set_incarnation(ctx_.link.incarnation());
  started_ = true;
  committed_ = false;
  iteration_ = iteration;
  outcome_ = asked_ = {};
  written_.clear();
  thread_ = std::thread([this, iteration, rank, size] {
    Outcome wrote;
    written_ = write(thread_link_, thread_store_, &wrote);
    ops::StoresDone done{ctx_.job, iteration, rank, size, std::nullopt};
    if (!wrote.ok()) done.error = proto::printable(wrote.msg).substr(0, 1900);
    outcome_ = attempt([&] {
      auto r = thread_link_.request(ops::request(done), nullptr, 0, ctx_.settings.data_timeout_ms);
      if (r.header.contains("iteration")) committed_ = true;  // the reply is the commit's
    });
    if (!wrote.ok()) outcome_ = wrote;
  });
}

void AsyncStores::finish_thread() {
  if (!thread_.joinable()) return;
  thread_.join();
  for (const Name& name : written_)
    if (auto it = kept_.find(name); it != kept_.end()) it->second.written = true;
  written_.clear();
}

AsyncStores::Result AsyncStores::finish() {
  finish_thread();
  Result r{started_, iteration_, outcome_.ok() ? asked_ : outcome_, committed_.load()};
  started_ = false;
  committed_ = false;
  outcome_ = asked_ = {};
  return r;
}

Outcome AsyncStores::flush(DirectStore& direct) {
  finish_thread();
  Outcome o;
  if (dirty()) write(ctx_.link, direct, &o);
  // Written (or lost, and pcmd knows it): the world may change now, and this process's rank with
  // it, so nothing of the old rank stays here.
  kept_.clear();
  if (!o.ok())
    plog()->warn("[rank {}] a key stored with PCM_STORE_ASYNC=1 could not be written: {}",
                 ctx_.world.rank(), o.msg);
  return o;
}

void AsyncStores::close() {
  finish_thread();
  if (thread_link_.is_open()) thread_link_.close();
}

}  // namespace pcm::lib
