// checkpointer.cpp — Checkpointer (checkpointer.h): PCM_Checkpoint's data path: every rank writes
// its own shard of the version straight from the registered buffers (owned units only, checksummed
// on the way, fsynced) and pcmd only commits the shards' records; a restarted rank reads, from the
// shards, the ranges of its new share, verifying each chunk it touches. A rank that cannot see
// pcmd's data directory sends its shard (and reads it back) through pcmd.
#include "checkpointer.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "checkpoint_levels.h"
#include "error.h"
#include "ops.h"
#include "protocol.h"
#include "shard.h"
#include "young_daly.h"

namespace pcm::lib {

using proto::json;

namespace {

// What each rank of a version wrote, and where to read it: straight from the files when this
// process sees them, else through pcmd.
class VersionSource {
 public:
  // paths: per rank, the shard's copy on this host's local level ("": none).
  VersionSource(DaemonLink& link, std::string job, std::int64_t iteration, int timeout_ms,
                std::string dir, std::vector<ShardRecord> shards, bool direct,
                std::vector<std::string> paths)
      : link_(link),
        job_(std::move(job)),
        iteration_(iteration),
        timeout_ms_(timeout_ms),
        dir_(std::move(dir)),
        shards_(std::move(shards)),
        direct_(direct),
        paths_(std::move(paths)) {}

  // The dataset (rank, key), checked against what the application registered.
  const ShardDataset& dataset(int rank, const std::string& key) const {
    if (rank < 0 || static_cast<std::size_t>(rank) >= shards_.size())
      fail(PCM_ERR_CORRUPT, "version {} has no shard for rank {}", iteration_, rank);
    const ShardDataset* d = shards_[static_cast<std::size_t>(rank)].find(key);
    if (!d)
      fail(PCM_ERR_NOT_FOUND, "version {} has nothing under '{}' for rank {}", iteration_, key,
           rank);
    return *d;
  }

  // Bytes [first, first + n) of (rank, key) into out, verified.
  void read(int rank, const ShardDataset& d, std::uint64_t first, std::uint64_t n, void* out) {
    if (n == 0) return;
    try {
      const std::size_t k = static_cast<std::size_t>(rank);
      const bool local = k < paths_.size() && !paths_[k].empty() && d.file.empty();
      if (direct_ || local) {
        const ShardRecord file = shards_[k].holding(d);
        const std::string path = local ? paths_[k] : dir_ + "/" + file.file;
        auto& r = readers_[path];
        if (!r) r = std::make_unique<ShardReader>(path, file);
        r->read(d, first, n, out);
        return;
      }
      // Through pcmd, which verifies the whole dataset as it reads it; once per dataset.
      auto& cached = fetched_[{rank, d.key}];
      if (cached.size() != d.bytes()) {
        auto reply = link_.request(ops::request(ops::Load{job_, rank, d.key, false, iteration_}),
                                   nullptr, 0, timeout_ms_);
        if (reply.data.size() != d.bytes())
          fail(PCM_ERR_CORRUPT, "pcmd sent {} bytes of rank {} '{}', the manifest says {}",
               reply.data.size(), rank, d.key, d.bytes());
        const char* p = static_cast<const char*>(reply.data.data());
        cached.assign(p, p + reply.data.size());
      }
      std::memcpy(out, cached.data() + first, n);
    } catch (const Error& e) {
      // Whatever stops a read of data the manifest lists (a shard gone, a checksum) is damage.
      if (e.code() == PCM_ERR_NOT_FOUND || e.code() == PCM_ERR_INTERNAL)
        fail(PCM_ERR_CORRUPT, "{}", e.what());
      throw;
    }
  }

  // A whole small item (a value, a local, a map), checked for type and count.
  void read_item(int rank, const std::string& key, int type, std::uint64_t count, void* out) {
    const ShardDataset& d = dataset(rank, key);
    if (d.type != type)
      fail(PCM_ERR_TYPE, "'{}' of rank {} was saved as {}, is registered as {}", key, rank,
           proto::type_name(d.type), proto::type_name(type));
    if (d.count != count)
      fail(PCM_ERR_COUNT, "'{}' of rank {} was saved with {} elements, is registered with {}", key,
           rank, d.count, count);
    read(rank, d, 0, d.bytes(), out);
  }

