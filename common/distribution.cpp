// distribution.cpp — regular, split and merged ownership maps, and the plan between two maps.
#include "distribution.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

using nlohmann::json;

namespace {

// Appends [first, first+count) to a rank's list, joining it to the previous segment if adjacent.
void append(std::vector<Segment>& list, std::int64_t first, std::int64_t count) {
  if (count <= 0) return;
  if (!list.empty() && list.back().first + list.back().count == first) {
    list.back().count += count;
  } else {
    list.push_back({first, count});
  }
}

}  // namespace

Distribution Distribution::regular(Layout layout, std::int64_t units, std::int64_t unit_len,
                                   std::int64_t block, std::int64_t halo, int size) {
  if (units < 1) fail(PCM_ERR_ARG, "a distribution needs at least one unit (got {})", units);
  if (units > (std::int64_t{1} << 40) || unit_len > (std::int64_t{1} << 40) || halo > (1 << 20))
    fail(PCM_ERR_ARG, "distribution parameters too large");
  if (unit_len < 1) fail(PCM_ERR_ARG, "unit length {} must be at least 1", unit_len);
  if (halo < 0) fail(PCM_ERR_ARG, "halo {} must not be negative", halo);
  if (size < 1) fail(PCM_ERR_ARG, "a distribution needs at least one process (got {})", size);
  Distribution d;
  d.layout_ = layout;
  d.units_ = units;
  d.unit_len_ = unit_len;
  d.halo_ = halo;
  d.block_ = 1;
  d.owned_.assign(static_cast<std::size_t>(size), {});
  switch (layout) {
    case Layout::kBlock: {
      std::int64_t base = units / size, extra = units % size;
      for (int r = 0; r < size; ++r)
        append(d.owned_[r], r * base + std::min<std::int64_t>(r, extra),
               base + (r < extra ? 1 : 0));
      break;
    }
    case Layout::kCyclic:
      for (std::int64_t u = 0; u < units; ++u) append(d.owned_[u % size], u, 1);
      break;
    case Layout::kBlockCyclic: {
      if (block < 1) fail(PCM_ERR_ARG, "block size {} must be at least 1", block);
      d.block_ = block;
      for (std::int64_t k = 0; k * block < units; ++k)
        append(d.owned_[k % size], k * block, std::min(block, units - k * block));
      break;
    }
    default:
      fail(PCM_ERR_ARG, "unknown layout {}", static_cast<int>(layout));
  }
  d.index();
  return d;
}

Distribution Distribution::resized(int size) const {
  Layout l = layout_ == Layout::kIrregular ? Layout::kBlock : layout_;
  return regular(l, units_, unit_len_, block_, halo_, size);
}

Distribution Distribution::split(int rank, int into) const {
  if (rank < 0 || rank >= size()) fail(PCM_ERR_ARG, "rank {} is not in [0, {})", rank, size());
  if (into < 2) fail(PCM_ERR_ARG, "a split needs at least 2 parts (got {})", into);
  Distribution d = *this;
  std::vector<std::vector<Segment>> pieces(static_cast<std::size_t>(into));
  std::int64_t n = local_units(rank), base = n / into, extra = n % into;
  int piece = 0;
  std::int64_t room = base + (0 < extra ? 1 : 0);
  for (const Segment& s : owned_[rank]) {
    std::int64_t first = s.first, left = s.count;
    while (left > 0) {
      while (room == 0 && piece + 1 < into) {
        ++piece;
        room = base + (piece < extra ? 1 : 0);
      }
      std::int64_t take = piece + 1 == into ? left : std::min(left, room);
      append(pieces[piece], first, take);
      first += take;
      left -= take;
      room -= take;
    }
  }
  d.owned_.erase(d.owned_.begin() + rank);
  d.owned_.insert(d.owned_.begin() + rank, pieces.begin(), pieces.end());
  d.layout_ = Layout::kIrregular;
  d.index();
  if (layout_ != Layout::kIrregular && d == resized(d.size())) d.layout_ = layout_;
  return d;
}

Distribution Distribution::without_halo() const {
  Distribution d = *this;
  d.halo_ = 0;
  d.index();
  return d;
}

