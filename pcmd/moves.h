// moves.h — a whole job's move to another site (issue 26): pcmd records it, `pcmctl run` carries
// it out (pcmctl_move.cpp). See docs/ops/sites.md.
#pragma once

#include "inventory.h"
#include "jobs.h"
#include "ops.h"

namespace pcm::detail {

// job_move: an operator's "ask" (refused, with why, unless the job runs under pcmctl run, the
// site is known and has a host that is up with a free slot, and no move is under way), or pcmctl
// run's "supervise", "begin", "done" and "failed". Reply: move, text.
proto::json job_move(JobTable& jobs, const Inventory& inventory, const ops::JobMove& r);

// The job's move as status shows it (null: none asked of this run or its predecessors).
proto::json move_json(const Job& job);

}  // namespace pcm::detail
