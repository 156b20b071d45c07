// data_ops.cpp — the requests that touch the disk, their disk part handed to DiskWork
// (data_ops.h).
#include "data_ops.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;

namespace {

constexpr std::size_t kMaxShardTable = std::size_t{1} << 30;  // bytes of a commit's shard table

json status_json(const VersionStatus& v) {
  return json{{"iteration", v.iteration},
              {"valid", v.valid},
              {"why", v.why},
              {"bytes", v.bytes},
              {"nprocs", v.nprocs}};
}

}  // namespace

DataOps::DataOps(DiskWork& disk, Store& store, Checkpoints& checkpoints, JobTable& jobs,
                 std::size_t keep_versions, std::shared_ptr<spdlog::logger> log)
    : disk_(disk),
      store_(store),
      checkpoints_(checkpoints),
      jobs_(jobs),
      keep_versions_(keep_versions),
      log_(std::move(log)) {}

// ---- the working store ---------------------------------------------------------------------

json DataOps::store(const ops::Store& r, Payload data, std::vector<char>& reply_data) {
  jobs_.find(r.job);
  const std::size_t elem = proto::type_size(r.type);
  if (static_cast<std::uint64_t>(r.count) * elem != data.size)
    fail(PCM_ERR_ARG, "store of {} x {} carries {} bytes of data", r.count,
         proto::type_name(r.type), data.size);
  if (r.count > 0 && !data.data) fail(PCM_ERR_ARG, "store without a data frame");
  return disk_.defer({[this, r, data](std::vector<char>&) {
                        store_.put(r.job, r.rank, r.key, r.type, data.data,
                                   static_cast<std::uint64_t>(r.count));
                        return proto::ok_reply();
                      },
                      nullptr},
                     reply_data);
}

json DataOps::load(const ops::Load& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  if (r.version) {
    const auto& m = job.restarted_from;
    if (!m || m->iteration != *r.version)
      fail(PCM_ERR_REFUSED, "job '{}' was not restarted from version {}", r.job, *r.version);
    if (r.meta_only) {
      std::optional<Store::Meta> meta;
      if (m->format == 2) {
        if (r.rank < m->nprocs)
          if (const ShardDataset* d = m->shards[static_cast<std::size_t>(r.rank)].find(r.key))
            meta = Store::Meta{d->type, d->count};
      } else {
        std::string path = "/rank_" + std::to_string(r.rank) + "/" + r.key;
        for (const auto& d : m->datasets)
          if (d.path == path) meta = Store::Meta{d.type, d.count};
      }
      if (!meta)
        fail(PCM_ERR_NOT_FOUND, "version {} of job '{}' has nothing for rank {} key '{}'",
             *r.version, r.job, r.rank, r.key);
      return json{{"ok", true}, {"type", meta->type}, {"count", meta->count}};
    }
    return disk_.defer(
        {[this, m = *m, rank = r.rank, key = r.key](std::vector<char>& out) {
           auto meta = checkpoints_.read(m, rank, key, out);
           return json{
               {"ok", true}, {"type", meta.type}, {"count", meta.count}, {"has_data", true}};
         },
         nullptr},
        reply_data);
  }
  return disk_.defer(
      {[this, r](std::vector<char>& out) {
         if (r.meta_only) {
           auto m = store_.meta(r.job, r.rank, r.key);
           if (!m)
             fail(PCM_ERR_NOT_FOUND, "nothing stored for job '{}' rank {} key '{}'", r.job, r.rank,
                  r.key);
           return json{{"ok", true}, {"type", m->type}, {"count", m->count}};
         }
         auto m = store_.get(r.job, r.rank, r.key, out);
         return json{{"ok", true}, {"type", m.type}, {"count", m.count}, {"has_data", true}};
       },
       nullptr},
      reply_data);
}

void DataOps::keep_layout(const std::string& job, std::string bytes, std::int64_t command) {
  disk_.background(
      [this, job, bytes = std::move(bytes), command] { store_.put_layout(job, bytes, command); });
}

// ---- checkpoint versions -------------------------------------------------------------------

