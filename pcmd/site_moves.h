// site_moves.h — a whole job's move to another site (issue 26): pcmd records it, `pcmctl run`
// carries it out (pcmctl/move.cpp). See docs/ops/sites.md. It sits on top of the job table and the
// inventory: the table only shows a job's move (move_json, jobs.h), and includes nothing of this.
#pragma once

#include "inventory.h"
#include "jobs.h"
#include "ops.h"

namespace pcm::daemon {

// job_move: an operator's "ask" (refused, with why, unless the job runs under pcmctl run, the
// site is known and has a host that is up with a free slot, and no move is under way), or pcmctl
// run's "supervise", "begin", "done" and "failed". Reply: move, text.
proto::json job_move(JobTable& jobs, const Inventory& inventory, const ops::JobMove& r);

// The policy when a drain has nowhere to put a job's processes in the job's own sites (its whole
// site drained, with --closed-sites): a job under pcmctl run is asked to move whole to the site
// whose hosts that are up have the most free slots. Returns the event ("": nothing asked: not
// supervised, a move under way, or no other site with room).
std::string move_off_drain(JobTable& jobs, const Inventory& inventory, Job& job,
                           const std::string& why);

}  // namespace pcm::daemon
