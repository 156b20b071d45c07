// commands.h — the command desk: the one path by which a reconfiguration command is queued for a
// job, whoever asks (an operator's request, a drain's step, the policy's decision). It validates
// the command against the job, places new processes through the inventory, and queues it.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "command.h"
#include "inventory.h"
#include "jobs.h"
#include "ops.h"
#include "policy.h"
#include "protocol.h"

namespace pcm::daemon {

class CommandDesk {
 public:
  enum class From { kOperator, kDrain, kPolicy };
  // Where new processes go: a host the sender named ("": none) and a placement ("spread" or
  // "concentrate"; none: the job's, else pcmd's).
  // avoid: no process of the new world goes there (the policy's leaving a node for Slurm's
  // queue): a command that would keep one there is respawned and placed elsewhere.
  struct Where {
    std::optional<std::string> host;
    std::optional<std::string> placement;
    std::optional<std::string> avoid;
  };

  // Where the new processes of a command do not fit in the inventory, more hosts may be asked
  // for (pcmd --resources slurm: slurm_growth.h); without one, such a command is refused.
  class Growth {
   public:
    virtual ~Growth() = default;
    // Takes command c of job over (validated, not placed; it lacks `missing` slots): it waits
    // for more hosts (Job::allocating), then comes back through request(). Returns the reply
    // ("allocating": true). Throws pcm::Error (refused) when no more hosts can be asked for.
    virtual proto::json grow(Job& job, const proto::Command& c, const Where& where, From from,
                             int missing) = 0;
    // c is about to be queued: it may be made a respawn (Command::respawn), so that the hosts
    // the job leaves are left by every process and can be given back.
    virtual void before_queue(const Job& job, proto::Command& c) = 0;
    // For the policy: whether host goes back to Slurm once no job uses it, and the queue as last
    // read (nothing: not read yet, or not watched).
    virtual bool releasable(const std::string& host) const = 0;
    virtual std::optional<PolicyQueue> queue() const = 0;
  };

  // policy: --policy auto's (null: manual), told of operators' commands.
  CommandDesk(JobTable& jobs, Inventory& inventory, Policy* policy,
              std::shared_ptr<spdlog::logger> log);

  // Queues c for job: c has its kind, why and what its kind needs (migrate: rank, and host when
  // named in where; split: rank, into; merge: ranks; resize: size). Throws pcm::Error (refused)
  // when the job cannot take it. Reply: command, host, hosts, size, text.
  proto::json request(Job& job, proto::Command c, const Where& where, From from);

  void set_growth(Growth* growth) { growth_ = growth; }

  // The operators' requests.
  proto::json migrate(const ops::Migrate& r);
  proto::json split(const ops::Split& r);
  proto::json merge(const ops::Merge& r);
  proto::json resize(const ops::Resize& r);

  // --policy auto: one round of the policy's decisions (every second).
  void policy_round();

  // The counter that numbers commands (the job table on disk).
  std::int64_t next_command() const { return next_command_; }
  void take_next_command(std::int64_t n) { next_command_ = std::max(next_command_, n); }

 private:
  proto::json from_operator(const ops::CommandFields& f, proto::Command c);
  // Fills a migration's target or a reshape's new world (validated against the job). Returns
  // the slots missing for the new processes when there is a Growth to ask for them (0: placed).
  int place_migration(Job& job, proto::Command& c, const Where& where);
  int place_reshape(Job& job, proto::Command& c, const Where& where);
  // The world after c where c names no host per new rank (a migration, a merge, a shrinking
  // resize), which libpcm needs should it respawn the whole world (Command::respawn).
  void fill_world_after(const Job& job, proto::Command& c) const;
  proto::json queue(Job& job, proto::Command c, From from);

  JobTable& jobs_;
  Inventory& inventory_;
  Policy* policy_;
  Growth* growth_ = nullptr;
  std::shared_ptr<spdlog::logger> log_;
  std::int64_t next_command_ = 1;
};

}  // namespace pcm::daemon