std::function<void(json&)> DataOps::note_commit(const Job& job, bool shards) {
  return [this, name = job.name, incarnation = job.incarnation, shards](json& reply) {
    Job* j = jobs_.get(name);
    if (!j || j->incarnation != incarnation) return;
    const auto iteration = reply["iteration"].get<std::int64_t>();
    const auto bytes = reply["bytes"].get<std::uint64_t>();
    jobs_.note(*j, shards ? fmt::format("checkpoint of iteration {} committed ({} bytes in {} "
                                        "shards)",
                                        iteration, bytes, reply["shards"].get<int>())
                          : fmt::format("checkpoint of iteration {} committed ({} bytes)",
                                        iteration, bytes));
    log_->info("job {}: {}", name, j->last_event);
    if (j->version_begun != std::chrono::steady_clock::time_point{})
      j->version_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - j->version_begun)
              .count();
    jobs_.checkpoint_written(*j);
  };
}

json DataOps::commit(const ops::Commit& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  if (!r.after_stores) return commit_store(job, r.iteration, r.size, r.retry, reply_data);
  DeferredCommit& d = deferred_for(job, r.iteration, r.size);
  if (d.take(-1, std::nullopt)) keep_deferred(job, d, -1, std::nullopt);  // else sent again
  return deferred_reply(job, reply_data);
}

json DataOps::commit_store(const Job& job, std::int64_t iteration, int size, bool retry,
                           std::vector<char>& reply_data) {
  return disk_.defer(
      {[this, name = job.name, iteration, size, retry, layout = job.layout](std::vector<char>&) {
         // Sent again after a pcmd restart: the commit may have been made before it died.
         if (retry)
           if (auto done = committed_before(name, iteration)) return *done;
         Manifest m = checkpoints_.commit(store_, name, iteration, size, layout);
         auto removed = checkpoints_.prune(name, keep_versions_, iteration);
         return json{
             {"ok", true}, {"iteration", iteration}, {"bytes", m.file_size}, {"pruned", removed}};
       },
       note_commit(job, false)},
      reply_data);
}

// ---- commits made behind the application (PCM_STORE_ASYNC) ---------------------------------

DataOps::DeferredCommit& DataOps::deferred_for(const Job& job, std::int64_t iteration, int size) {
  if (size != job.size)
    fail(PCM_ERR_REFUSED, "a commit of {} processes for a job of {}", size, job.size);
  auto it = deferred_.find(job.name);
  kept_events_.insert(job.name);
  if (it == deferred_.end() || it->second.incarnation != job.incarnation)
    if (auto kept = kept_deferred(job))
      it = deferred_.insert_or_assign(job.name, std::move(*kept)).first;
  if (it != deferred_.end() && it->second.incarnation == job.incarnation) {
    if (it->second.iteration == iteration) return it->second;
    if (it->second.iteration > iteration)
      fail(PCM_ERR_REFUSED, "job '{}' commits iteration {} now, not {}", job.name,
           it->second.iteration, iteration);
    if (!it->second.over)
      log_->warn(
          "job {}: the commit of iteration {} never had all its ranks' stores ({} of {}); "
          "iteration {} replaces it",
          job.name, it->second.iteration, it->second.reported, size, iteration);
  }
  DeferredCommit d{iteration, job.incarnation, false, std::vector<bool>(size), 0, "", false, false};
  store_.drop_deferred(job.name);  // an older commit's events
  return deferred_.insert_or_assign(job.name, std::move(d)).first->second;
}

bool DataOps::DeferredCommit::take(int rank, const std::optional<std::string>& error) {
  if (rank < 0) return !std::exchange(asked, true);
  if (done[static_cast<std::size_t>(rank)]) return false;
  done[static_cast<std::size_t>(rank)] = true;
  ++reported;
  if (error && failed.empty()) failed = fmt::format("rank {}: {}", rank, *error);
  return true;
}

std::optional<DataOps::DeferredCommit> DataOps::kept_deferred(const Job& job) {
  std::optional<DeferredCommit> d;
  for (const json& e : store_.kept_deferred(job.name)) {
    const auto iteration = e.value("iteration", std::int64_t{-1});
    const int size = e.value("size", 0), rank = e.value("rank", -2);
    if (e.value("incarnation", 0LL) != job.incarnation || size != job.size || size <= 0) continue;
    if (!d || d->iteration != iteration)
      d = DeferredCommit{iteration, job.incarnation, false, std::vector<bool>(size), 0, "", true,
                         false};
    if (rank >= -1 && rank < size)
      d->take(rank, e.contains("error") ? std::optional<std::string>(e.value("error", ""))
                                        : std::nullopt);
  }
  if (d && (!d->asked || d->reported < static_cast<int>(d->done.size())))
    log_->info(
        "job {}: the commit of iteration {} behind the job: {} of {} ranks' stores in{} "
        "before pcmd restarted",
        job.name, d->iteration, d->reported, d->done.size(),
        d->asked ? ", and rank 0's commit" : "");
  return d;
}

