// split_merge.cpp — Reshaper's split and merge (reshaper.h): the old world sending to a spawned
// one and retiring, the new world receiving, and the survivors of a merge. The new maps are
// planned by reshape.h.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>
#include <utility>

#include "buffer.h"
#include "cma.h"
#include "error.h"
#include "exchange.h"
#include "leftovers.h"
#include "log.h"
#include "protocol.h"
#include "reshape.h"
#include "reshaper.h"
#include "split_guard.h"
#include "world.h"

namespace pcm::lib {

using proto::Command;
using proto::json;

namespace {
std::vector<Distribution> maps_of(const std::vector<ArrayRef>& arrays) {
  std::vector<Distribution> maps;
  for (const ArrayRef& a : arrays) maps.push_back((*a.dist)->d);
  return maps;
}

// A survivor of a merge that keeps all its units at their offsets grows its buffer in place and
// receives only the others' units: every rank drops those self-transfers from moves (the answer
// is a pure function of the maps, the same on every rank). Returns which old ranks do.
// Old ranks whose fresh[r] is set have a new buffer faulted in beforehand (overlap.h): they
// receive every unit there, their own too.
std::vector<bool> drop_in_place(std::vector<Transfer>* moves, const Distribution& from,
                                const Distribution& to, const std::vector<int>& new_of,
                                const std::vector<int>& fresh) {
  std::vector<bool> in_place(static_cast<std::size_t>(from.size()));
  for (int r = 0; r < from.size(); ++r)
    in_place[r] = !fresh[r] && keeps_in_place(*moves, from, to, r, new_of[r]);
  moves->erase(
      std::remove_if(moves->begin(), moves->end(),
                     [&](const Transfer& t) { return in_place[t.from] && t.to == new_of[t.from]; }),
      moves->end());
  return in_place;
}

}  // namespace

// ---- split ---------------------------------------------------------------------------------

// A process of the new world: receive every array the old world sends. The data moves first, then
// what was sent is checked against what the caller expects (the old world must not be left
// waiting for a process that gave up early).
void Reshaper::receive_split(const std::vector<ArrayRef>& arrays, json* extra) {
  const Watchdog::Scope guard = bounds_.bounded("receiving a split's data (spawned process)",
                                                ctx_.world.rank(), ctx_.world.rank() == 0);
  const double t0 = wtime();
  const json ctx = ctx_.world.joining.ctx;
  const json& sent = ctx.at("arrays");
  const std::size_t n = sent.size();
  std::vector<Distribution> from(n), to(n);
  std::vector<int> types(n);
  std::vector<char*> bufs(n, nullptr);
  std::vector<std::vector<Transfer>> moves(n);
  auto free_all = [&] {
    for (char* b : bufs) std::free(b);
  };
  Command cmd;
  bool read = true;
  std::size_t prefaulted = 0;
  try {
    cmd = Command::from_json(ctx.at("command"), ctx.at("old_size").get<int>());
    for (std::size_t i = 0; i < n; ++i) {
      from[i] = Distribution::from_json(sent[i].at("from"));
      to[i] = Distribution::from_json(sent[i].at("to"));
      types[i] = sent[i].at("type").get<int>();
      bufs[i] =
          ctx_.world.joining.prefaulted.take(i, {{"to", sent[i].at("to")}, {"type", types[i]}});
      if (bufs[i])
        ++prefaulted;
      else
        bufs[i] = new_buffer(to[i], ctx_.world.rank(), proto::type_size(types[i]));
      moves[i] = plan(from[i], to[i]);
    }
    const double t_read = wtime();
    for (std::size_t i = 0; i < n && read; ++i)
      read = cma_read(sent[i].at("cma"), moves[i], ctx_.world.rank(), from[i], to[i], bufs[i],
                      proto::type_size(types[i]));
    plog()->debug("[rank {}] split: direct read {:.4f} s ({})", ctx_.world.rank(), wtime() - t_read,
                  read ? "done" : "not possible");
    if (prefaulted > 0 && ctx_.world.rank() == 0)
      plog()->info("[rank 0] split: {} of {} arrays into buffers faulted in during the spawn",
                   prefaulted, n);
  } catch (...) {
    free_all();
    throw;
  }
  // Until the old world's verdict, the split can still be given up (split_guard.h): then this
  // process ends in the guard.
  NewSideGuard* verdict = ctx_.world.joining.verdict.get();
  const Waiter wait = verdict ? verdict->waiter() : Waiter();
  const Waiter* w = verdict ? &wait : nullptr;
  if (!cma_all_read(read, false, ctx_.world.joining.inter.get(), ctx_.world.comm(), w)) {
    for (std::size_t i = 0; i < n; ++i)
      exchange(ctx_.world.joining.inter.get(), from[i].size(), moves[i], -1, ctx_.world.rank(),
               from[i], to[i], identity(to[i].size()), identity(from[i].size()), nullptr, bufs[i],
               types[i], w);
  }
  if (verdict) verdict->await_verdict();
  ctx_.world.joining.verdict.reset();
  ctx_.world.joining.prefaulted.clear();
  reconfig_.t_data = wtime() - t0;
  const double t1 = wtime();
  if (ctx.value("leave", false)) {
    disconnect(ctx_.world.joining.inter);  // the old world leaves the job (send_split)
  } else if (ctx_.world.rank() == 0) {
    retirement_.watch(std::move(ctx_.world.joining.inter), identity(ctx.at("old_size").get<int>()));
  } else {
    ctx_.world.joining.inter.reset();
  }
  reconfig_.done(cmd.id);
  report_reconfigured(cmd, true, "", ctx_.world.rank() == 0 && n > 0 ? to[0].to_json() : json());
  reconfig_.t_spawn = 0;
  reconfig_.t_rebuild = wtime() - t1;
  if (n != arrays.size()) {
    free_all();
    fail(PCM_ERR_ARG, "the old world sent {} arrays, this process expects {}", n, arrays.size());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (types[i] != arrays[i].type) {
      free_all();
      fail(PCM_ERR_TYPE, "the old world sent {} data, not {}", proto::type_name(types[i]),
           proto::type_name(arrays[i].type));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::free(*arrays[i].buf);
    *arrays[i].buf = bufs[i];
    delete *arrays[i].dist;
    *arrays[i].dist = new PCM_Dist_s{std::move(to[i])};
  }
  *extra = ctx.at("extra");
}

// The old world: spawn the new one, let it read (or send it) every array, and retire.
void Reshaper::send_split(const std::vector<ArrayRef>& arrays, const json& extra,
                          const char* command) {
  // Until this process has retired (it parks, or leaves, unbound).
  const Watchdog::Scope guard = bounds_.bounded(*reconfig_.current);
  agree_reshape_args(arrays);
  requests::sweep();  // what an earlier given-up split left running, if it has ended since
  const double t0 = wtime();
  const Command cmd = *reconfig_.current;
  const std::vector<Distribution> next = next_maps(cmd, maps_of(arrays), ctx_.world.size());
  // Spawned in the background already (overlap.h) or now; the application-visible part counts.
  const bool switched = background_.switching();
  const double before = switched ? background_.visible() : 0;
  mpi::Comm inter =
      switched ? background_.take_spawn(cmd) : spawner_.spawn_for(cmd, command, cmd.hosts);
  MPI_Comm_set_errhandler(inter.get(), MPI_ERRORS_RETURN);
  // Processes spawned in the background for another program end now, between the spawn and the
  // old world's end (background_split.h: keep_spawn_of).
  background_.give_up_set_aside();
  reconfig_.t_spawn = before + wtime() - t0;
  const double t1 = wtime();
  reconfig_.cma_token = std::random_device{}() * 4294967296ULL + std::random_device{}();
  json sent = json::array();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    sent.push_back(
        {{"type", arrays[i].type},
         {"from", (*arrays[i].dist)->d.to_json()},
         {"to", next[i].to_json()},
         {"cma", cma_sources(ctx_.world.comm(), ctx_.world.rank(), ctx_.world.size(),
                             *arrays[i].buf, &reconfig_.cma_token, ctx_.settings.split_cma)}});
  }
  json ctx = spawn_context("split", cmd);
  ctx["arrays"] = std::move(sent);
  ctx["extra"] = extra;
  int leave = ctx_.world.parking.split_leaves;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &leave, 1, MPI_INT, MPI_MIN, ctx_.world.comm()),
            "MPI_Allreduce");
  ctx["leave"] = leave == 1;
  ctx["parked"] = leave ? 0
                        : ctx_.world.parking.parked +
                              ctx_.world.size();  // the old world with the others, or nobody
  // Until every old process has done its part, a lost new process sends the split back (where
  // the launcher can let the job outlive it: split_guard.h).
  std::optional<OldSideGuard> lost;
  Waiter spin, gently;
  if (split_can_go_back()) {
    lost.emplace(ctx_.world.comm(), bounds_.split_deadline(), bounds_.lost_probe(life_.iteration));
    spin = lost->waiter();
    gently = lost->waiter(true);
  }
  try {
    background_.await_prefaulted(lost ? &spin : nullptr);  // spawned in the background
    bcast_inter(ctx, true, ctx_.world.rank(), inter.get(), lost ? &spin : nullptr);
    if (!cma_all_read(false, true, inter.get(), MPI_COMM_NULL, lost ? &gently : nullptr)) {
      for (std::size_t i = 0; i < arrays.size(); ++i)
        exchange(inter.get(), next[i].size(), plan((*arrays[i].dist)->d, next[i]),
                 ctx_.world.rank(), -1, (*arrays[i].dist)->d, next[i], identity(next[i].size()),
                 identity(ctx_.world.size()), static_cast<const char*>(*arrays[i].buf), nullptr,
                 arrays[i].type, lost ? &spin : nullptr);
    }
  } catch (const SplitGivenUp&) {
  } catch (const Error& e) {  // an MPI call on the intercommunicator failed at once
    if (!lost) throw;
    lost->give_up(e.what());
  }
  std::string why;
  const bool go_on = !lost || lost->agree(&why);
  if (lost && ctx_.world.rank() == 0)
    OldSideGuard::tell_new_world(inter.get(), go_on ? SplitVerdict::kGoOn : SplitVerdict::kGivenUp);
  if (!go_on) {
    background_.cancel_prefaulted();  // a word that will never come (spawned in the background)
    // Every old process still has its data and its world: the job goes on as it was.
    settle_given_up(std::move(inter), cmd, why);
    fail(PCM_ERR_SPAWN, "the {} was given up: {}", cmd.describe(), why);
  }
  reconfig_.t_data = wtime() - t1;
  reconfig_.t_rebuild = 0;
  for (const ArrayRef& a : arrays) {
    std::free(*a.buf);
    *a.buf = nullptr;
    delete *a.dist;
    *a.dist = nullptr;
  }
  if (!leave) {
    retire(std::move(inter), 0,
           cmd);  // the new world's rank 0 wakes the whole old world at the end
    return;
  }
  // The old world leaves the job now (retirement.h), and with it every process parked so far:
  // each is woken by its waker, here or in a chain of parked ones, and finalizes with its group.
  if (ctx_.world.rank() == 0)
    plog()->info(
        "[rank 0] split: the old world of {} leaves the job with the processes parked so far",
        ctx_.world.size());
  retirement_.wake_all();
  disconnect(inter);  // with the new world's disconnect of its parent (receive_split)
  retire(mpi::Comm(), -1, cmd);
}

