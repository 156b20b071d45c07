// registry.cpp — bookkeeping of the register-once layer (see registry.h).
#include "registry.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "error.h"
#include "protocol.h"

namespace pcm::lib {

namespace {

const char* kind_name(ItemKind k) {
  switch (k) {
    case ItemKind::kDist:
      return "dist";
    case ItemKind::kValue:
      return "value";
    default:
      return "local";
  }
}

void check_name(const char* name) {
  if (!name) fail(PCM_ERR_ARG, "name is NULL");
  const std::string n(name);
  if (n.size() > Registry::kMaxName || !proto::valid_name(n))
    fail(PCM_ERR_ARG, "name '{}' is invalid (1-{} of A-Z a-z 0-9 . _ -, not starting with . or -)",
         n, Registry::kMaxName);
}

void check_type(int type) {
  if (proto::type_size(type) == 0) fail(PCM_ERR_ARG, "unknown type {}", type);
}

}  // namespace

std::size_t Item::bytes() const { return static_cast<std::size_t>(count) * proto::type_size(type); }

void Registry::add(Item item) {
  for (const Item& o : items_)
    if (o.name == item.name) fail(PCM_ERR_ARG, "'{}' is registered already", item.name);
  items_.push_back(std::move(item));
}

void Registry::add_dist(const char* name, void** buf, int type, PCM_Dist* dist) {
  check_name(name);
  check_type(type);
  if (!buf || !dist) fail(PCM_ERR_ARG, "buf and dist must not be NULL");
  add(Item{name, ItemKind::kDist, type, nullptr, 0, buf, dist});
}

void Registry::add_value(const char* name, void* value, int type, long count, ItemKind kind) {
  check_name(name);
  check_type(type);
  if (count < 0) fail(PCM_ERR_ARG, "count {} is negative", count);
  if (!value && count > 0) fail(PCM_ERR_ARG, "value is NULL");
  add(Item{name, kind, type, value, count, nullptr, nullptr});
}

void Registry::remove(const char* name) {
  if (!name) fail(PCM_ERR_ARG, "name is NULL");
  auto it =
      std::find_if(items_.begin(), items_.end(), [&](const Item& i) { return i.name == name; });
  if (it == items_.end()) fail(PCM_ERR_ARG, "'{}' is not registered", name);
  items_.erase(it);
}

std::vector<const Item*> Registry::of(ItemKind kind) const {
  std::vector<const Item*> v;
  for (const Item& i : items_)
    if (i.kind == kind) v.push_back(&i);
  return v;
}

std::uint64_t Registry::signature() const {
  // FNV-1a over the description: stable across processes and builds.
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : describe()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string Registry::describe() const {
  std::string s;
  for (const Item& i : items_) {
    if (!s.empty()) s += ' ';
    s += i.name + ':' + kind_name(i.kind) + ':' + proto::type_name(i.type);
    if (i.kind != ItemKind::kDist) s += '[' + std::to_string(i.count) + ']';
  }
  return s.empty() ? "nothing" : s;
}

std::string Registry::pack(ItemKind kind) const {
  std::string out;
  for (const Item* i : of(kind))
    if (i->count > 0) out.append(static_cast<const char*>(i->value), i->bytes());
  return out;
}

void Registry::unpack(ItemKind kind, const std::string& bytes) const {
  std::size_t total = 0;
  for (const Item* i : of(kind)) total += i->bytes();
  if (bytes.size() != total)
    fail(PCM_ERR_COUNT, "received {} bytes of {} values, {} registered", bytes.size(),
         kind_name(kind), total);
  std::size_t at = 0;
  for (const Item* i : of(kind)) {
    if (i->count > 0) std::memcpy(i->value, bytes.data() + at, i->bytes());
    at += i->bytes();
  }
}

void Registry::zero(ItemKind kind) const {
  for (const Item* i : of(kind))
    if (i->count > 0) std::memset(i->value, 0, i->bytes());
}

std::string Registry::key(const Item& item) { return "pcm." + item.name; }
std::string Registry::map_key(const Item& item) { return "pcm." + item.name + ".map"; }

// ---- what the register-once layer hands over ----------------------------------------------

Distribution restart_map(const Item& item, const Distribution& from, int saved_nprocs, int size,
                         int damage) {
  if (from.size() != saved_nprocs)
    fail(damage, "'{}': the saved map describes {} processes, the version {}", item.name,
         from.size(), saved_nprocs);
  if (!*item.dist || (*item.dist)->d.size() != size) return from.resized(size);
  const Distribution& to = (*item.dist)->d;
  if (to.units() != from.units() || to.unit_len() != from.unit_len())
    fail(PCM_ERR_ARG,
         "'{}': the map set before PCM_Resume has {} units of {}, the saved array {} of {}",
         item.name, to.units(), to.unit_len(), from.units(), from.unit_len());
  return to;
}

void hand_over(const Item& item, char* buf, Distribution map) {
  std::free(*item.buf);
  *item.buf = buf;
  delete *item.dist;
  *item.dist = new PCM_Dist_s{std::move(map)};
}

std::vector<ArrayRef> arrays_of(const Registry& reg) {
  std::vector<ArrayRef> arrays;
  for (const Item* i : reg.of(ItemKind::kDist)) arrays.push_back({i->buf, i->type, i->dist});
  return arrays;
}

}  // namespace pcm::lib
