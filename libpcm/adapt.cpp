// adapt.cpp — the register-once layer: PCM_Resume (any origin -> registered state), PCM_Adapt
// (PCM_Status plus whatever is pending, for all registered data) and PCM_Checkpoint.
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "buffer.h"
#include "error.h"
#include "mpi_util.h"
#include "protocol.h"
#include "runtime.h"
#include "young_daly.h"

namespace pcm::detail {

using proto::json;

namespace {

constexpr int kTagMigrate = 7702;
// One MPI message moves at most this many bytes (counts are ints).
constexpr std::size_t kChunk = std::size_t{1} << 30;

void send_bytes(const void* data, std::size_t n, int dest, MPI_Comm comm) {
  const char* p = static_cast<const char*>(data);
  for (std::size_t at = 0; at < n; at += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - at));
    mpi_check(MPI_Send(p + at, len, MPI_BYTE, dest, kTagMigrate, comm), "MPI_Send");
  }
}

void recv_bytes(void* data, std::size_t n, int src, MPI_Comm comm) {
  char* p = static_cast<char*>(data);
  for (std::size_t at = 0; at < n; at += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - at));
    mpi_check(MPI_Recv(p + at, len, MPI_BYTE, src, kTagMigrate, comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
}

}  // namespace

Distribution restart_map(const Item& item, const Distribution& from, int saved_nprocs, int size,
                         int damage) {
  if (from.size() != saved_nprocs)
    fail(damage, "'{}': the saved map describes {} processes, the version {}", item.name,
         from.size(), saved_nprocs);
  if (!*item.dist || (*item.dist)->d.size() != size) return from.resized(size);
  const Distribution& to = (*item.dist)->d;
  if (to.units() != from.units() || to.unit_len() != from.unit_len())
    fail(PCM_ERR_ARG,
         "'{}': the map set before PCM_Resume has {} units of {}, the saved array {} of {}",
         item.name, to.units(), to.unit_len(), from.units(), from.unit_len());
  return to;
}

void hand_over(const Item& item, char* buf, Distribution map) {
  std::free(*item.buf);
  *item.buf = buf;
  delete *item.dist;
  *item.dist = new PCM_Dist_s{std::move(map)};
}

std::vector<ArrayRef> arrays_of(const Registry& reg) {
  std::vector<ArrayRef> arrays;
  for (const Item* i : reg.of(ItemKind::kDist)) arrays.push_back({i->buf, i->type, i->dist});
  return arrays;
}

// ---- PCM_Resume ----------------------------------------------------------------------------

// Collective over the world: every process registered the same names, kinds, types and counts.
void Runtime::check_registrations() {
  const std::uint64_t h = registry_.signature();
  std::uint64_t v[2] = {h, ~h};
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MIN, world_.comm()),
            "MPI_Allreduce");
  // min(h) == max(h) on every process iff all are equal; max(h) = ~min(~h).
  const int code = v[0] == ~v[1] ? PCM_SUCCESS : PCM_ERR_ARG;
  agree(world_.comm(), code,
        code ? fmt::format("the processes registered different data (rank {}: {})", world_.rank(),
                           registry_.describe())
             : "");
}

int Runtime::resume(MPI_Comm* comm) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  if (process_status_ == PCM_RETIRED) fail(PCM_ERR_STATE, "this process has retired");
  if (phase_ != Phase::kActive) fail(PCM_ERR_STATE, "call PCM_Init first");
  if (resumed_) fail(PCM_ERR_STATE, "PCM_Resume was already called");
  resumed_ = true;
  switch (process_status_) {
    case PCM_MIGRATED:
      resume_migrated();
      break;
    case PCM_SPLITTED:
      agreed(world_.comm(), [&] {
        json extra;
        receive_split(arrays_of(registry_), &extra);
        const auto& values = extra.at("values").get_binary();
        registry_.unpack(ItemKind::kValue, std::string(values.begin(), values.end()));
        registry_.zero(ItemKind::kLocal);
      });
      check_registrations();
      break;
    case PCM_RESTARTED:
      check_registrations();
      resume_restarted();
      break;
    default: {  // started: the application's own data must be there
      check_registrations();
      int code = PCM_SUCCESS;
      std::string msg;
      for (const Item* i : registry_.of(ItemKind::kDist)) {
        if (!*i->dist || (*i->dist)->d.size() != world_.size()) {
          code = PCM_ERR_ARG;
          msg = *i->dist ? fmt::format("'{}': the map describes {} processes, the world has {}",
                                       i->name, (*i->dist)->d.size(), world_.size())
                         : fmt::format("'{}': the map is NULL", i->name);
        } else if (!*i->buf && (*i->dist)->d.local_elements(world_.rank()) > 0) {
          code = PCM_ERR_ARG;
          msg = fmt::format("'{}': the buffer is NULL", i->name);
        }
      }
      agree(world_.comm(), code, msg);
    }
  }
  *comm = world_.comm();
  return PCM_SUCCESS;
}