void DataOps::keep_deferred(const Job& job, const DeferredCommit& d, int rank,
                            const std::optional<std::string>& error) {
  json e{{"iteration", d.iteration},
         {"incarnation", d.incarnation},
         {"size", d.done.size()},
         {"rank", rank}};
  if (error) e["error"] = *error;
  try {
    store_.keep_deferred(job.name, e);
  } catch (const Error& ex) {
    log_->warn("job {}: {} (a restart of pcmd now would lose this commit)", job.name, ex.what());
  }
}

void DataOps::forget_ended_commits() {
  if (!std::exchange(took_table_, true))
    for (const auto& [name, job] : jobs_.all()) kept_events_.insert(name);
  for (auto it = kept_events_.begin(); it != kept_events_.end();) {
    const Job* job = jobs_.get(*it);
    if (job && job->state == JobState::kRunning) {
      ++it;
      continue;
    }
    deferred_.erase(*it);
    store_.drop_deferred(*it);
    it = kept_events_.erase(it);
  }
}

json DataOps::stores_done(const ops::StoresDone& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  if (r.rank >= r.size) fail(PCM_ERR_ARG, "rank {} of a commit of {} processes", r.rank, r.size);
  DeferredCommit& d = deferred_for(job, r.iteration, r.size);
  if (d.take(r.rank, r.error)) keep_deferred(job, d, r.rank, r.error);  // else sent again
  return deferred_reply(job, reply_data);
}

json DataOps::deferred_reply(const Job& job, std::vector<char>& reply_data) {
  DeferredCommit& d = deferred_.find(job.name)->second;
  if (!d.asked || d.reported < static_cast<int>(d.done.size()))
    return json{{"ok", true}, {"deferred", true}};
  // Over from here, and kept until the next commit begins (with its events beside the store): a
  // request sent again, to this pcmd or to one that restarted, gets the same answer.
  const bool again = d.over || d.rebuilt;  // a commit taken up may have been made before
  if (!d.failed.empty()) {
    if (!d.over)
      log_->warn("job {}: commit of iteration {} not made: {}", job.name, d.iteration, d.failed);
    d.over = true;
    fail(PCM_ERR_REFUSED, "a rank's stores were not written ({})", d.failed);
  }
  d.over = true;
  // Each rank's stores were recorded (store_direct, on the data thread) before it reported.
  return commit_store(job, d.iteration, static_cast<int>(d.done.size()), again, reply_data);
}

json DataOps::checkpoints(const ops::Checkpoints& r, std::vector<char>& reply_data) {
  return versions(r.job, std::nullopt, 0, reply_data);
}

json DataOps::verify(const ops::Verify& r, std::vector<char>& reply_data) {
  // Without an iteration, every version is verified: the same reply as checkpoints.
  return versions(r.job, r.iteration, 0, reply_data);
}

json DataOps::prune(const ops::Prune& r, std::vector<char>& reply_data) {
  return versions(r.job, std::nullopt, static_cast<std::size_t>(r.keep), reply_data);
}

json DataOps::versions(const std::string& name, std::optional<std::int64_t> one, std::size_t keep,
                       std::vector<char>& reply_data) {
  const bool known = jobs_.get(name) != nullptr;
  return disk_.defer({[this, name, one, keep, known](std::vector<char>&) {
                        if (!known && !checkpoints_.has_job(name))
                          fail(PCM_ERR_NOT_FOUND,
                               "job '{}' has no checkpoints here and pcmd does not know it "
                               "(mistyped?)",
                               name);
                        if (keep > 0)
                          return json{{"ok", true}, {"pruned", checkpoints_.prune(name, keep)}};
                        json versions = json::array();
                        if (one) {
                          versions.push_back(status_json(checkpoints_.verify(name, *one)));
                        } else {
                          for (const auto& v : checkpoints_.list(name))
                            versions.push_back(status_json(v));
                        }
                        return json{{"ok", true}, {"versions", versions}};
                      },
                      nullptr},
                     reply_data);
}