Distribution Distribution::permuted(const std::vector<int>& new_rank) const {
  if (new_rank.size() != owned_.size())
    fail(PCM_ERR_ARG, "a permutation of {} ranks has {} entries", owned_.size(), new_rank.size());
  Distribution d = *this;
  std::vector<bool> taken(owned_.size(), false);
  bool identity = true;
  for (std::size_t r = 0; r < owned_.size(); ++r) {
    const int to = new_rank[r];
    if (to < 0 || to >= size() || taken[static_cast<std::size_t>(to)])
      fail(PCM_ERR_ARG, "rank {} -> {} is not part of a permutation", r, to);
    taken[static_cast<std::size_t>(to)] = true;
    d.owned_[static_cast<std::size_t>(to)] = owned_[r];
    identity = identity && to == static_cast<int>(r);
  }
  if (identity) return d;
  d.layout_ = Layout::kIrregular;
  d.index();
  return d;
}

Distribution Distribution::merge(const std::vector<int>& ranks,
                                 std::vector<int>* new_rank_of) const {
  if (ranks.size() < 2) fail(PCM_ERR_ARG, "a merge needs at least two ranks");
  std::vector<bool> merged(static_cast<std::size_t>(size()), false);
  for (int r : ranks) {
    if (r < 0 || r >= size()) fail(PCM_ERR_ARG, "rank {} is not in [0, {})", r, size());
    if (merged[r]) fail(PCM_ERR_ARG, "rank {} is listed twice", r);
    merged[r] = true;
  }
  // Groups of old ranks that become one new rank each: the merged set, and every other rank.
  std::vector<std::vector<int>> groups;
  int merged_group = -1;
  for (int r = 0; r < size(); ++r) {
    if (!merged[r]) {
      groups.push_back({r});
    } else if (merged_group < 0) {
      merged_group = static_cast<int>(groups.size());
      groups.push_back({r});
    } else {
      groups[merged_group].push_back(r);
    }
  }
  std::vector<std::vector<Segment>> lists;
  for (const auto& g : groups) {
    std::vector<Segment> all;
    for (int r : g) all.insert(all.end(), owned_[r].begin(), owned_[r].end());
    std::sort(all.begin(), all.end(),
              [](const Segment& a, const Segment& b) { return a.first < b.first; });
    std::vector<Segment> joined;
    for (const Segment& s : all) append(joined, s.first, s.count);
    lists.push_back(std::move(joined));
  }
  // Rank order follows the data: by first unit; ranks without units last, in old order.
  std::vector<std::size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](std::size_t g) {
    return std::make_tuple(lists[g].empty() ? INT64_MAX : lists[g][0].first, groups[g][0]);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  Distribution d = *this;
  d.owned_.clear();
  if (new_rank_of) new_rank_of->assign(static_cast<std::size_t>(size()), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    d.owned_.push_back(lists[order[i]]);
    if (new_rank_of)
      for (int r : groups[order[i]]) (*new_rank_of)[r] = static_cast<int>(i);
  }
  d.layout_ = Layout::kIrregular;
  d.index();
  if (layout_ != Layout::kIrregular && d == resized(d.size())) d.layout_ = layout_;
  return d;
}

std::int64_t Distribution::local_units(int rank) const {
  std::int64_t n = 0;
  for (const Segment& s : owned_.at(rank)) n += s.count;
  return n;
}

std::int64_t Distribution::local_elements(int rank) const {
  const auto& list = owned_.at(rank);
  return (local_units(rank) + 2 * halo_ * static_cast<std::int64_t>(list.size())) * unit_len_;
}

std::int64_t Distribution::segment_offset(int rank, std::size_t i) const {
  const auto& list = owned_.at(rank);
  if (i >= list.size())
    fail(PCM_ERR_ARG, "rank {} has {} segments, not {}", rank, list.size(), i + 1);
  std::int64_t units = halo_;
  for (std::size_t k = 0; k < i; ++k) units += list[k].count + 2 * halo_;
  return units * unit_len_;
}