// The mover sends, on the communicator it shares with its replacement: a header (what follows)
// then the bytes of every item, straight from the application's buffers.
void Runtime::send_migration(MPI_Comm merged, int child, int rank) {
  json items = json::array();
  for (const Item& i : registry_.items()) {
    json h{{"name", i.name}, {"kind", static_cast<int>(i.kind)}, {"type", i.type}};
    if (i.kind == ItemKind::kDist) {
      h["map"] = (*i.dist)->d.to_json();
      h["bytes"] =
          (*i.dist)->d.local_elements(rank) * static_cast<std::int64_t>(proto::type_size(i.type));
    } else {
      h["bytes"] = i.bytes();
    }
    items.push_back(std::move(h));
  }
  const std::string header = proto::encode(json{{"items", items}});
  long long n = static_cast<long long>(header.size());
  mpi_check(MPI_Send(&n, 1, MPI_LONG_LONG, child, kTagMigrate, merged), "MPI_Send");
  send_bytes(header.data(), header.size(), child, merged);
  for (std::size_t k = 0; k < registry_.items().size(); ++k) {
    const Item& i = registry_.items()[k];
    const auto bytes = static_cast<std::size_t>(items[k].at("bytes").get<std::int64_t>());
    send_bytes(i.kind == ItemKind::kDist ? *i.buf : i.value, bytes, child, merged);
  }
  // The replacement has the arrays now; the mover's go, as a split's or merge's leavers' do.
  for (const Item* i : registry_.of(ItemKind::kDist)) {
    std::free(*i->buf);
    *i->buf = nullptr;
    delete *i->dist;
    *i->dist = nullptr;
  }
}

