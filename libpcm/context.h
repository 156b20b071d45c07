// context.h — what the owners of libpcm's mechanisms (checkpointer.h, background_split.h) work in:
// the settings, the link to pcmd, the job, the world, the registrations and the restart's state,
// all held by Runtime (runtime.h), which outlives them. References only: an owner never reaches
// back into Runtime.
#pragma once

#include <string>

#include "daemon_link.h"
#include "registry.h"
#include "restart_state.h"
#include "settings.h"
#include "world.h"

namespace pcm::lib {

struct Context {
  const Settings& settings;
  DaemonLink& link;
  const std::string& job;  // set by PCM_Init (or the join of a spawned process)
  World& world;
  Registry& registry;
  RestartState& restart;
};

}  // namespace pcm::lib