void Distribution::index() {
  starts_.clear();
  start_owner_.clear();
  start_offset_.clear();
  std::vector<std::tuple<std::int64_t, int, std::int64_t>> all;
  for (int r = 0; r < size(); ++r) {
    std::int64_t units = halo_;
    for (const Segment& s : owned_[r]) {
      all.emplace_back(s.first, r, units * unit_len_);
      units += s.count + 2 * halo_;
    }
  }
  std::sort(all.begin(), all.end());
  for (auto& [first, r, off] : all) {
    starts_.push_back(first);
    start_owner_.push_back(r);
    start_offset_.push_back(off);
  }
}

std::int64_t Distribution::unit_offset(std::int64_t unit, int* owner_out) const {
  if (unit < 0 || unit >= units_) fail(PCM_ERR_ARG, "unit {} is not in [0, {})", unit, units_);
  auto it = std::upper_bound(starts_.begin(), starts_.end(), unit);
  std::size_t k = static_cast<std::size_t>(it - starts_.begin()) - 1;
  if (owner_out) *owner_out = start_owner_[k];
  return start_offset_[k] + (unit - starts_[k]) * unit_len_;
}

int Distribution::owner(std::int64_t unit) const {
  int o = -1;
  unit_offset(unit, &o);
  return o;
}

void Distribution::validate() const {
  std::vector<std::pair<std::int64_t, std::int64_t>> all;
  for (int r = 0; r < size(); ++r) {
    std::int64_t prev_end = -1;
    for (const Segment& s : owned_[r]) {
      if (s.count <= 0) fail(PCM_ERR_INTERNAL, "rank {} has an empty segment", r);
      if (s.first <= prev_end) fail(PCM_ERR_INTERNAL, "rank {}'s segments are not in order", r);
      prev_end = s.first + s.count;
      all.emplace_back(s.first, s.count);
    }
  }
  std::sort(all.begin(), all.end());
  std::int64_t next = 0;
  for (auto& [first, count] : all) {
    if (first != next)
      fail(PCM_ERR_INTERNAL, "unit {} is {}", std::min(first, next),
           first > next ? "not owned" : "owned twice");
    next = first + count;
  }
  if (next != units_) fail(PCM_ERR_INTERNAL, "units {}..{} are not owned", next, units_);
}

json Distribution::to_json() const {
  json ranks = json::array();
  for (const auto& list : owned_) {
    json segs = json::array();
    for (const Segment& s : list) segs.push_back({s.first, s.count});
    ranks.push_back(segs);
  }
  return json{{"layout", static_cast<int>(layout_)},
              {"units", units_},
              {"unit_len", unit_len_},
              {"block", block_},
              {"halo", halo_},
              {"ranks", ranks}};
}

namespace {
// A whole number in [lo, hi] (no truncation of floats or of wider integers).
std::int64_t field(const json& j, const char* key, std::int64_t lo, std::int64_t hi) {
  const json& v = j.at(key);
  if (!v.is_number_integer())
    fail(PCM_ERR_ARG, "distribution field \"{}\" must be an integer", key);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    fail(PCM_ERR_ARG, "distribution field \"{}\" is out of range", key);
  std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi) fail(PCM_ERR_ARG, "distribution field \"{}\" = {} is out of range", key, x);
  return x;
}
constexpr std::int64_t kMaxUnits = std::int64_t{1} << 40;
constexpr std::int64_t kMaxHalo = std::int64_t{1} << 20;
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;
}  // namespace