// The replacement of a migrated process: receive everything the mover sends (whatever it is, so
// that the mover is never left blocked), then check it against the registrations.
void Runtime::resume_migrated() {
  // The mover may stop sending: this process, the lowest involved on its side, tells pcmd.
  const Watchdog::Scope guard =
      bounded("receiving a migrated process's state", world_.rank(), true);
  // Pairs with the survivors' agreement in PCM_Adapt.
  agreed(world_.comm(), [&] {
    if (world_.migrant.comm == MPI_COMM_NULL) fail(PCM_ERR_STATE, "no mover to receive from");
    long long n = 0;
    mpi_check(MPI_Recv(&n, 1, MPI_LONG_LONG, world_.migrant.src, kTagMigrate, world_.migrant.comm,
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
    std::string header(static_cast<std::size_t>(n), '\0');
    recv_bytes(header.data(), header.size(), world_.migrant.src, world_.migrant.comm);
    const json items = decode_internal(header).at("items");
    NewBuffers fresh;
    std::vector<char*> data;
    std::vector<Distribution> maps;
    for (const json& h : items) {
      const auto bytes = static_cast<std::size_t>(h.at("bytes").get<std::int64_t>());
      if (h.at("kind").get<int>() == static_cast<int>(ItemKind::kDist)) {
        maps.push_back(Distribution::from_json(h.at("map")));
        const std::size_t elem = proto::type_size(h.at("type").get<int>());
        if (elem == 0 || maps.back().size() <= world_.rank() ||
            bytes != static_cast<std::size_t>(maps.back().local_elements(world_.rank())) * elem)
          fail(PCM_ERR_INTERNAL, "the mover's array '{}' does not fit its map",
               h.at("name").get<std::string>());
        // new_buffer: from 4 MiB up, huge pages for the application's array.
        data.push_back(fresh.add(new_buffer(maps.back(), world_.rank(), elem)));
      } else {
        maps.emplace_back();
        data.push_back(fresh.add(static_cast<char*>(std::malloc(std::max<std::size_t>(1, bytes)))));
      }
      recv_bytes(data.back(), bytes, world_.migrant.src, world_.migrant.comm);
    }
    world_.migrant.owned.reset();
    world_.migrant.comm = MPI_COMM_NULL;
    // Check, then hand over.
    const auto& reg = registry_.items();
    if (items.size() != reg.size())
      fail(PCM_ERR_ARG, "the mover registered {} items, this process {}", items.size(), reg.size());
    for (std::size_t k = 0; k < reg.size(); ++k) {
      const json& h = items[k];
      if (h.at("name").get<std::string>() != reg[k].name ||
          h.at("kind").get<int>() != static_cast<int>(reg[k].kind))
        fail(PCM_ERR_ARG, "the mover registered '{}' where this process registered '{}'",
             h.at("name").get<std::string>(), reg[k].name);
      if (h.at("type").get<int>() != reg[k].type)
        fail(PCM_ERR_TYPE, "'{}': the mover sent {}, not {}", reg[k].name,
             proto::type_name(h.at("type").get<int>()), proto::type_name(reg[k].type));
      if (reg[k].kind != ItemKind::kDist &&
          h.at("bytes").get<std::int64_t>() != static_cast<std::int64_t>(reg[k].bytes()))
        fail(PCM_ERR_COUNT, "'{}': the mover sent {} bytes, {} registered", reg[k].name,
             h.at("bytes").get<std::int64_t>(), reg[k].bytes());
    }
    for (std::size_t k = 0; k < reg.size(); ++k) {
      if (reg[k].kind == ItemKind::kDist) {
        hand_over(reg[k], data[k], std::move(maps[k]));
        fresh.bufs[k] = nullptr;
      } else if (reg[k].count > 0) {
        std::memcpy(reg[k].value, data[k], reg[k].bytes());
      }
    }
  });
}

// A restarted process, from a version made through pcmd (format 1, PCM_Store and PCM_Commit):
// the values, this world's share of every array (at any process count), and the local values
// where the process count is the same.
void Runtime::resume_restarted_whole() {
  agreed(world_.comm(), [&] {
    const Registry& reg = registry_;
    for (const Item* i : reg.of(ItemKind::kValue))
      load(0, Registry::key(*i).c_str(), i->value, i->type, i->count);
    if (restart_.nprocs == world_.size()) {
      for (const Item* i : reg.of(ItemKind::kLocal))
        load(world_.rank(), Registry::key(*i).c_str(), i->value, i->type, i->count);
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
      Distribution to = restart_map(*i, from, restart_.nprocs, world_.size(), PCM_ERR_INTERNAL);
      char* buf = fresh.add(new_buffer(to, world_.rank(), proto::type_size(i->type)));
      load_redistribute(Registry::key(*i).c_str(), i->type, from, to, world_.rank(), buf);
      maps.push_back(std::move(to));
    }
    std::size_t k = 0;
    for (const Item* i : reg.of(ItemKind::kDist)) {
      hand_over(*i, fresh.bufs[k], std::move(maps[k]));
      fresh.bufs[k++] = nullptr;
    }
  });
}

// ---- PCM_Adapt -----------------------------------------------------------------------------

int Runtime::adapt(MPI_Comm* comm) {
  if (!comm) fail(PCM_ERR_ARG, "comm is NULL");
  const int s = status(*comm);
  if (s == PCM_NONE) {
    if (checkpoint_.due != 0 && resumed_) write_due_checkpoint();
    return PCM_NONE;
  }
  if (!resumed_) fail(PCM_ERR_STATE, "call PCM_Resume before PCM_Adapt");
  if (!reconfig_.current) fail(PCM_ERR_INTERNAL, "PCM_Status returned {} with nothing pending", s);
  // A split whose spawn, or a merge whose new buffers, can be made while the loop goes on
  // (overlap.h): that starts now, and the reconfiguration goes on at the agreement after it has
  // finished (PCM_Status switches); meanwhile the application iterates in the old world.
  if ((s == PCM_SPLIT || s == PCM_MERGE) && overlap_.possible && !overlap_.switching) {
    if (s == PCM_SPLIT)
      start_background_split();
    else
      start_background_merge();
    return PCM_NONE;
  }
  // A version PCM_Checkpoint started while the spawn ran in the background is committed in this
  // world before it changes (every rank of it has one in flight, or none).
  if (overlap_.switching && shard_writer_.in_flight()) settle_quietly("before the split's switch");
  // The background spawn's bound (set before this scope, so that it is the outer one) ends with
  // the split, whichever way.
  struct EndBound {
    std::optional<Watchdog::Scope>& bound;
    ~EndBound() { bound.reset(); }
  } end_bound{overlap_.bound};
  // The calls below bound their parts too; this scope adds the agreement after a migration.
  const Watchdog::Scope guard = bounded(*reconfig_.current);
  try {
    switch (s) {
      case PCM_MIGRATE: {
        const int me = world_.rank();
        migrate(nullptr,
                [this, me](MPI_Comm merged, int child) { send_migration(merged, child, me); });
        break;
      }
      case PCM_RECONFIGURE:
        migrate(nullptr, nullptr);
        // Pairs with the replacement's agreement at the end of its PCM_Resume.
        agree(world_.comm(), PCM_SUCCESS, "");
        break;
      case PCM_SPLIT: {
        const std::string values = registry_.pack(ItemKind::kValue);
        send_split(
            arrays_of(registry_),
            json{{"values", json::binary(std::vector<std::uint8_t>(values.begin(), values.end()))}},
            nullptr);
        break;
      }
      case PCM_MERGE:
        merge_arrays(arrays_of(registry_));
        break;
      default:
        fail(PCM_ERR_INTERNAL, "PCM_Status returned {}", s);
    }
  } catch (const Error& e) {
    if (e.code() != PCM_ERR_SPAWN) throw;
    // Agreed, and nothing changed: the job goes on in the old world.
    if (world_.rank() == 0) plog()->warn("[rank 0] {}; continuing in the old world", e.what());
    return PCM_NONE;
  }
  *comm = world_.comm();
  return process_status_ == PCM_RETIRED ? PCM_RETIRED : PCM_RESHAPED;
}

// ---- PCM_Checkpoint ------------------------------------------------------------------------

int Runtime::checkpoint(MPI_Comm comm, int iteration) {
  require_world(comm);
  if (!resumed_) fail(PCM_ERR_STATE, "call PCM_Resume before PCM_Checkpoint");
  int code = iteration < 0 ? PCM_ERR_ARG : PCM_SUCCESS;
  std::string msg = code ? fmt::format("iteration {} is negative", iteration) : "";
  agree(world_.comm(), code, msg);
  const double t0 = wtime();
  // One version in flight at most: the last one is committed first (its failure is this call's,
  // and then nothing more is written).
  settle_checkpoint();
  // A restarted job has this version already (rank 0 decides for all: a process spawned later
  // knows the restart too, but one answer leaves no doubt).
  // So has a job whose PCM_Adapt wrote this iteration's version by itself in this same call.
  int skip = iteration == restart_.iteration ||
                     (iteration == checkpoint_.label && iteration_ == checkpoint_.at_call)
                 ? 1
                 : 0;
  mpi_check(MPI_Bcast(&skip, 1, MPI_INT, 0, world_.comm()), "MPI_Bcast");
  if (skip) return PCM_SUCCESS;
  write_version(iteration, t0);
  return PCM_SUCCESS;
}

int Runtime::checkpoint_wait(MPI_Comm comm) {
  require_world(comm);
  settle_checkpoint();
  return PCM_SUCCESS;
}

// The version is labelled with the iteration this PCM_Adapt call begins, counted as PCM_Status
// counts them (from the restart's version in a restarted job): the application's own
// PCM_Checkpoint(world, it) of the same loop uses the same numbers when it counts from 0.
void Runtime::write_due_checkpoint() {
  const std::int64_t id = checkpoint_.due;  // > 0: pcmd's request; -1: the schedule's
  checkpoint_.due = 0;
  if (id > 0 && world_.rank() == 0) checkpoint_.done = id;  // asked once: a failure is not retried
  const std::int64_t label = std::max<std::int64_t>(restart_.iteration, 0) + iteration_ - 1;
  if (label == restart_.iteration || label > INT_MAX) return;  // saved already / cannot name it
  const std::string what = id > 0 ? fmt::format("checkpoint {} asked by pcmd", id)
                                  : fmt::format("scheduled checkpoint (PCM_CHECKPOINT_MTBF={})",
                                                settings_.checkpoint_mtbf_s);
  const double t0 = wtime();
  settle_quietly("before a new version");
  try {
    write_version(static_cast<int>(label), t0);
    checkpoint_.label = label;
    checkpoint_.at_call = iteration_;
    if (world_.rank() == 0)
      plog()->info("[rank 0] {}: version of iteration {} {} in {:.3f} s", what, label,
                   settings_.checkpoint_async ? "staged" : "written", wtime() - t0);
  } catch (const Error& e) {
    // Agreed (write_version's steps are): the job goes on; pcmd still shows a request. The
    // schedule tries again an interval later (a tenth of the MTBF while no cost is known).
    checkpoint_.last_end = wtime();
    if (checkpoint_.interval < 0)
      checkpoint_.interval = static_cast<double>(settings_.checkpoint_mtbf_s) / 10;
    if (world_.rank() == 0) plog()->warn("[rank 0] {}, not written: {}", what, e.what());
  }
}

void Runtime::note_checkpoint(double seconds) {
  AutoCheckpoints& c = checkpoint_;
  c.cost =
      c.cost < 0 ? seconds : (c.cost + seconds) / 2;  // the last ones, the newest weighing most
  c.last_end = wtime();
  if (settings_.checkpoint_mtbf_s <= 0) return;
  const double mtbf = static_cast<double>(settings_.checkpoint_mtbf_s);
  c.interval = daly_interval(c.cost, mtbf);
  if (world_.rank() == 0) link_.set_checkpoint_schedule(c.cost, c.interval, mtbf);
}

}  // namespace pcm::detail
