// registry.h — what the application registered with PCM_Register_*: names, kinds, types and the
// addresses of its variables; pure bookkeeping (no MPI), so that unit tests can reach it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distribution.h"
#include "pcm_types.h"

typedef struct PCM_Dist_s* PCM_Dist;

// What a PCM_Dist handle points to.
struct PCM_Dist_s {
  pcm::common::Distribution d;
};

namespace pcm::lib {

enum class ItemKind { kDist = 1, kValue = 2, kLocal = 3 };

struct Item {
  std::string name;
  ItemKind kind = ItemKind::kValue;
  int type = 0;
  // kValue, kLocal: count elements at value.
  void* value = nullptr;
  long count = 0;
  // kDist: the application's buffer and map variables.
  void** buf = nullptr;
  PCM_Dist* dist = nullptr;

  std::size_t bytes() const;  // kValue, kLocal: count * element size
};

class Registry {
 public:
  // Longest registered name: the library's keys add a prefix and a suffix (PCM_MAX_KEY in all).
  static constexpr std::size_t kMaxName = 48;

  // Each throws pcm::Error(PCM_ERR_ARG) naming the problem (bad name, NULL, unknown type,
  // negative count, a name registered twice).
  void add_dist(const char* name, void** buf, int type, PCM_Dist* dist);
  void add_value(const char* name, void* value, int type, long count, ItemKind kind);
  void remove(const char* name);

  const std::vector<Item>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  // The items of one kind, in registration order.
  std::vector<const Item*> of(ItemKind kind) const;

  // A hash of the names, kinds, types and counts in order: equal on every process that registered
  // the same things.
  std::uint64_t signature() const;
  // The same as text, for messages ("grid:dist:double it:value:int[1]").
  std::string describe() const;

  // The values of every item of kind, one after another (kValue, kLocal), and back. unpack
  // throws PCM_ERR_COUNT unless bytes has exactly the registered size.
  std::string pack(ItemKind kind) const;
  void unpack(ItemKind kind, const std::string& bytes) const;
  void zero(ItemKind kind) const;

  // The key under which the library stores an item ("pcm." + name), and an array's map.
  static std::string key(const Item& item);
  static std::string map_key(const Item& item);

 private:
  void add(Item item);  // refuses a name registered already

  std::vector<Item> items_;
};

// One distributed array that a split or merge moves: the application's buffer and map variables
// (replaced by the reshape).
struct ArrayRef {
  void** buf;
  int type;
  PCM_Dist* dist;
};
// The registered arrays, in registration order.
std::vector<ArrayRef> arrays_of(const Registry& reg);

// Replaces a registered array's buffer and map with new ones (the library frees what it
// replaces).
void hand_over(const Item& item, char* buf, Distribution map);
// The map a restarted process lays a registered array out by: the one the application set for
// this world's size, else the saved map `from` resized to it. Fails with `damage` when `from` does
// not describe the version's saved_nprocs processes, PCM_ERR_ARG when the two maps disagree.
Distribution restart_map(const Item& item, const Distribution& from, int saved_nprocs, int size,
                         int damage);

}  // namespace pcm::lib
