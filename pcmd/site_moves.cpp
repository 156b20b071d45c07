// site_moves.cpp — the job_move request: what pcmd keeps of a whole job's move between sites.
// pcmd only records it; `pcmctl run`, which launches the job, sees it in the job's status,
// checkpoints the job, ends the run and relaunches it in the site (pcmctl/move.cpp), telling pcmd
// as it goes.
#include "site_moves.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <vector>

#include "error.h"
#include "pcm_types.h"

namespace pcm::daemon {

using proto::json;

namespace {

bool under_way(const Job& job) {
  return job.move && (job.move->state == "asked" || job.move->state == "under way");
}

// Refuses (with why) a move of the job to the site: the site must be known and have a host that
// is up with a free slot, and the job must not run there already.
void check_site(const Job& job, const Inventory& inventory, const std::string& site) {
  std::set<std::string> in_site;
  std::vector<std::string> why;
  bool room = false;
  const json list = inventory.list();  // kept: a range over list().at() would dangle
  for (const json& h : list.at("hosts")) {
    if (h.value("site", "") != site) continue;
    const std::string name = h.value("host", "");
    in_site.insert(name);
    const std::string state = h.value("state", "");
    if (state == "up" && h.value("free", 0) > 0) room = true;
    why.push_back(fmt::format("{} {}", name, state == "up" ? "has no free slot" : state));
  }
  if (in_site.empty())
    fail(PCM_ERR_REFUSED, "job '{}': no host of site '{}' in the inventory (pcmctl host list)",
         job.name, site);
  if (!room)
    fail(PCM_ERR_REFUSED, "job '{}': site '{}' has no host that is up with a free slot ({})",
         job.name, site, fmt::join(why, ", "));
  bool all_there = !job.hosts.empty();
  for (const auto& h : job.hosts) all_there = all_there && in_site.count(h) > 0;
  if (all_there)
    fail(PCM_ERR_REFUSED, "job '{}' runs in site '{}' already ({})", job.name, site,
         fmt::join(job.hosts, ","));
}

}  // namespace

std::string move_off_drain(JobTable& jobs, const Inventory& inventory, Job& job,
                           const std::string& why) {
  if (job.state != JobState::kRunning || !job.supervised || under_way(job)) return "";
  const json list = inventory.list();
  std::map<std::string, std::string> site_of;
  for (const json& h : list.at("hosts")) site_of[h.value("host", "")] = h.value("site", "");
  std::set<std::string> mine;
  for (const auto& h : job.hosts) mine.insert(site_of[h]);
  std::map<std::string, int> room;
  for (const json& h : list.at("hosts"))
    if (h.value("state", "") == "up" && mine.count(h.value("site", "")) == 0)
      room[h.value("site", "")] += h.value("free", 0);
  std::string best;
  for (const auto& [site, free] : room)
    if (free > 0 && (best.empty() || free > room[best])) best = site;
  if (best.empty()) return "";
  job.move = Job::Move{best, "asked", "", std::chrono::steady_clock::now()};
  std::string text = fmt::format("move to site {} asked by the {}", best, why);
  jobs.note(job, text);
  return text;
}

json job_move(JobTable& jobs, const Inventory& inventory, const ops::JobMove& r) {
  Job& job = jobs.find(r.job);
  const std::string site = r.site.value_or(job.move ? job.move->site : "");
  std::string text;
  if (r.action == "supervise") {
    job.supervised = true;
    return json{{"ok", true}, {"move", move_json(job)}, {"text", "supervised"}};
  }
  if (r.action == "stop") {
    // pcmctl run has taken the move over: the run writes a last version and its processes leave
    // (PCM_RETIRED, exit status 75), as for a preemption; pcmctl run relaunches it in the site.
    if (!job.move || job.move->state != "under way" || job.state != JobState::kRunning)
      fail(PCM_ERR_REFUSED, "job '{}' has no move under way to stop for", job.name);
    return jobs.want_checkpoint(job, fmt::format("move to site {}", job.move->site), true, true,
                                true);
  }
  if (r.action == "reshape_stop") {
    if (!job.restart_pending() || job.state != JobState::kRunning)
      fail(PCM_ERR_REFUSED, "job '{}' has no command pending for a restart reshape", job.name);
    job.stopping = Job::Stopping{job.pending.command->id, std::chrono::steady_clock::now()};
    text = fmt::format("the run on {} processes ends for the restart reshape of command {}",
                       job.size, job.pending.command->id);
    jobs.note(job, text);
    return json{{"ok", true}, {"text", text}};
  }
  if (r.action == "reshape_failed") {
    if (!job.restart_pending())
      fail(PCM_ERR_REFUSED, "job '{}' has no command pending for a restart reshape", job.name);
    text = fmt::format("{} failed: {}", job.pending.command->describe(),
                       r.text.value_or("the restart reshape was not carried out"));
    job.last_done_command = job.pending.command->id;
    job.pending.command.reset();
    jobs.note(job, text);
    return json{{"ok", true}, {"text", text}};
  }
  if (r.action == "ask") {
    if (job.state != JobState::kRunning)
      fail(PCM_ERR_REFUSED, "job '{}' is {}: nothing to move", job.name, state_name(job.state));
    if (!job.supervised)
      fail(PCM_ERR_REFUSED,
           "job '{}' does not run under `pcmctl run`, which carries a move out: stop it, copy "
           "its newest version and restart it in site '{}' by hand",
           job.name, site);
    if (under_way(job))
      fail(PCM_ERR_REFUSED, "job '{}': a move to site '{}' is {} already", job.name, job.move->site,
           job.move->state);
    check_site(job, inventory, site);
    job.move = Job::Move{site, "asked", "", std::chrono::steady_clock::now()};
    text = fmt::format("move to site {} asked", site);
  } else {
    if (site.empty()) fail(PCM_ERR_ARG, "job '{}': which site? (field \"site\")", job.name);
    if (!job.move || job.move->site != site)
      job.move = Job::Move{site, "", "", std::chrono::steady_clock::now()};
    job.move->state = r.action == "begin" ? "under way" : r.action;
    // A move that failed before its run stopped leaves the job running: its stop is withdrawn
    // (the version it asked is still written, at the next agreement).
    if (r.action == "failed" && job.checkpoint_wanted && job.checkpoint_wanted->by_move) {
      job.checkpoint_wanted->stop = job.checkpoint_wanted->by_move = false;
      jobs.note(job, fmt::format("stop {} withdrawn: the move failed; the job goes on",
                                 job.checkpoint_wanted->id));
    }
    job.move->text = r.text.value_or("");
    text = r.text ? *r.text : fmt::format("move to site {}: {}", site, job.move->state);
  }
  jobs.note(job, text);
  return json{{"ok", true}, {"move", move_json(job)}, {"text", text}};
}

}  // namespace pcm::daemon