Distribution Distribution::from_json(const json& j) {
  try {
    if (!j.is_object()) fail(PCM_ERR_ARG, "a distribution must be a map");
    Distribution d;
    d.layout_ = static_cast<Layout>(field(j, "layout", 1, 4));
    d.units_ = field(j, "units", 1, kMaxUnits);
    d.unit_len_ = field(j, "unit_len", 1, kMaxUnits);
    d.block_ = field(j, "block", 1, kMaxUnits);
    d.halo_ = field(j, "halo", 0, kMaxHalo);
    const json& ranks = j.at("ranks");
    if (!ranks.is_array() || ranks.empty() || static_cast<std::int64_t>(ranks.size()) > kMaxRanks)
      fail(PCM_ERR_ARG, "distribution field \"ranks\" must be a non-empty array");
    std::int64_t segments = 0;
    for (const auto& segs : ranks) {
      if (!segs.is_array()) fail(PCM_ERR_ARG, "each rank's segments must be an array");
      std::vector<Segment> list;
      for (const auto& s : segs) {
        if (!s.is_array() || s.size() != 2 || !s[0].is_number_integer() ||
            !s[1].is_number_integer())
          fail(PCM_ERR_ARG, "a segment must be [first, count]");
        std::int64_t first = s[0].get<std::int64_t>(), count = s[1].get<std::int64_t>();
        // Checked without overflow: 0 <= first < units, 0 < count <= units - first.
        if (first < 0 || first >= d.units_ || count <= 0 || count > d.units_ - first)
          fail(PCM_ERR_ARG, "segment [{}, {}] is outside [0, {})", first, count, d.units_);
        list.push_back({first, count});
      }
      segments += static_cast<std::int64_t>(list.size());
      d.owned_.push_back(std::move(list));
    }
    // Buffer sizes must fit: (units + 2 * halo * segments) * unit_len < 2^62.
    long double elements =
        (static_cast<long double>(d.units_) + 2.0L * d.halo_ * segments) * d.unit_len_;
    if (elements > static_cast<long double>(std::int64_t{1} << 62))
      fail(PCM_ERR_ARG, "the distribution's buffers would be too large");
    try {
      d.validate();
    } catch (const Error& e) {
      fail(PCM_ERR_ARG, "invalid distribution: {}", e.what());
    }
    d.index();
    return d;
  } catch (const json::exception& e) {
    fail(PCM_ERR_ARG, "malformed distribution: {}", e.what());
  }
}

bool Distribution::operator==(const Distribution& o) const {
  return units_ == o.units_ && unit_len_ == o.unit_len_ && halo_ == o.halo_ && owned_ == o.owned_;
}

std::vector<Transfer> plan(const Distribution& from, const Distribution& to) {
  if (from.units() != to.units() || from.unit_len() != to.unit_len())
    fail(PCM_ERR_ARG, "the two distributions describe different data");
  // Walk both maps' segments in global order at once; each overlap is one transfer.
  struct Run {
    std::int64_t first, end;
    int owner;
  };
  auto runs = [](const Distribution& d) {
    std::vector<Run> v;
    for (int r = 0; r < d.size(); ++r)
      for (const Segment& s : d.segments(r)) v.push_back({s.first, s.first + s.count, r});
    std::sort(v.begin(), v.end(), [](const Run& a, const Run& b) { return a.first < b.first; });
    return v;
  };
  std::vector<Run> a = runs(from), b = runs(to);
  std::vector<Transfer> out;
  std::size_t i = 0, k = 0;
  while (i < a.size() && k < b.size()) {
    std::int64_t lo = std::max(a[i].first, b[k].first), hi = std::min(a[i].end, b[k].end);
    if (lo < hi) out.push_back({a[i].owner, b[k].owner, lo, hi - lo});
    if (a[i].end < b[k].end)
      ++i;
    else if (b[k].end < a[i].end)
      ++k;
    else {
      ++i;
      ++k;
    }
  }
  return out;
}

bool keeps_in_place(const std::vector<Transfer>& plan, const Distribution& from,
                    const Distribution& to, int old_rank, int new_rank) {
  if (old_rank < 0 || old_rank >= from.size() || new_rank < 0 || new_rank >= to.size())
    return false;
  std::int64_t kept = 0;
  for (const Transfer& t : plan) {
    if (t.from != old_rank) continue;
    if (t.to != new_rank) return false;  // a unit leaves: others read it from the old buffer
    // A transfer lies inside one segment of each map, so one offset says where all of it lies.
    if (from.unit_offset(t.first, nullptr) != to.unit_offset(t.first, nullptr)) return false;
    kept += t.count;
  }
  return kept == from.local_units(old_rank);
}

}  // namespace pcm::common