// On the data thread: the reply to a commit sent again whose version exists and verifies (it was
// made before pcmd died), or nothing.
std::optional<json> DataOps::committed_before(const std::string& job, std::int64_t iteration) {
  VersionStatus v = checkpoints_.verify(job, iteration);
  if (!v.valid) return std::nullopt;
  return json{{"ok", true},
              {"iteration", iteration},
              {"bytes", v.bytes},
              {"shards", v.nprocs},
              {"pruned", json::array()}};
}

json DataOps::find_restart(const std::string& name,
                           std::function<json(std::optional<Manifest>)> then,
                           std::vector<char>& reply_data) {
  // A version made through pcmd is read whole for its checksums: on the data thread.
  auto found = std::make_shared<std::optional<Manifest>>();
  return disk_.defer({[this, name, found](std::vector<char>&) {
                        checkpoints_.forget_unreachable(name);
                        *found = checkpoints_.latest_valid(name);
                        if (!*found)
                          fail(PCM_ERR_NOT_FOUND,
                               "job '{}' has no checkpoint version that verifies", name);
                        return proto::ok_reply();
                      },
                      [found, then = std::move(then)](json& reply) { reply = then(*found); }},
                     reply_data);
}

// ---- shards the ranks write (format 2) -------------------------------------------------------

json DataOps::begin(const ops::CheckpointBegin& r, std::vector<char>& reply_data) {
  Job& job = jobs_.find(r.job);
  job.version_begun = std::chrono::steady_clock::now();
  // The shards of this version are reported from now on (shard_done); an earlier version that
  // never had all of them is no version (its temporary directory goes below).
  pending_[job.name] = PendingVersion{r.iteration, job.incarnation, 0, {}, "", {}};
  return disk_.defer({[this, name = job.name, iteration = r.iteration](std::vector<char>&) {
                        auto d = checkpoints_.begin_shards(name, iteration);
                        return json{{"ok", true}, {"dir", d.dir.string()}, {"token", d.token}};
                      },
                      nullptr},
                     reply_data);
}

json DataOps::shard_put(const ops::ShardPut& r, Payload data, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  if (r.rank >= job.size) fail(PCM_ERR_ARG, "rank {} of a job of {} processes", r.rank, job.size);
  return disk_.defer({[this, name = job.name, r, data](std::vector<char>&) {
                        checkpoints_.put_shard(name, r.iteration, r.rank, data.data, data.size);
                        return proto::ok_reply();
                      },
                      nullptr},
                     reply_data);
}

json DataOps::commit_shards(const ops::CheckpointCommit& r, Payload data,
                            std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  // The shard table travels as the data frame: at one checksum per MiB it outgrows a header.
  std::vector<ShardRecord> shards;
  try {
    json table = proto::decode_large(data.data, data.size, kMaxShardTable);
    for (const auto& s : table.at("shards")) shards.push_back(ShardRecord::from_json(s));
  } catch (const json::exception& e) {
    fail(PCM_ERR_ARG, "the shard table: {}", e.what());
  }
  pending_.erase(job.name);
  return commit_version(job, r.iteration, r.size, r.layout ? *r.layout : job.layout,
                        std::move(shards), r.retry, reply_data);
}

