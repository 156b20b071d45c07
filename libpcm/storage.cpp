// storage.cpp — Storage (storage.h): PCM_Store and PCM_Load (written and read here where this
// process sees pcmd's data directory: direct_store.h; else through pcmd), the commit of a
// checkpoint version, and what a restarted process reads from the version it resumes from.
#include "storage.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "buffer.h"
#include "error.h"
#include "ops.h"
#include "protocol.h"
#include "registry.h"

namespace pcm::lib {

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

}  // namespace

void check_loaded(int rank, const char* key, int stored_type, std::int64_t stored_count, int type,
                  long count) {
  if (stored_type != type)
    fail(PCM_ERR_TYPE, "rank {} key '{}' holds {}, not {}", rank, key,
         proto::type_name(stored_type), proto::type_name(type));
  if (stored_count != count)
    fail(PCM_ERR_COUNT, "rank {} key '{}' holds {} elements, not {}", rank, key, stored_count,
         count);
}

void store_now(DaemonLink& link, DirectStore& direct, const Settings& s, const std::string& job,
               int rank, const std::string& key, const void* buf, int type, std::uint64_t count) {
  if (direct.store(link, s, job, rank, key, buf, type, count)) return;  // recorded by pcmd
  link.request(ops::request(ops::Store{job, rank, key, type, static_cast<std::int64_t>(count)}),
               count > 0 ? buf : "", count * proto::type_size(type), s.data_timeout_ms);
}

void Storage::store(int rank, const char* key, const void* buf, int type, long count) {
  check_data(rank, key, buf, type, count);
  if (async_.keep(rank, key, buf, type, static_cast<std::uint64_t>(count)))
    return;  // kept here (PCM_STORE_ASYNC=1); written behind the application at PCM_Commit
  store_now(ctx_.link, direct_store_, ctx_.settings, ctx_.job, rank, key, buf, type,
            static_cast<std::uint64_t>(count));
}

void Storage::load_count(int rank, const char* key, int* type, long* count) {
  check_entry(rank, key);
  if (!ctx_.restart.reading && async_.load_count(rank, key, type, count)) return;
  std::optional<ShardRecord> rec;
  if (ctx_.restart.reading) {
    auto v = direct_store_.in_version(ctx_.link, ctx_.settings, ctx_.job, ctx_.restart.iteration,
                                      rank, key);
    if (v) rec = std::move(v->second);
  } else {
    rec = direct_store_.find(ctx_.link, ctx_.settings, ctx_.job, rank, key);
  }
  if (rec) {
    if (type) *type = rec->datasets[0].type;
    if (count) *count = static_cast<long>(rec->datasets[0].count);
    return;
  }
  ops::Load req{ctx_.job, rank, key, true, std::nullopt};
  if (ctx_.restart.reading) req.version = ctx_.restart.iteration;
  auto r = ctx_.link.request(ops::request(req), nullptr, 0, ctx_.settings.data_timeout_ms);
  if (type) *type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  if (count) *count = static_cast<long>(proto::get_int(r.header, "count", 0, LONG_MAX));
}

void Storage::load(int rank, const char* key, void* buf, int type, long count) {
  std::size_t elem = check_data(rank, key, buf, type, count);
  if (!ctx_.restart.reading && async_.load(rank, key, buf, type, count))
    return;  // the newest data of a key kept here (PCM_STORE_ASYNC=1)
  if (ctx_.restart.reading) {
    // The version's shard straight from its file, where this process sees it.
    if (auto v = direct_store_.in_version(ctx_.link, ctx_.settings, ctx_.job,
                                          ctx_.restart.iteration, rank, key)) {
      const ShardDataset& d = v->second.datasets[0];
      check_loaded(rank, key, d.type, static_cast<std::int64_t>(d.count), type, count);
      ShardReader(v->first, v->second).read(d, 0, d.bytes(), buf);
      return;
    }
  } else if (auto rec = direct_store_.find(ctx_.link, ctx_.settings, ctx_.job, rank, key)) {
    const ShardDataset& d = rec->datasets[0];
    check_loaded(rank, key, d.type, static_cast<std::int64_t>(d.count), type, count);
    if (direct_store_.read(*rec, buf)) return;  // else replaced meanwhile: pcmd
  }
  ops::Load req{ctx_.job, rank, key, false, std::nullopt};
  if (ctx_.restart.reading) req.version = ctx_.restart.iteration;
  auto r = ctx_.link.request(ops::request(req), nullptr, 0, ctx_.settings.data_timeout_ms);
  int stored_type = static_cast<int>(proto::get_int(r.header, "type", 1, 1000));
  auto stored_count = proto::get_int(r.header, "count", 0, INT64_MAX);
  check_loaded(rank, key, stored_type, stored_count, type, count);
  if (r.data.size() != static_cast<std::size_t>(count) * elem)
    fail(PCM_ERR_INTERNAL, "pcmd sent {} bytes for {} elements", r.data.size(), count);
  if (count > 0) std::memcpy(buf, r.data.data(), r.data.size());
}

