// pcm.hpp — a header-only C++17 wrapper over PCM's C API (pcm.h): RAII handles, exceptions.
//
// Every call that fails throws pcm::Error, whose code() is the PCM_ERR_* value and whose what()
// is PCM_Last_error()'s text. Expected outcomes are not errors: Session::adapt() returns
// Adapt::Retired when this process leaves the world. Destructors never throw and print nothing.
// The calls keep the C API's collective/local nature (see pcm.h); a collective call throws the
// same Error on every process, because the C call returns the same code everywhere.
#ifndef PCM_HPP
#define PCM_HPP

#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "pcm.h"

namespace pcm {

/// A failed PCM call: code() is the PCM_ERR_* value, what() the detailed message.
class Error : public std::runtime_error {
 public:
  /// An error with a PCM_ERR_* code and its message.
  Error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The PCM_ERR_* value.
  int code() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {
/// Throws pcm::Error if rc is negative (PCM_Last_error's text, else PCM_Error_string's); else rc.
inline int check(int rc) {
  if (rc >= 0) return rc;
  const char* msg = PCM_Last_error();
  throw Error(rc, msg && *msg ? msg : PCM_Error_string(rc));
}
/// Throws pcm::Error(PCM_ERR_MPI) if an MPI call failed.
inline void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw Error(PCM_ERR_MPI, std::string(call) + " failed");
}
}  // namespace detail

/// The PCM element type of T (char, int, long, float, double, long long, unsigned char).
template <class T>
constexpr PCM_Datatype datatype() {
  using std::is_same_v;
  constexpr int t = is_same_v<T, char>            ? PCM_CHAR
                    : is_same_v<T, int>           ? PCM_INT
                    : is_same_v<T, long>          ? PCM_LONG
                    : is_same_v<T, float>         ? PCM_FLOAT
                    : is_same_v<T, double>        ? PCM_DOUBLE
                    : is_same_v<T, long long>     ? PCM_LONG_LONG
                    : is_same_v<T, unsigned char> ? PCM_BYTE
                                                  : 0;
  static_assert(t != 0, "PCM has no element type for this C++ type");
  return static_cast<PCM_Datatype>(t);
}
/// The same, as a constant.
template <class T>
inline constexpr PCM_Datatype datatype_v = datatype<T>();

/// A map of units x unit_len elements over processes (PCM_Dist), move-only; empty by default.
/// Once registered (Session::register_dist) the library replaces its handle: do not move it then.
class Dist {
 public:
  /// A rank's share: segments, owned units, buffer length in elements (halos included).
  struct Local {
    long segments, units, elements;
  };
  /// One segment: first global unit, number of units, element offset in the rank's buffer.
  struct Segment {
    long first, units, offset;
  };
  /// The map's process count, layout, units, unit_len, block and halo.
  struct Info {
    int size, layout;
    long units, unit_len, block, halo;
  };

  /// An empty map (a spawned process receives its map in Session::resume()).
  Dist() noexcept = default;
  /// Block layout: near-equal contiguous ranges, in rank order.
  static Dist block(long units, long unit_len, long halo, int size) {
    return create(PCM_BLOCK, units, unit_len, 0, halo, size);
  }
  /// Cyclic layout: unit u on rank u % size.
  static Dist cyclic(long units, long unit_len, long halo, int size) {
    return create(PCM_CYCLIC, units, unit_len, 0, halo, size);
  }
  /// Block-cyclic layout: blocks of `block` units dealt round-robin.
  static Dist block_cyclic(long units, long unit_len, long halo, int size, long block) {
    return create(PCM_BLOCK_CYCLIC, units, unit_len, block, halo, size);
  }
  /// Takes ownership of a C handle (NULL gives an empty map).
  explicit Dist(PCM_Dist h) noexcept : h_(h) {}
  /// Move-only: the moved-from map is empty.
  Dist(Dist&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Dist& operator=(Dist&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Dist(const Dist&) = delete;
  Dist& operator=(const Dist&) = delete;
  /// PCM_Dist_free.
  ~Dist() { PCM_Dist_free(&h_); }

  /// True unless empty.
  explicit operator bool() const noexcept { return h_ != nullptr; }
  /// The C handle (for the C API; still owned by this object).
  PCM_Dist handle() const noexcept { return h_; }
  /// The address of the handle, for PCM_Register_dist (the library replaces the map there).
  PCM_Dist* handle_ptr() noexcept { return &h_; }
  /// rank's share of the map.
  Local local(int rank) const {
    Local l{};
    detail::check(PCM_Dist_local(h_, rank, &l.segments, &l.units, &l.elements));
    return l;
  }
  /// Segment i of rank.
  Segment segment(int rank, long i) const {
    Segment s{};
    detail::check(PCM_Dist_segment(h_, rank, i, &s.first, &s.units, &s.offset));
    return s;
  }
  /// The rank that owns global unit `unit`.
  int owner(long unit) const {
    int r = -1;
    detail::check(PCM_Dist_owner(h_, unit, &r));
    return r;
  }
  /// The map's parameters.
  Info info() const {
    Info i{};
    detail::check(PCM_Dist_info(h_, &i.size, &i.layout, &i.units, &i.unit_len, &i.block, &i.halo));
    return i;
  }

 private:
  static Dist create(int layout, long units, long unit_len, long block, long halo, int size) {
    PCM_Dist h = nullptr;
    detail::check(PCM_Dist_create(layout, units, unit_len, block, halo, size, &h));
    return Dist(h);
  }
  PCM_Dist h_ = nullptr;
};

class Session;

/// A process's part of a distributed array: a malloc'd T[] (move-only), freed with free().
/// The library frees and replaces registered buffers with malloc/free semantics, which is why a
/// std::vector cannot be registered as a distributed array. size() is computed on every call
/// from the map and the rank (so it stays right after the library replaced both): hoist it out
/// of hot loops. Do not move a registered Buffer (the library keeps its address).
template <class T>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "PCM moves buffers as bytes");