json DataOps::shard_done(const ops::ShardDone& r, Payload data, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  if (r.rank >= r.size) fail(PCM_ERR_ARG, "rank {} of a version of {} processes", r.rank, r.size);
  if (r.size != job.size)
    fail(PCM_ERR_REFUSED, "a version of {} processes for a job of {}", r.size, job.size);
  auto it = pending_.find(job.name);
  if (it == pending_.end() || it->second.iteration != r.iteration ||
      it->second.incarnation != job.incarnation) {
    // pcmd restarted while the version was being made: the reports it had are kept beside the
    // shards (a few small files, read here, once).
    if (auto kept = checkpoints_.kept_records(job.name, r.iteration)) {
      PendingVersion p{r.iteration, job.incarnation, 0, {}, "", {}};
      p.shards.resize(static_cast<std::size_t>(r.size));
      p.levels.resize(static_cast<std::size_t>(r.size));
      for (auto& [rec, levels] : *kept)
        if (rec.rank >= 0 && rec.rank < r.size && !p.shards[static_cast<std::size_t>(rec.rank)]) {
          p.levels[static_cast<std::size_t>(rec.rank)] = std::move(levels);
          p.shards[static_cast<std::size_t>(rec.rank)] = std::move(rec);
          ++p.reported;
        }
      log_->info("job {}: version {}: {} of {} shards reported before pcmd restarted", job.name,
                 r.iteration, p.reported, r.size);
      it = pending_.insert_or_assign(job.name, std::move(p)).first;
    }
  }
  if (it == pending_.end() || it->second.iteration != r.iteration ||
      it->second.incarnation != job.incarnation) {
    // Sent again after a pcmd restart: the version may have been committed before it died.
    return disk_.defer(
        {[this, name = job.name, r](std::vector<char>&) {
           if (auto done = committed_before(name, r.iteration)) return *done;
           fail(PCM_ERR_REFUSED,
                "pcmd has no record of version {} of job '{}' being made (a newer version was "
                "begun, or its directory is gone); that version is not made",
                r.iteration, name);
         },
         nullptr},
        reply_data);
  }
  PendingVersion& p = it->second;
  if (p.shards.empty()) p.shards.resize(static_cast<std::size_t>(r.size));
  if (p.levels.empty()) p.levels.resize(static_cast<std::size_t>(r.size));
  if (static_cast<std::size_t>(r.size) != p.shards.size())
    fail(PCM_ERR_ARG, "rank {} reports a version of {} processes, others of {}", r.rank, r.size,
         p.shards.size());
  auto& slot = p.shards[static_cast<std::size_t>(r.rank)];
  if (r.error) {
    if (p.failed.empty()) p.failed = fmt::format("rank {}: {}", r.rank, *r.error);
  } else {
    ShardRecord rec;
    try {
      rec = ShardRecord::from_json(proto::decode_large(data.data, data.size, kMaxShardTable));
    } catch (const json::exception& e) {
      fail(PCM_ERR_ARG, "the shard record: {}", e.what());
    }
    if (rec.rank != r.rank)
      fail(PCM_ERR_ARG, "rank {} sent the record of rank {}", r.rank, rec.rank);
    if (slot) return proto::ok_reply();  // sent twice (a retry), or kept before a restart
    try {
      checkpoints_.keep_record(job.name, r.iteration, rec, r.levels);
    } catch (const Error& e) {
      log_->warn("job {}: {} (a restart of pcmd now would lose this version)", job.name, e.what());
    }
    slot = std::move(rec);
    p.levels[static_cast<std::size_t>(r.rank)] = r.levels;
  }
  if (++p.reported < r.size) return proto::ok_reply();
  // The last: the version is committed now, and this reply is the commit's.
  PendingVersion done = std::move(p);
  pending_.erase(it);
  if (!done.failed.empty()) {
    log_->warn("job {}: checkpoint of iteration {} not made: {}", job.name, r.iteration,
               done.failed);
    return proto::ok_reply();  // the failed rank reports it to the others
  }
  std::vector<ShardRecord> shards;
  for (auto& s : done.shards) shards.push_back(std::move(*s));
  // Older libpcm sends no levels: its shards are in the version's directory, as before levels.
  std::vector<ShardLevels> levels;
  if (std::any_of(done.levels.begin(), done.levels.end(), [](const auto& l) { return !!l; }))
    for (auto& l : done.levels) levels.push_back(l.value_or(ShardLevels{}));
  return commit_version(job, r.iteration, r.size, job.layout, std::move(shards), false, reply_data,
                        std::move(levels));
}

