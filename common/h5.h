// h5.h — small RAII and helper layer over the HDF5 C API, shared by pcmd (store, checkpoints)
// and the checkpoint shards that ranks write (shard.h).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "namespaces.h"

namespace pcm::common::h5 {

// Owns one HDF5 identifier; closes it with the matching H5?close.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  H5Id(H5Id&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  // Gives up ownership, for a close whose result the caller checks.
  hid_t release() {
    hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// The native HDF5 type of a PCM_Datatype; throws pcm::Error(PCM_ERR_ARG) for an unknown one.
hid_t native_type(int type);
// Turns off HDF5's printing of error stacks (pcmd reports errors itself). Idempotent.
void quiet_hdf5();
bool link_exists(hid_t loc, const std::string& name);
// The names of an open group's links, in name order; throws pcm::Error(PCM_ERR_INTERNAL) naming
// `what` when HDF5 cannot list them.
std::vector<std::string> link_names(hid_t group, const std::string& what);
void write_string_attr(hid_t obj, const char* name, const std::string& value);
void write_int_attr(hid_t obj, const char* name, std::int64_t value);  // a 64-bit integer

struct Meta {
  int type = 0;             // a PCM_Datatype value; 0 when none of ours
  std::uint64_t count = 0;  // elements
};
// Type and element count of an open 1-D dataset.
Meta dataset_meta(hid_t dset);

}  // namespace pcm::common::h5
