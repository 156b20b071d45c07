// registered_data.cpp — RegisteredData (registered_data.h): the registrations checked across the
// world, and a migrated process's state moved from the mover to its replacement.
#include "registered_data.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "buffer.h"
#include "error.h"
#include "mpi_util.h"
#include "protocol.h"

namespace pcm::lib {

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

void RegisteredData::check() const {
  const std::uint64_t h = ctx_.registry.signature();
  std::uint64_t v[2] = {h, ~h};
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MIN, ctx_.world.comm()),
            "MPI_Allreduce");
  // min(h) == max(h) on every process iff all are equal; max(h) = ~min(~h).
  const int code = v[0] == ~v[1] ? PCM_SUCCESS : PCM_ERR_ARG;
  agree(ctx_.world.comm(), code,
        code ? fmt::format("the processes registered different data (rank {}: {})",
                           ctx_.world.rank(), ctx_.registry.describe())
             : "");
}

// The mover sends, on the communicator it shares with its replacement: a header (what follows)
// then the bytes of every item, straight from the application's buffers.
void RegisteredData::send_migrated(MPI_Comm merged, int child, int rank) const {
  json items = json::array();
  for (const Item& i : ctx_.registry.items()) {
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
  for (std::size_t k = 0; k < ctx_.registry.items().size(); ++k) {
    const Item& i = ctx_.registry.items()[k];
    const auto bytes = static_cast<std::size_t>(items[k].at("bytes").get<std::int64_t>());
    send_bytes(i.kind == ItemKind::kDist ? *i.buf : i.value, bytes, child, merged);
  }
  // The replacement has the arrays now; the mover's go, as a split's or merge's leavers' do.
  for (const Item* i : ctx_.registry.of(ItemKind::kDist)) {
    std::free(*i->buf);
    *i->buf = nullptr;
    delete *i->dist;
    *i->dist = nullptr;
  }
}

// The replacement of a migrated process: receive everything the mover sends (whatever it is, so
// that the mover is never left blocked), then check it against the registrations.
void RegisteredData::receive_migrated() {
  // The mover may stop sending: this process, the lowest involved on its side, tells pcmd.
  const Watchdog::Scope guard =
      bounds_.bounded("receiving a migrated process's state", ctx_.world.rank(), true);
  // Pairs with the survivors' agreement in PCM_Adapt.
  agreed(ctx_.world.comm(), [&] {
    if (ctx_.world.migrant.comm == MPI_COMM_NULL) fail(PCM_ERR_STATE, "no mover to receive from");
    long long n = 0;
    mpi_check(MPI_Recv(&n, 1, MPI_LONG_LONG, ctx_.world.migrant.src, kTagMigrate,
                       ctx_.world.migrant.comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
    std::string header(static_cast<std::size_t>(n), '\0');
    recv_bytes(header.data(), header.size(), ctx_.world.migrant.src, ctx_.world.migrant.comm);
    const json items = decode_internal(header).at("items");
    NewBuffers fresh;
    std::vector<char*> data;
    std::vector<Distribution> maps;
    for (const json& h : items) {
      const auto bytes = static_cast<std::size_t>(h.at("bytes").get<std::int64_t>());
      if (h.at("kind").get<int>() == static_cast<int>(ItemKind::kDist)) {
        maps.push_back(Distribution::from_json(h.at("map")));
        const std::size_t elem = proto::type_size(h.at("type").get<int>());
        if (elem == 0 || maps.back().size() <= ctx_.world.rank() ||
            bytes != static_cast<std::size_t>(maps.back().local_elements(ctx_.world.rank())) * elem)
          fail(PCM_ERR_INTERNAL, "the mover's array '{}' does not fit its map",
               h.at("name").get<std::string>());
        // new_buffer: from 4 MiB up, huge pages for the application's array.
        data.push_back(fresh.add(new_buffer(maps.back(), ctx_.world.rank(), elem)));
      } else {
        maps.emplace_back();
        data.push_back(fresh.add(static_cast<char*>(std::malloc(std::max<std::size_t>(1, bytes)))));
      }
      recv_bytes(data.back(), bytes, ctx_.world.migrant.src, ctx_.world.migrant.comm);
    }
    ctx_.world.migrant.owned.reset();
    ctx_.world.migrant.comm = MPI_COMM_NULL;
    // Check, then hand over.
    const auto& reg = ctx_.registry.items();
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

}  // namespace pcm::lib