json DataOps::commit_version(const Job& job, std::int64_t iteration, int size, json layout,
                             std::vector<ShardRecord> shards, bool retry,
                             std::vector<char>& reply_data, std::vector<ShardLevels> levels) {
  return disk_.defer(
      {[this, name = job.name, iteration, size, layout = std::move(layout),
        shards = std::move(shards), retry, levels = std::move(levels)](std::vector<char>&) mutable {
         if (retry)
           if (auto done = committed_before(name, iteration)) return *done;
         const auto t0 = std::chrono::steady_clock::now();
         Manifest m = checkpoints_.commit_shards(name, iteration, size, layout, std::move(shards),
                                                 std::move(levels));
         const auto t1 = std::chrono::steady_clock::now();
         auto removed = checkpoints_.prune(name, keep_versions_, iteration);
         log_->debug("job {}: commit {:.3f} s, prune {:.3f} s", name,
                     std::chrono::duration<double>(t1 - t0).count(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
         return json{{"ok", true},
                     {"iteration", iteration},
                     {"bytes", m.file_size},
                     {"shards", m.nprocs},
                     {"pruned", removed}};
       },
       note_commit(job, true)},
      reply_data);
}

// A restarted job found its version damaged: never again; the next one, if any.
json DataOps::bad(const ops::CheckpointBad& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  if (!job.restarted_from || job.restarted_from->iteration != r.iteration)
    fail(PCM_ERR_REFUSED, "job '{}' was not restarted from version {}", job.name, r.iteration);
  auto next = std::make_shared<std::optional<Manifest>>();
  return disk_.defer(
      {[this, name = job.name, r, next](std::vector<char>&) {
         checkpoints_.mark_bad(name, r.iteration, r.why, r.unreachable);
         if (r.unreachable)
           log_->warn("job {}: version {} is out of reach ({}); skipped until the next restart",
                      name, r.iteration, r.why);
         else
           log_->warn("job {}: version {} is damaged ({}); it will not be used again", name,
                      r.iteration, r.why);
         *next = checkpoints_.latest_valid(name);
         if (!*next)
           fail(PCM_ERR_NOT_FOUND, "job '{}' has no other checkpoint version that verifies", name);
         return json{{"ok", true},
                     {"restart", {{"iteration", (*next)->iteration}, {"nprocs", (*next)->nprocs}}}};
       },
       [this, name = job.name, incarnation = job.incarnation, iteration = r.iteration,
        unreachable = r.unreachable, next](json&) {
         Job* j = jobs_.get(name);
         if (!j || j->incarnation != incarnation) return;
         j->restarted_from = *next;
         j->layout = (*next)->layout;
         jobs_.note(*j, fmt::format("version {} is {}; restarting from iteration {} ({} processes)",
                                    iteration, unreachable ? "out of reach" : "damaged",
                                    (*next)->iteration, (*next)->nprocs));
       }},
      reply_data);
}

// The version a restarted job reads.
json DataOps::manifest(const ops::CheckpointManifest& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  const auto& m = job.restarted_from;
  if (!m || m->iteration != r.iteration)
    fail(PCM_ERR_REFUSED, "job '{}' was not restarted from version {}", job.name, r.iteration);
  json reply{{"ok", true}, {"format", m->format}};
  if (m->format == 2) {
    reply["dir"] = checkpoints_.version_dir(job.name, r.iteration).string();
    reply["has_data"] = true;
    const std::string table = proto::encode(m->to_json());
    reply_data.assign(table.begin(), table.end());
  }
  return reply;
}

// ---- keys the ranks store themselves (store.h) ---------------------------------------------
// The direct-store directory, and a store's record (or its failure) made the key's data, on the
// data thread behind the stores and loads queued before it.

json DataOps::direct_dir(const ops::DirectDir& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  return disk_.defer({[this, name = job.name](std::vector<char>&) {
                        auto d = store_.direct_dir(name);
                        return json{{"ok", true}, {"dir", d.dir.string()}, {"token", d.token}};
                      },
                      nullptr},
                     reply_data);
}

json DataOps::store_direct(const ops::StoreDirect& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  std::optional<ShardRecord> rec;
  if (r.record) rec = ShardRecord::from_json(*r.record);  // PCM_ERR_ARG when malformed
  return disk_.defer({[this, name = job.name, r, rec](std::vector<char>&) {
                        if (rec) {
                          store_.put_direct(name, r.rank, r.key, *rec);
                        } else {
                          store_.failed_direct(name, r.rank, r.key);
                          log_->warn("job {}: rank {} could not store '{}': {}", name, r.rank,
                                     r.key, proto::printable(*r.error));
                        }
                        return proto::ok_reply();
                      },
                      nullptr},
                     reply_data);
}

}  // namespace pcm::daemon
