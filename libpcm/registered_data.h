// registered_data.h — RegisteredData: what the application registered (registry.h), across the
// processes: checked to be the same everywhere, and a migrated process's state sent by the mover
// and received by its replacement (PCM_Adapt's migrations, PCM_Resume). Definitions:
// registered_data.cpp.
#pragma once

#include <mpi.h>

#include "bounds.h"
#include "context.h"

namespace pcm::lib {

class RegisteredData {
 public:
  // bounds: the replacement's receive is bounded (the mover may stop sending).
  RegisteredData(const Context& ctx, Bounds& bounds) : ctx_(ctx), bounds_(bounds) {}

  // Collective over the world: every process registered the same names, kinds, types and counts.
  void check() const;
  // The mover sends, on the communicator it shares with its replacement (child), a header and
  // the bytes of every item, straight from the application's buffers (rank: its rank in the
  // world the arrays' maps describe); its arrays then go.
  void send_migrated(MPI_Comm merged, int child, int rank) const;
  // The replacement of a migrated process: receives everything the mover sends (whatever it is,
  // so that the mover is never left blocked), then checks it against the registrations and hands
  // it over. Collective over the new world.
  void receive_migrated();

 private:
  Context ctx_;
  Bounds& bounds_;
};

}  // namespace pcm::lib
