// disk_work.h — how a request's disk part is carried out: DataWork (the work and what follows it
// on the request loop) and DiskWork, the interface the data ops use and the data thread implements
// (at once for a request handled directly, on the data thread for one the request loop serves).
#pragma once

#include <functional>
#include <vector>

#include "protocol.h"

namespace pcm::daemon {

// A request's disk part and what the request loop does with its result.
struct DataWork {
  // On the data thread: disk and HDF5 only, never the job table. Returns the reply (and fills
  // reply_data); a pcm::Error becomes an error reply.
  std::function<proto::json(std::vector<char>& reply_data)> run;
  // On the request loop, with the reply of a run that succeeded (may be empty).
  std::function<void(proto::json& reply)> then;
};

class DiskWork {
 public:
  virtual ~DiskWork() = default;
  // A request's disk part: its reply now, or {"ok", "deferred"} when the reply follows from the
  // data thread.
  virtual proto::json defer(DataWork work, std::vector<char>& reply_data) = 0;
  // Disk work nobody waits for (a layout kept for a restart), in order with the rest.
  virtual void background(std::function<void()> f) = 0;
};

}  // namespace pcm::daemon