void Storage::commit(int iteration) {
  int code = iteration < 0 ? PCM_ERR_ARG : PCM_SUCCESS;
  std::string msg = code ? fmt::format("iteration {} is negative", iteration) : "";
  // Every rank's stores have returned once all are here; then rank 0 asks pcmd to commit.
  agree(ctx_.world.comm(), code, msg);
  int behind = 0;  // a rank keeps keys not yet written (PCM_STORE_ASYNC=1)
  if (ctx_.settings.store_async) {
    settle();  // the previous commit made behind: its failure is this call's
    behind = async_.dirty() ? 1 : 0;
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, &behind, 1, MPI_INT, MPI_MAX, ctx_.world.comm()),
              "MPI_Allreduce");
  }
  const ops::Commit req{ctx_.job, iteration, ctx_.world.size(), false, behind == 1};
  if (!behind) {
    agreed(ctx_.world.comm(), [&] {
      if (ctx_.world.rank() == 0)
        ctx_.link.request(ops::request(req), nullptr, 0, ctx_.settings.data_timeout_ms);
    });
    return;
  }
  // Behind the application: every rank's thread writes its keys and says so; pcmd makes the
  // version once all have and this request has come. Its failure, as the writers', is reported
  // by the next PCM_Commit or PCM_Finalize on every rank (settle), never by this one on rank 0.
  async_.start(iteration, ctx_.world.rank(), ctx_.world.size());
  if (ctx_.world.rank() == 0) {
    bool committed = false;
    Outcome o = attempt([&] {
      auto r = ctx_.link.request(ops::request(req), nullptr, 0, ctx_.settings.data_timeout_ms);
      committed = r.header.contains("iteration");
    });
    async_.asked(std::move(o), committed);
  }
}

void Storage::flush() {
  if (!ctx_.settings.store_async) return;
  settle(true);
  async_.flush(direct_store_);
}

void Storage::settle(bool quietly) {
  const AsyncStores::Result r = async_.finish();
  Outcome o = r.outcome;
  int seen = r.commit_seen ? 1 : 0;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &seen, 1, MPI_INT, MPI_MAX, ctx_.world.comm()),
            "MPI_Allreduce");
  // Exactly one process gets the reply that is the commit's: none did, none was made.
  if (r.started && o.ok() && !seen)
    o = {PCM_ERR_DAEMON, "pcmd did not make it (did pcmd restart meanwhile?)"};
  if (!o.ok())
    o.msg = fmt::format(
        "the commit of iteration {} made behind the application "
        "(PCM_STORE_ASYNC=1) was not made: {}",
        r.iteration, o.msg);
  try {
    agree(ctx_.world.comm(), o.code, o.msg);
  } catch (const Error& e) {
    if (!quietly) throw;
    if (ctx_.world.rank() == 0) plog()->warn("[rank 0] {}", e.what());
  }
}

void Storage::load_redistribute(const char* key, int type, const Distribution& from,
                                const Distribution& to, int rank, void* buf) {
  if (!ctx_.restart.reading)
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
}

// A restarted process, from a version made through pcmd (format 1, PCM_Store and PCM_Commit):
// the values, this world's share of every array (at any process count), and the local values
// where the process count is the same.
void Storage::read_registered() {
  agreed(ctx_.world.comm(), [&] {
    const Registry& reg = ctx_.registry;
    for (const Item* i : reg.of(ItemKind::kValue))
      load(0, Registry::key(*i).c_str(), i->value, i->type, i->count);
    if (ctx_.restart.nprocs == ctx_.world.size()) {
      for (const Item* i : reg.of(ItemKind::kLocal))
        load(ctx_.world.rank(), Registry::key(*i).c_str(), i->value, i->type, i->count);
    } else {
      reg.zero(ItemKind::kLocal);
    }
    NewBuffers fresh;
    std::vector<Distribution> maps;
    for (const Item* i : reg.of(ItemKind::kDist)) {
      const std::string mkey = Registry::map_key(*i);
      int type = 0;
      long count = 0;
      load_count(0, mkey.c_str(), &type, &count);
      std::string bytes(static_cast<std::size_t>(count), '\0');
      load(0, mkey.c_str(), bytes.data(), PCM_BYTE, count);
      const Distribution from = Distribution::from_json(proto::decode(bytes.data(), bytes.size()));
      Distribution to =
          restart_map(*i, from, ctx_.restart.nprocs, ctx_.world.size(), PCM_ERR_INTERNAL);
      char* buf = fresh.add(new_buffer(to, ctx_.world.rank(), proto::type_size(i->type)));
      load_redistribute(Registry::key(*i).c_str(), i->type, from, to, ctx_.world.rank(), buf);
      maps.push_back(std::move(to));
    }
    std::size_t k = 0;
    for (const Item* i : reg.of(ItemKind::kDist)) {
      hand_over(*i, fresh.bufs[k], std::move(maps[k]));
      fresh.bufs[k++] = nullptr;
    }
  });
}

}  // namespace pcm::lib