 public:
  /// An empty buffer (a spawned process receives its part in Session::resume()).
  Buffer() noexcept = default;
  /// rank's part of dist, zero-filled; sized by dist and rank until registered.
  Buffer(const Dist& dist, int rank) : dist_(&dist), rank_(rank) {
    const long n = dist.local(rank).elements;
    p_ = std::calloc(n > 0 ? static_cast<std::size_t>(n) : 1, sizeof(T));
    if (!p_) throw Error(PCM_ERR_INTERNAL, "out of memory for a buffer");
  }
  /// Move-only: the moved-from buffer is empty.
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    swap(o);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  /// free() of whatever buffer it holds now.
  ~Buffer() { std::free(p_); }

  /// The elements (nullptr when empty).
  T* data() noexcept { return static_cast<T*>(p_); }
  /// The elements (nullptr when empty).
  const T* data() const noexcept { return static_cast<const T*>(p_); }
  /// Length in elements, halos included: the map's local elements for the current rank.
  std::size_t size() const;
  /// Element i (unchecked).
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  /// Element i (unchecked).
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  /// First element.
  T* begin() noexcept { return data(); }
  /// Past the last element.
  T* end() { return data() + size(); }
  /// The address of the pointer, for PCM_Register_dist (the library replaces the buffer there).
  void** handle_ptr() noexcept { return &p_; }

