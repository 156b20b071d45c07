// h5.cpp — helpers over the HDF5 C API: native types, attributes, dataset metadata.
#include "h5.h"

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::common::h5 {

hid_t native_type(int type) {
  switch (type) {
    case PCM_CHAR:
      return H5T_NATIVE_CHAR;
    case PCM_INT:
      return H5T_NATIVE_INT;
    case PCM_LONG:
      return H5T_NATIVE_LONG;
    case PCM_FLOAT:
      return H5T_NATIVE_FLOAT;
    case PCM_DOUBLE:
      return H5T_NATIVE_DOUBLE;
    case PCM_LONG_LONG:
      return H5T_NATIVE_LLONG;
    case PCM_BYTE:
      return H5T_NATIVE_UCHAR;
    default:
      fail(PCM_ERR_ARG, "unknown element type {}", type);
  }
}

// HDF5 prints a stack of errors on every failure unless told not to; pcmd reports its own.
void quiet_hdf5() {
  static bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

bool link_exists(hid_t loc, const std::string& name) {
  return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> link_names(hid_t group, const std::string& what) {
  H5G_info_t info;
  if (H5Gget_info(group, &info) < 0) fail(PCM_ERR_INTERNAL, "cannot list {}", what);
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256];
    if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                           H5P_DEFAULT) < 0)
      fail(PCM_ERR_INTERNAL, "cannot list {}", what);
    out.emplace_back(name);
  }
  return out;
}

void write_string_attr(hid_t obj, const char* name, const std::string& value) {
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Id attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type.get(), value.c_str()) < 0)
    fail(PCM_ERR_INTERNAL, "cannot write attribute {}", name);
}

void write_int_attr(hid_t obj, const char* name, std::int64_t value) {
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Id attr(H5Acreate2(obj, name, H5T_NATIVE_INT64, space.get(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0)
    fail(PCM_ERR_INTERNAL, "cannot write attribute {}", name);
}

// Type and count of an open dataset; type 0 when it is none of ours.
Meta dataset_meta(hid_t dset) {
  Meta m;
  H5Id type(H5Dget_type(dset), H5Tclose);
  for (int t = PCM_CHAR; t <= PCM_BYTE; ++t) {
    if (H5Tequal(type.get(), native_type(t)) > 0) {
      m.type = t;
      break;
    }
  }
  // char and byte, int and long etc. can share a native type; the attribute disambiguates.
  if (H5Aexists(dset, "pcm_type") > 0) {
    H5Id attr(H5Aopen(dset, "pcm_type", H5P_DEFAULT), H5Aclose);
    H5Id atype(H5Aget_type(attr.get()), H5Tclose);
    std::size_t n = H5Tget_size(atype.get());
    std::string s(n, '\0');
    H5Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), n);
    if (H5Aread(attr.get(), mem.get(), s.data()) >= 0) {
      s.resize(std::char_traits<char>::length(s.c_str()));
      for (int t = PCM_CHAR; t <= PCM_BYTE; ++t)
        if (s == proto::type_name(t)) m.type = t;
    }
  }
  H5Id space(H5Dget_space(dset), H5Sclose);
  hsize_t dims[1] = {0};
  if (H5Sget_simple_extent_ndims(space.get()) == 1)
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  m.count = dims[0];
  return m;
}

}  // namespace pcm::common::h5