  std::string read_bytes(int rank, const std::string& key) {
    const ShardDataset& d = dataset(rank, key);
    if (d.type != PCM_BYTE) fail(PCM_ERR_CORRUPT, "'{}' of rank {} is not bytes", key, rank);
    std::string s(d.bytes(), '\0');
    read(rank, d, 0, d.bytes(), s.data());
    return s;
  }

 private:
  DaemonLink& link_;
  std::string job_;
  std::int64_t iteration_;
  int timeout_ms_;
  std::string dir_;
  std::vector<ShardRecord> shards_;
  bool direct_;
  std::vector<std::string> paths_;
  std::map<std::string, std::unique_ptr<ShardReader>> readers_;  // by path
  std::map<std::pair<int, std::string>, std::vector<char>> fetched_;
};

// What this rank's shard holds: the owned units of every registered array, straight from the
// application's buffers, and the locals; rank 0's also the values and the arrays' maps (encoded
// into maps, which must outlive the items).
std::vector<ShardItem> shard_items(const Registry& registry, int rank, int size,
                                   std::vector<std::string>* maps) {
  std::vector<ShardItem> items;
  maps->reserve(registry.items().size());  // the items point into them: no string may move
  for (const Item& i : registry.items()) {
    const std::string key = Registry::key(i);
    const std::size_t elem = proto::type_size(i.type);
    if (i.kind == ItemKind::kDist) {
      const Distribution& d = (*i.dist)->d;
      if (d.size() != size)
        fail(PCM_ERR_ARG, "'{}': the map describes {} processes, the world has {}", i.name,
             d.size(), size);
      // The owned units only: ghosts are no state (a restart gives them zeros, as a split).
      ShardItem it{key, i.type, 0, {}};
      const auto& segs = d.segments(rank);
      for (std::size_t s = 0; s < segs.size(); ++s) {
        const std::uint64_t n = static_cast<std::uint64_t>(segs[s].count * d.unit_len());
        it.pieces.push_back({static_cast<const char*>(*i.buf) +
                                 static_cast<std::uint64_t>(d.segment_offset(rank, s)) * elem,
                             n * elem});
        it.count += n;
      }
      items.push_back(std::move(it));
      if (rank == 0) {
        maps->push_back(proto::encode(d.to_json()));
        items.push_back(ShardItem{Registry::map_key(i),
                                  PCM_BYTE,
                                  maps->back().size(),
                                  {{maps->back().data(), maps->back().size()}}});
      }
    } else if (i.kind == ItemKind::kLocal || rank == 0) {
      items.push_back(ShardItem{key,
                                i.type,
                                static_cast<std::uint64_t>(i.count),
                                {{i.value, static_cast<std::uint64_t>(i.count) * elem}}});
    }
  }
  return items;
}

}  // namespace

// ---- writing a version ---------------------------------------------------------------------

void Checkpointer::write_version(int iteration, double t0) {
  json where;
  const bool levels = !ctx_.settings.checkpoint_local_dir.empty();
  agreed(ctx_.world.comm(), [&] {
    if (ctx_.world.rank() != 0) return;
    where = ctx_.link
                .request(ops::request(ops::CheckpointBegin{ctx_.job, iteration}), nullptr, 0,
                         ctx_.settings.data_timeout_ms)
                .header;
    if (levels) {  // rank 0 counts for all: a process spawned later has counted nothing
      ++level_versions_;
      where["flush"] =
          level_versions_ == 1 || level_versions_ % ctx_.settings.checkpoint_flush_every == 0;
    }
  });
  where = bcast_json(where, 0, ctx_.world.comm());
  const double t_begun = wtime();

  // Every rank writes its shard and reports it to pcmd itself (shard_done); pcmd commits the
  // version when the last has: the ranks need not meet again, so the writing can go on behind
  // the application.
  ShardTask task;
  task.header = ShardHeader{ctx_.job, iteration, ctx_.world.rank(), ctx_.world.size()};
  task.dir = where.at("dir").get<std::string>();
  task.token = where.at("token").get<std::string>();
  task.direct = ctx_.settings.checkpoint_direct;
  task.timeout_ms = ctx_.settings.data_timeout_ms;
  task.incarnation = ctx_.link.incarnation();
  task.fail_for_test = iteration == ctx_.settings.test_fail_iteration &&
                       ctx_.world.rank() == ctx_.settings.test_fail_rank;
  if (iteration == ctx_.settings.test_hold_iteration &&
      ctx_.world.rank() == ctx_.settings.test_hold_rank)
    task.hold_for_test = ctx_.settings.test_hold_file;
  const bool background = ctx_.settings.checkpoint_async && !at_once_;
  task.at_once = at_once_ && unsynced_;
  if (levels)
    task.levels = plan_levels(host_map(ctx_.world.comm()), ctx_.world.rank(),
                              ctx_.settings.checkpoint_local_dir, ctx_.job, iteration,
                              ctx_.settings.checkpoint_partner, where.value("flush", true));
  const bool flush = !task.levels || task.levels->flush;
  // Partner level: every rank has a partner, or none (one host, PCM_CHECKPOINT_PARTNER=0).
  const bool partner = task.levels && task.levels->partner >= 0;
  const std::optional<LevelPlan> plan = task.levels;
  std::string desc;
  std::uint64_t staged = 0;
  try {
    agreed(ctx_.world.comm(), [&] {
      task.items = shard_items(ctx_.registry, ctx_.world.rank(), ctx_.world.size(), &task.maps);
      // Levels always go through the writer thread, even when the version is written at once:
      // this thread exchanges the partners' copies meanwhile.
      if (background || levels) {
        if (partner) {
          desc = describe_items(task.items);
          for (const ShardItem& it : task.items)
            for (const auto& p : it.pieces) staged += p.bytes;
        }
        shard_writer_.start(std::move(task), default_config_path(), ctx_.settings.reconnect_ms);
      } else {
        const Outcome o = shard_writer_.write_now(std::move(task), default_config_path(),
                                                  ctx_.settings.reconnect_ms);
        if (!o.ok()) throw Error(o.code, o.msg);
      }
    });
  } catch (const Error&) {
    // Not started everywhere: the ranks that did finish theirs (pcmd never commits the version:
    // a rank did not report), so that every rank has the same nothing in flight.
    shard_writer_.handoff().deliver({PCM_ERR_STATE, "the version was not started on every rank"});
    shard_writer_.finish();
    throw;
  }
  if (partner) {
    // Posted now; this thread completes the exchange at its next calls (PCM_Status tests it, a
    // settle waits for it) while the writer thread writes this rank's shard.
    const Outcome o = attempt([&] {
      partner_copy_.begin(ctx_.world.comm(), *plan, shard_writer_.staging(), staged,
                          std::move(desc), shard_writer_.kept(), shard_writer_.handoff());
    });
    if (!o.ok()) shard_writer_.handoff().deliver(o);
  }
  if (levels && !background) settle();  // written at once: the same outcome everywhere
  // Written now: the last rank's report was answered by the commit, so once the agreement above
  // is over the version exists (or every rank throws the reason why not).
  plog()->debug("[rank {}] checkpoint {}: begun in {:.3f} s, shard {} {:.3f} s after{}",
                ctx_.world.rank(), iteration, t_begun - t0,
                background ? "staged" : "written and committed", wtime() - t_begun,
                !levels ? ""
                        : fmt::format(" (levels: local{}{})", partner ? ", partner" : "",
                                      flush ? ", shared" : ""));
  note(wtime() - t0);  // the schedule's measured cost (PCM_CHECKPOINT_MTBF)
}

void Checkpointer::settle() {
  const std::optional<std::int64_t> version = shard_writer_.in_flight();
  const double t0 = wtime();
  partner_copy_.complete();  // the partners' copies, which the writer waits for
  const double t_exchanged = wtime();
  Outcome o = shard_writer_.finish();
  if (version && wtime() - t0 > 0.01)
    plog()->debug(
        "[rank {}] waited {:.3f} s for version {} ({:.3f} s of it for the partners' copies)",
        ctx_.world.rank(), wtime() - t0, *version, t_exchanged - t0);
  if (!o.ok() && version)
    o.msg = fmt::format("the checkpoint of iteration {} was not made: {}", *version, o.msg);
  agree(ctx_.world.comm(), o.code, o.msg);
}

void Checkpointer::settle_quietly(const char* before) {
  try {
    settle();
  } catch (const Error& e) {
    if (ctx_.world.rank() == 0) plog()->warn("[rank 0] {} (found {})", e.what(), before);
  }
}

// ---- PCM_Checkpoint, and the versions PCM_Adapt writes by itself --------------------------

void Checkpointer::checkpoint(int iteration, std::int64_t call) {
  int code = iteration < 0 ? PCM_ERR_ARG : PCM_SUCCESS;
  std::string msg = code ? fmt::format("iteration {} is negative", iteration) : "";
  agree(ctx_.world.comm(), code, msg);
  const double t0 = wtime();
  // One version in flight at most: the last one is committed first (its failure is this call's,
  // and then nothing more is written).
  settle();
  // A restarted job has this version already (rank 0 decides for all: a process spawned later
  // knows the restart too, but one answer leaves no doubt).
  // So has a job whose PCM_Adapt wrote this iteration's version by itself in this same call.
  int skip =
      iteration == ctx_.restart.iteration || (iteration == label_ && call == at_call_) ? 1 : 0;
  mpi_check(MPI_Bcast(&skip, 1, MPI_INT, 0, ctx_.world.comm()), "MPI_Bcast");
  if (skip) return;
  write_version(iteration, t0);
}

// The version is labelled with the iteration this PCM_Adapt call begins, counted as PCM_Status
// counts them (from the restart's version in a restarted job): the application's own
// PCM_Checkpoint(world, it) of the same loop uses the same numbers when it counts from 0.
void Checkpointer::write_due(std::int64_t call) {
  struct AtOnceForThisOne {  // only the version it was asked for
    bool& at_once;
    ~AtOnceForThisOne() { at_once = false; }
  } at_once_ends{at_once_};
  const std::int64_t id = due_;  // > 0: pcmd's request; -1: the schedule's
  due_ = 0;
  if (id > 0 && ctx_.world.rank() == 0) done_ = id;  // asked once: a failure is not retried
  const std::int64_t label = std::max<std::int64_t>(ctx_.restart.iteration, 0) + call - 1;
  if (label == ctx_.restart.iteration || label > INT_MAX) return;  // saved already / cannot name it
  const std::string what = id > 0 ? fmt::format("checkpoint {} asked by pcmd", id)
                                  : fmt::format("scheduled checkpoint (PCM_CHECKPOINT_MTBF={})",
                                                ctx_.settings.checkpoint_mtbf_s);
  // The interval that made it due (the line says it: a reader can check the gaps against it).
  const std::string due = id > 0 ? std::string()
                          : schedule_.interval < 0
                              ? std::string(" (the first: it measures the cost)")
                              : fmt::format(" (due after {:.3f} s)", schedule_.interval);
  const double t0 = wtime();
  settle_quietly("before a new version");
  try {
    write_version(static_cast<int>(label), t0);
    label_ = label;
    at_call_ = call;
    if (ctx_.world.rank() == 0)
      plog()->info("[rank 0] {}: version of iteration {} {} in {:.3f} s{}", what, label,
                   ctx_.settings.checkpoint_async && !at_once_ ? "staged" : "written", wtime() - t0,
                   due);
  } catch (const Error& e) {
    // Agreed (write_version's steps are): the job goes on; pcmd still shows a request. The
    // schedule tries again an interval later (a tenth of the MTBF while no cost is known).
    schedule_.last_end = wtime();
    if (schedule_.interval < 0)
      schedule_.interval = static_cast<double>(ctx_.settings.checkpoint_mtbf_s) / 10;
    if (ctx_.world.rank() == 0) plog()->warn("[rank 0] {}, not written: {}", what, e.what());
  }
}

std::optional<std::int64_t> Checkpointer::write_final(std::int64_t call, const std::string& why) {
  const double t0 = wtime();
  settle_quietly("before the last version");
  const std::int64_t label = std::max<std::int64_t>(ctx_.restart.iteration, 0) + call - 1;
  if (label == ctx_.restart.iteration) return label;  // restarted here: saved already
  if (label > INT_MAX) return std::nullopt;
  // At once, and fsynced: the next run may start anywhere, much later.
  at_once_ = true;
  unsynced_ = false;
  struct Restore {
    Checkpointer& c;
    ~Restore() {
      c.at_once_ = false;
      c.unsynced_ = true;
    }
  } restore{*this};
  due_ = 0;
  try {
    write_version(static_cast<int>(label), t0);
  } catch (const Error& e) {
    // Agreed. A version of this iteration made earlier (the application's own, in a call
    // before) is that version; anything else: the newest one stays the job's.
    if (e.code() == PCM_ERR_REFUSED) return label;
    if (ctx_.world.rank() == 0)
      plog()->error("[rank 0] {}: the last version (iteration {}) was not written: {}", why, label,
                    e.what());
    return std::nullopt;
  }
  label_ = label;
  at_call_ = call;
  if (ctx_.world.rank() == 0)
    plog()->info("[rank 0] {}: last version, of iteration {}, written in {:.3f} s", why, label,
                 wtime() - t0);
  return label;
}

void Checkpointer::note(double seconds) {
  CheckpointSchedule& c = schedule_;
  c.cost =
      c.cost < 0 ? seconds : (c.cost + seconds) / 2;  // the last ones, the newest weighing most
  c.last_end = wtime();
  if (ctx_.settings.checkpoint_mtbf_s <= 0) return;
  const double mtbf = static_cast<double>(ctx_.settings.checkpoint_mtbf_s);
  c.interval = daly_interval(c.cost, mtbf);
  if (ctx_.world.rank() == 0) ctx_.link.set_checkpoint_schedule(c.cost, c.interval, mtbf);
}

void to_json(json& j, const CheckpointSchedule& s) {
  j = json{{"since_s", s.last_end < 0 ? -1.0 : wtime() - s.last_end},
           {"cost_s", s.cost},
           {"interval_s", s.interval}};
}

void from_json(const json& j, CheckpointSchedule& s) {
  const double since = j.value("since_s", -1.0);
  s.last_end = since < 0 ? -1 : wtime() - since;
  s.cost = j.value("cost_s", -1.0);
  s.interval = j.value("interval_s", -1.0);
}

void Checkpointer::resume_schedule(const json& schedule) {
  if (schedule.is_object()) schedule_ = schedule.get<CheckpointSchedule>();  // it goes on
  if (ctx_.settings.checkpoint_mtbf_s > 0)
    ctx_.link.set_checkpoint_schedule(schedule_.cost, schedule_.interval,
                                      static_cast<double>(ctx_.settings.checkpoint_mtbf_s));
}

// ---- reading a version ---------------------------------------------------------------------

bool Checkpointer::read_restart() {
  while (true) {
    json info;
    agreed(ctx_.world.comm(), [&] {
      if (ctx_.world.rank() != 0) return;
      auto r =
          ctx_.link.request(ops::request(ops::CheckpointManifest{ctx_.job, ctx_.restart.iteration}),
                            nullptr, 0, ctx_.settings.data_timeout_ms);
      info = r.header;
      if (proto::get_int(info, "format", 1, 2) == 2)
        info["manifest"] = proto::decode_large(r.data.data(), r.data.size(), r.data.size());
    });
    info = bcast_json(info, 0, ctx_.world.comm());
    if (info.at("format").get<int>() != 2) {
      return false;  // a version made through pcmd (PCM_Store and PCM_Commit)
    }
    ctx_.restart.unreachable = false;
    try {
      read_version(info);
      return true;
    } catch (const Error& e) {
      if (e.code() != PCM_ERR_CORRUPT) throw;
      // Damaged: pcmd marks the version bad for good and names the one before it, if any. Out
      // of reach (a shard only on lost hosts): skipped until the job's next restart.
      Outcome asked;
      json next;
      if (ctx_.world.rank() == 0) {
        plog()->warn("[rank 0] version {} is {} ({}); trying the one before it",
                     ctx_.restart.iteration, ctx_.restart.unreachable ? "out of reach" : "damaged",
                     e.what());
        ops::CheckpointBad bad{ctx_.job, ctx_.restart.iteration, proto::clean_text(e.what(), 1500)};
        bad.unreachable = ctx_.restart.unreachable;
        asked = attempt([&] {
          next = ctx_.link.request(ops::request(bad), nullptr, 0, ctx_.settings.data_timeout_ms)
                     .header.at("restart");
        });
        if (!asked.ok()) asked.msg = fmt::format("{}; {}", e.what(), asked.msg);
      }
      agree(ctx_.world.comm(), asked.code, asked.msg);
      next = bcast_json(next, 0, ctx_.world.comm());
      ctx_.restart.resume_from(next);
    }
  }
}

void Checkpointer::read_version(const json& info) {
  NewBuffers fresh;
  std::vector<Distribution> maps;
  const json& m = info.at("manifest");
  const std::string dir = info.at("dir").get<std::string>();
  std::vector<ShardRecord> shards;
  bool direct = false;
  std::vector<std::string> paths;  // per old rank, a copy on this host's local level ("": none)
  auto prepare = [&] {
    for (const auto& r : m.at("shards")) shards.push_back(ShardRecord::from_json(r));
    if (static_cast<int>(shards.size()) != ctx_.restart.nprocs)
      fail(PCM_ERR_CORRUPT, "version {} has {} shards for {} processes", ctx_.restart.iteration,
           shards.size(), ctx_.restart.nprocs);
    // This process reads the files itself when it sees the very manifest pcmd holds.
    if (ctx_.settings.checkpoint_direct) {
      std::ifstream in(dir + "/manifest.json");
      std::stringstream text;
      text << in.rdbuf();
      direct = in && json::parse(text.str(), nullptr, false) == m;
    }
  };
  // Checkpoint levels: which level each shard is read from (a copy only a host holds goes into
  // the version's directory first, when the other hosts need it), agreed before anyone reads.
  const bool levels = m.contains("levels") || !ctx_.settings.checkpoint_local_dir.empty();
  if (levels) {
    agreed(ctx_.world.comm(), prepare);
    agreed(ctx_.world.comm(), [&] { paths = locate_levels(m, dir, direct, shards); });
  }
  agreed(ctx_.world.comm(), [&] {
    if (!levels) prepare();
    VersionSource src(ctx_.link, ctx_.job, ctx_.restart.iteration, ctx_.settings.data_timeout_ms,
                      dir, std::move(shards), direct, paths);
    const Registry& reg = ctx_.registry;
    for (const Item* i : reg.of(ItemKind::kValue))
      src.read_item(0, Registry::key(*i), i->type, static_cast<std::uint64_t>(i->count), i->value);
    if (ctx_.restart.nprocs == ctx_.world.size()) {
      for (const Item* i : reg.of(ItemKind::kLocal))
        src.read_item(ctx_.world.rank(), Registry::key(*i), i->type,
                      static_cast<std::uint64_t>(i->count), i->value);
    } else {
      reg.zero(ItemKind::kLocal);
    }
    for (const Item* i : reg.of(ItemKind::kDist)) {
      const std::string bytes = src.read_bytes(0, Registry::map_key(*i));
      const Distribution from = Distribution::from_json(proto::decode(bytes.data(), bytes.size()));
      Distribution to =
          restart_map(*i, from, ctx_.restart.nprocs, ctx_.world.size(), PCM_ERR_CORRUPT);
      const std::size_t elem = proto::type_size(i->type);
      const Distribution owned = from.without_halo();  // how the shards hold the units
      const std::string key = Registry::key(*i);
      char* buf = fresh.add(new_buffer(to, ctx_.world.rank(), elem));
      const std::uint64_t unit_bytes = static_cast<std::uint64_t>(from.unit_len()) * elem;
      for (const Transfer& t : plan(from, to)) {
        if (t.to != ctx_.world.rank()) continue;
        const ShardDataset& d = src.dataset(t.from, key);
        if (d.type != i->type)
          fail(PCM_ERR_TYPE, "'{}' was saved as {}, is registered as {}", i->name,
               proto::type_name(d.type), proto::type_name(i->type));
        if (d.count != static_cast<std::uint64_t>(from.local_units(t.from) * from.unit_len()))
          fail(PCM_ERR_CORRUPT, "'{}' of rank {}: {} elements saved, its map gives it {}", i->name,
               t.from, d.count, from.local_units(t.from) * from.unit_len());
        src.read(t.from, d, static_cast<std::uint64_t>(owned.unit_offset(t.first, nullptr)) * elem,
                 static_cast<std::uint64_t>(t.count) * unit_bytes,
                 buf + static_cast<std::uint64_t>(to.unit_offset(t.first, nullptr)) * elem);
      }
      maps.push_back(std::move(to));
    }
  });
  std::size_t k = 0;
  for (const Item* i : ctx_.registry.of(ItemKind::kDist)) {
    hand_over(*i, fresh.bufs[k], std::move(maps[k]));
    fresh.bufs[k++] = nullptr;
  }
}

}  // namespace pcm::lib