 private:
  friend class Session;
  void swap(Buffer& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(dist_, o.dist_);
    std::swap(session_, o.session_);
    std::swap(rank_, o.rank_);
  }
  void* p_ = nullptr;  // void*, not T*: the library writes it through a void**
  const Dist* dist_ = nullptr;
  const Session* session_ = nullptr;  // set by register_dist: the rank follows the world
  int rank_ = -1;
};

/// A halo-exchange plan for one rank of a map (PCM_Halo), move-only. Rebuild it after
/// Adapt::Reshaped; destroy it before the Session ends (it holds MPI datatypes).
class Halo {
 public:
  /// The plan for `rank` of dist: `width` ghost units each side of every segment, of `type`.
  Halo(const Dist& dist, int rank, long width, PCM_Datatype type) {
    detail::check(PCM_Halo_create(dist.handle(), rank, width, type, &h_));
  }
  /// The same for elements of type T.
  template <class T>
  static Halo of(const Dist& dist, int rank, long width) {
    return Halo(dist, rank, width, datatype_v<T>);
  }
  /// Move-only: the moved-from plan is empty.
  Halo(Halo&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Halo& operator=(Halo&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Halo(const Halo&) = delete;
  Halo& operator=(const Halo&) = delete;
  /// PCM_Halo_free.
  ~Halo() { PCM_Halo_free(&h_); }

  /// Fills buf's ghost units from their owners over comm (every rank calls it with its plan).
  void exchange(void* buf, MPI_Comm comm) { detail::check(PCM_Halo_exchange(h_, buf, comm)); }
  /// The same for a Buffer.
  template <class T>
  void exchange(Buffer<T>& buf, MPI_Comm comm) {
    exchange(static_cast<void*>(buf.data()), comm);
  }
  /// The C handle (still owned by this object).
  PCM_Halo handle() const noexcept { return h_; }

 private:
  PCM_Halo h_ = nullptr;
};

/// What Session::adapt() did: nothing, moved this process to a new world, or retired it.
enum class Adapt { None, Reshaped, Retired };

/// MPI and PCM for this process (RAII): the PCM world, registrations, adapt and checkpoints.
class Session {
 public:
  /// MPI_PCM_Init, then PCM_Init on MPI_COMM_WORLD (on failure MPI is finalized, then it throws).
  Session(int& argc, char**& argv) {
    int rc = MPI_PCM_Init(&argc, &argv);
    if (rc == PCM_SUCCESS) rc = PCM_Init(&world_);
    if (rc != PCM_SUCCESS) {
      const Error e(rc, PCM_Last_error());
      PCM_Finalize(MPI_COMM_NULL);
      throw e;
    }
  }
  /// Neither copyable nor movable (the library keeps the world's address only transiently, but
  /// registered buffers keep this object's).
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /// PCM_Finalize unless finalize() or exit_retired() ran; never throws.
  ~Session() {
    if (!done_) PCM_Finalize(world_);
  }

  /// The current PCM world (MPI_COMM_NULL once retired).
  MPI_Comm comm() const noexcept { return world_; }
  /// This process's rank in the world (-1 once retired).
  int rank() const {
    int r = -1;
    if (world_ != MPI_COMM_NULL) detail::check_mpi(MPI_Comm_rank(world_, &r), "MPI_Comm_rank");
    return r;
  }
  /// The world's size (0 once retired).
  int size() const {
    int n = 0;
    if (world_ != MPI_COMM_NULL) detail::check_mpi(MPI_Comm_size(world_, &n), "MPI_Comm_size");
    return n;
  }
  /// How this process came to be: PCM_STARTED, PCM_MIGRATED, PCM_SPLITTED, PCM_RESTARTED...
  int origin() const { return detail::check(PCM_Process_Status()); }

  /// Registers a distributed array: buf laid out by dist (both replaced by the library). Local.
  template <class T>
  void register_dist(const char* name, Buffer<T>& buf, Dist& dist) {
    detail::check(PCM_Register_dist(name, buf.handle_ptr(), datatype_v<T>, dist.handle_ptr()));
    buf.dist_ = &dist;
    buf.session_ = this;
  }
  /// Registers one value every process holds alike. Local.
  template <class T>
  void register_value(const char* name, T& v) {
    register_value(name, &v, 1);
  }
  /// Registers a replicated vector's size() elements: do not resize it afterwards. Local.
  template <class T>
  void register_value(const char* name, std::vector<T>& v) {
    register_value(name, v.data(), v.size());
  }
  /// Registers n replicated elements at data. Local.
  template <class T>
  void register_value(const char* name, T* data, std::size_t n) {
    detail::check(PCM_Register_value(name, data, datatype_v<T>, static_cast<long>(n)));
  }
  /// Registers one value of this process's own. Local.
  template <class T>
  void register_local(const char* name, T& v) {
    register_local(name, &v, 1);
  }
  /// Registers a per-process vector's size() elements: do not resize it afterwards. Local.
  template <class T>
  void register_local(const char* name, std::vector<T>& v) {
    register_local(name, v.data(), v.size());
  }
  /// Registers n per-process elements at data. Local.
  template <class T>
  void register_local(const char* name, T* data, std::size_t n) {
    detail::check(PCM_Register_local(name, data, datatype_v<T>, static_cast<long>(n)));
  }

  /// PCM_Resume: brings this process to the registered state, whatever its origin. Collective.
  void resume() { detail::check(PCM_Resume(&world_)); }
  /// PCM_Adapt: call at the top of every iteration; throws on an (agreed) error. Collective.
  Adapt adapt() {
    const int s = detail::check(PCM_Adapt(&world_));
    return s == PCM_RESHAPED ? Adapt::Reshaped : s == PCM_RETIRED ? Adapt::Retired : Adapt::None;
  }
  /// PCM_Checkpoint: saves and commits every registered item for `iteration`. Collective.
  void checkpoint(int iteration) { detail::check(PCM_Checkpoint(world_, iteration)); }
  /// PCM_Exit in a retired process: waits for the job's end, finalizes MPI. Local.
  void exit_retired() {
    const int rc = PCM_Exit();
    if (rc != PCM_ERR_STATE) done_ = true;  // PCM_ERR_STATE: not retired, the destructor ends it
    detail::check(rc);
  }
  /// PCM_Finalize, reporting its error (the destructor then does nothing). Collective.
  void finalize() {
    done_ = true;
    const int rc = PCM_Finalize(std::exchange(world_, MPI_COMM_NULL));
    detail::check(rc);
  }

 private:
  MPI_Comm world_ = MPI_COMM_WORLD;
  bool done_ = false;
};

template <class T>
std::size_t Buffer<T>::size() const {
  if (!p_ || !dist_ || !*dist_) return 0;
  const int rank = session_ ? session_->rank() : rank_;
  if (rank < 0) return 0;
  return static_cast<std::size_t>(dist_->local(rank).elements);
}

/// Gathers every rank's owned units of buf (laid out by dist) on root, in global order; returns
/// them there (units * unit_len elements) and an empty vector elsewhere. Collective over comm.
template <class T>
std::vector<T> gather(const Dist& dist, const Buffer<T>& buf, int root, MPI_Comm comm) {
  int rank = -1;
  detail::check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  std::vector<T> all;
  if (rank == root && dist) {  // an empty map: PCM_Dist_gather fails alike on every rank
    const Dist::Info i = dist.info();
    all.resize(static_cast<std::size_t>(i.units * i.unit_len));
  }
  detail::check(PCM_Dist_gather(dist.handle(), buf.data(), datatype_v<T>, root, comm,
                                rank == root ? all.data() : nullptr));
  return all;
}

}  // namespace pcm

#endif  // PCM_HPP