// What a given-up split leaves running (leftovers.h): the nonblocking collective a guard's wait
// gave up on (a broadcast, a reduction or the exchange on the intercommunicator: none can be
// cancelled or freed) is an orphan with its memory. Each completes, with an error, once the new
// processes have ended (at the verdict just told, or lost), and is drained here for a bounded
// time, so that the exchange's sends from the application's buffers are over before they go
// back to it. The intercommunicator is freed now: MPI keeps it for what still runs on it
// (MPI_Comm_free: "pending operations ... complete normally").
void Reshaper::settle_given_up(mpi::Comm inter, const Command& cmd, const std::string& why) {
  // Within the reconfiguration's bound: half of what is left of it at most.
  std::chrono::milliseconds bound = kGivenUpDrain;
  if (const auto end = bounds_.watchdog().deadline())
    bound = std::min(bound, std::chrono::duration_cast<std::chrono::milliseconds>(
                                (*end - std::chrono::steady_clock::now()) / 2));
  const std::size_t orphaned = requests::orphans();
  const double t0 = wtime();
  const std::size_t left = requests::drain(bound);
  inter.reset();
  if (left > 0)
    plog()->warn("[rank {}] {} requests of the given-up split still run (kept with their memory)",
                 ctx_.world.rank(), left);
  abandon(cmd, "given up, the job goes on as it was: " + why);
  plog()->debug(
      "[rank {}] split given up: {} orphaned requests, {} left after {:.3f} s; {} libpcm requests "
      "open; VmRSS {} kB",
      ctx_.world.rank(), orphaned, left, wtime() - t0, requests::open(), requests::resident_kb());
}

