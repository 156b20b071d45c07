// leftovers.h — the MPI requests libpcm has started and not yet seen complete, and what a
// reconfiguration that was given up (a split, split_guard.h) or failed (a partner level's
// exchange, partner_copy.h) left running: its orphans.
//
// A nonblocking collective cannot be cancelled, and MPICH 4.0 refuses MPI_Request_free on one
// ("The supplied request was invalid (kind=10)"); a receive from a process that is gone may never
// match. So a request a throwing wait leaves behind is not dropped: it becomes an orphan, kept
// with the memory it reads or writes (and, where that is the last use of it, its communicator)
// until MPI says it is complete — successfully or with an error, which is what MPICH gives a
// request on a connection to a process that has ended. Until then its buffers stay allocated: MPI
// can never write into memory that was given back. sweep() tests the orphans; a given-up split
// drains them (the new processes end at its verdict) and sweeps again at the next reconfiguration.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "mpi_util.h"

namespace pcm::lib::requests {

// How many requests libpcm has started (in the reconfiguration's nonblocking waits and the partner
// level's exchange) that are neither complete nor freed: those in flight and the orphans. Back to
// its value before a reconfiguration once that reconfiguration is over and its orphans are gone.
long open();
void started(long n = 1);  // libpcm started n requests
void ended(long n = 1);    // n of them completed or were freed

// Takes *req (left running: a wait threw) with keep, the memory (and handles) it uses, which go
// once it is complete. *req becomes MPI_REQUEST_NULL. A null request only lets keep go.
void orphan(MPI_Request* req, std::shared_ptr<void> keep);
// Orphans not yet complete.
std::size_t orphans();
// Tests every orphan once (never waits); the complete ones go with their memory. Returns how many
// are left. Cheap when there are none.
std::size_t sweep();
// Sweeps until no orphan is left, for at most bound (1 ms between sweeps). Returns how many are
// left.
std::size_t drain(std::chrono::milliseconds bound);

// Counts req, a request libpcm has just started (started()), and waits for it through wait
// (MPI_Wait where wait is null). Where the wait throws with the request still running, the request
// becomes an orphan with keep (the memory it uses: it must not be freed under MPI).
void wait_counted(MPI_Request* req, const Waiter* wait, std::shared_ptr<void> keep);

// This process's resident set (VmRSS, kB), -1 where /proc does not say: for the debug line a
// given-up split writes (tests/integration/split_giveup_leak.sh reads it).
long resident_kb();

}  // namespace pcm::lib::requests