// The maps and buffers a split or merge starts from must fit this world; every rank gets the same
// answer, so no rank enters the exchange alone.
void Reshaper::agree_reshape_args(const std::vector<ArrayRef>& arrays) {
  int code = PCM_SUCCESS;
  std::string msg;
  for (const ArrayRef& a : arrays) {
    if (!*a.dist || (*a.dist)->d.size() != ctx_.world.size()) {
      code = PCM_ERR_ARG;
      msg = *a.dist ? fmt::format("the map describes {} processes, the world has {}",
                                  (*a.dist)->d.size(), ctx_.world.size())
                    : "dist is NULL";
    } else if (!*a.buf && (*a.dist)->d.local_elements(ctx_.world.rank()) > 0) {
      code = PCM_ERR_ARG;
      msg = "buf is NULL";
    }
    if (code != PCM_SUCCESS) break;
  }
  agree(ctx_.world.comm(), code, msg);
}

// ---- merge ---------------------------------------------------------------------------------

void Reshaper::merge_arrays(const std::vector<ArrayRef>& arrays) {
  const Watchdog::Scope guard = bounds_.bounded(*reconfig_.current);
  agree_reshape_args(arrays);
  const double t0 = wtime();
  const Command cmd = *reconfig_.current;
  std::vector<int> new_of;
  std::vector<Distribution> next = merged_maps(cmd, maps_of(arrays), ctx_.world.size(), &new_of);
  const int new_size =
      static_cast<int>(std::count_if(new_of.begin(), new_of.end(), [](int r) { return r >= 0; }));
  std::vector<int> old_of_new(static_cast<std::size_t>(new_size), -1);
  for (int r = 0; r < ctx_.world.size(); ++r)
    if (new_of[r] >= 0) old_of_new[new_of[r]] = r;
  const int me = new_of[ctx_.world.rank()];
  // newbufs[i] is this survivor's new buffer; grown[i] says it is the old one grown in place
  // (then it is already *arrays[i].buf, and is not freed if the merge fails).
  std::vector<char*> newbufs(arrays.size(), nullptr);
  std::vector<bool> grown(arrays.size(), false);
  // Merged in the background (overlap.h): fresh[i][r] says whether old rank r has a new buffer
  // for array i faulted in beforehand (this rank's is then in newbufs[i]).
  const std::vector<std::vector<int>> fresh =
      background_.take_merge_buffers(arrays, next, me, &newbufs);
  try {
    // On one host the data moves directly between the processes' buffers (one copy, none
    // through MPI); where any process cannot, everyone falls back to MPI together.
    reconfig_.cma_token = std::random_device{}() * 4294967296ULL + std::random_device{}();
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const std::size_t elem = proto::type_size(arrays[i].type);
      const Distribution& from = (*arrays[i].dist)->d;
      std::vector<Transfer> moves = plan(from, next[i]);
      const std::vector<bool> in_place = drop_in_place(&moves, from, next[i], new_of, fresh[i]);
      if (newbufs[i]) {
        // faulted in beforehand
      } else if (me >= 0 && in_place[ctx_.world.rank()]) {
        newbufs[i] = grow_buffer(*arrays[i].buf, next[i], me, elem);
        if (!newbufs[i]) fail(PCM_ERR_INTERNAL, "out of memory to grow a buffer for a merge");
        *arrays[i].buf = newbufs[i];
        grown[i] = true;
      } else if (me >= 0) {
        newbufs[i] = new_buffer(next[i], me, elem);
      }
      // Where every process is on one host, both ends of each transfer move it (cma_merge): the
      // old buffers, then the new ones, are published.
      auto published = [&](const void* buf) {
        return bcast_json(
                   json{{"cma", cma_sources(ctx_.world.comm(), ctx_.world.rank(), ctx_.world.size(),
                                            buf, &reconfig_.cma_token, ctx_.settings.split_cma)}},
                   0, ctx_.world.comm())
            .at("cma");
      };
      const json sources = published(*arrays[i].buf);
      const json targets = published(newbufs[i]);
      int read = !sources.is_null() &&
                 cma_merge(sources, targets, moves, ctx_.world.rank(), me, old_of_new, from,
                           next[i], static_cast<const char*>(*arrays[i].buf), newbufs[i], elem);
      // Until every move is done, every old buffer stays where it is.
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, &read, 1, MPI_INT, MPI_MIN, ctx_.world.comm()),
                "MPI_Allreduce");
      plog()->debug("[rank {}] merge: direct moves {:.4f} s ({}; buffer {})", ctx_.world.rank(),
                    wtime() - t0, read ? "done" : "not possible",
                    me < 0                        ? "left"
                    : grown[i]                    ? "grown in place"
                    : fresh[i][ctx_.world.rank()] ? "faulted in beforehand"
                                                  : "new");
      if (fresh[i][ctx_.world.rank()])
        plog()->info("[rank {}] merge: array {} of {} into a buffer faulted in beforehand",
                     ctx_.world.rank(), i + 1, arrays.size());
      if (read) continue;
      // Plan in new ranks; the exchange addresses each new rank through the old rank that keeps
      // it.
      // (A buffer grown in place sends nothing: all its units stayed.)
      exchange(ctx_.world.comm(), ctx_.world.size(), moves, ctx_.world.rank(), me, from, next[i],
               old_of_new, identity(ctx_.world.size()),
               grown[i] ? nullptr : static_cast<const char*>(*arrays[i].buf), newbufs[i],
               arrays[i].type);
    }
  } catch (...) {
    // A grown buffer is the caller's, still holding its old units where they were.
    for (std::size_t i = 0; i < arrays.size(); ++i)
      if (!grown[i]) std::free(newbufs[i]);
    throw;
  }
  reconfig_.t_spawn = 0;
  reconfig_.t_data = wtime() - t0;
  const double t1 = wtime();
  mpi::Comm nw;
  mpi_check(MPI_Comm_split(ctx_.world.comm(), me >= 0 ? 0 : MPI_UNDEFINED, me, nw.out()),
            "MPI_Comm_split");
  const json layout = me == 0 && !next.empty() ? next[0].to_json() : json();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (!grown[i]) std::free(*arrays[i].buf);
    *arrays[i].buf = newbufs[i];
    delete *arrays[i].dist;
    *arrays[i].dist = me >= 0 ? new PCM_Dist_s{std::move(next[i])} : nullptr;
  }
  const int waker = old_of_new[0];
  if (me < 0) {
    retire(ctx_.world.take(), waker, cmd);  // the old world stays, for the waker's message
    reconfig_.t_rebuild = wtime() - t1;
    return;
  }
  ctx_.world.parking.parked += ctx_.world.size() - new_size;
  if (ctx_.world.rank() == waker) {
    std::vector<int> leavers;
    for (int r = 0; r < ctx_.world.size(); ++r)
      if (new_of[r] < 0) leavers.push_back(r);
    retirement_.watch(ctx_.world.take(), leavers);
  } else {
    ctx_.world.leave();
  }
  adopt_world(std::move(nw));
  reconfig_.done(cmd.id);
  report_reconfigured(cmd, true, "", layout);
  reconfig_.t_rebuild = wtime() - t1;
}

}  // namespace pcm::lib
