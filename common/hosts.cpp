// hosts.cpp — hostfile and Slurm list parsing, and the spread/concentrate placement.
#include "hosts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <unordered_map>

#include "error.h"
#include "pcm_types.h"
#include "protocol.h"

namespace pcm::common {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Digits only (no sign, no spaces); nullopt when empty, not a number or beyond 2^64 - 1.
std::optional<std::uint64_t> parse_uint(std::string_view s) {
  if (s.empty()) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Appends slots to host `name`, or adds the host; the sum stays within kMaxSlots.
void add_slots(std::vector<HostSlots>& hosts, std::unordered_map<std::string, std::size_t>& index,
               std::string_view name, int slots, const std::string& where) {
  auto [it, added] = index.emplace(std::string(name), hosts.size());
  if (added) {
    if (hosts.size() >= kMaxHosts) fail(PCM_ERR_ARG, "{}more than {} hosts", where, kMaxHosts);
    hosts.push_back(HostSlots{std::string(name), slots, {}});
    return;
  }
  HostSlots& h = hosts[it->second];
  if (h.slots > kMaxSlots - slots)
    fail(PCM_ERR_ARG, "{}host '{}' has more than {} slots in all", where, name, kMaxSlots);
  h.slots += slots;
}

// Shortens a piece of hostile input for an error message.
std::string quote(std::string_view s) {
  constexpr std::size_t kShown = 40;
  if (s.size() <= kShown) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kShown)) + "...'";
}

// The names one bracket of a Slurm list stands for: `1-3,7` or `08-10`; at most `room` of them.
std::vector<std::string> expand_set(std::string_view set, std::size_t room) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= set.size()) {
    std::size_t comma = set.find(',', start);
    if (comma == std::string_view::npos) comma = set.size();
    std::string_view item = set.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) fail(PCM_ERR_ARG, "empty item in [{}]", set);
    std::size_t dash = item.find('-');
    std::string_view lo_s = item.substr(0, dash);
    std::string_view hi_s = dash == std::string_view::npos ? lo_s : item.substr(dash + 1);
    auto lo = parse_uint(lo_s);
    auto hi = parse_uint(hi_s);
    if (!lo || !hi) fail(PCM_ERR_ARG, "bad range {} in a host list", quote(item));
    if (*lo > *hi) fail(PCM_ERR_ARG, "reversed range {} in a host list", quote(item));
    // A name cannot be longer than a host name, so neither can its number's width.
    if (lo_s.size() > proto::kMaxHost) fail(PCM_ERR_ARG, "number too long in {}", quote(item));
    if (*hi - *lo >= room - out.size())
      fail(PCM_ERR_ARG, "host list expands to more than {} names", kMaxHosts);
    const int width = static_cast<int>(lo_s.size());
    for (std::uint64_t v = *lo;; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < static_cast<std::size_t>(width))
        digits.insert(0, static_cast<std::size_t>(width) - digits.size(), '0');
      out.push_back(std::move(digits));
      if (v == *hi) break;  // not v <= *hi: *hi may be 2^64 - 1
    }
  }
  return out;
}

// One entry of a Slurm list (no comma outside brackets), appended to `out`.
void expand_entry(std::string_view entry, std::vector<std::string>& out) {
  if (entry.empty()) fail(PCM_ERR_ARG, "empty entry in a host list");
  std::vector<std::string> names{""};
  std::size_t pos = 0;
  while (pos < entry.size()) {
    const std::size_t room = kMaxHosts - out.size();
    std::size_t open = entry.find('[', pos);
    std::string_view literal = entry.substr(pos, open - pos);
    std::vector<std::string> set;
    if (open != std::string_view::npos) {
      std::size_t close = entry.find(']', open);  // balance was checked by the caller
      std::string_view inside = entry.substr(open + 1, close - open - 1);
      if (inside.empty()) fail(PCM_ERR_ARG, "empty brackets in {}", quote(entry));
      set = expand_set(inside, room);
      pos = close + 1;
    } else {
      pos = entry.size();
    }
    if (!set.empty() && names.size() > room / set.size())
      fail(PCM_ERR_ARG, "host list expands to more than {} names", kMaxHosts);
    std::vector<std::string> next;
    next.reserve(names.size() * std::max<std::size_t>(set.size(), 1));
    for (const std::string& prefix : names) {
      std::string base = prefix + std::string(literal);
      if (set.empty()) {
        next.push_back(std::move(base));
        continue;
      }
      for (const std::string& number : set) {
        next.push_back(base + number);
        // Names only grow: stop at the first one too long rather than build many of them.
        if (next.back().size() > proto::kMaxHost)
          fail(PCM_ERR_ARG, "host name longer than {} characters in {}", proto::kMaxHost,
               quote(entry));
      }
    }
    names = std::move(next);
  }
  // Brackets were checked against the room left; a plain name was not.
  if (names.size() > kMaxHosts - out.size())
    fail(PCM_ERR_ARG, "host list expands to more than {} names", kMaxHosts);
  for (std::string& name : names) {
    if (!proto::valid_host(name)) fail(PCM_ERR_ARG, "bad host name {}", quote(name));
    out.push_back(std::move(name));
  }
}

}  // namespace

HostSlots parse_host_spec(const std::string& spec, int default_slots) {
  HostSlots h;
  const auto at = spec.find('@');
  const std::string host = spec.substr(0, at);
  if (at != std::string::npos) {
    h.site = spec.substr(at + 1);
    if (!proto::valid_name(h.site))
      fail(PCM_ERR_CONFIG, "inventory entry '{}': bad site name '{}'", spec, h.site);
  }
  auto colon = host.find(':');
  h.name = host.substr(0, colon);
  h.slots = default_slots;
  if (colon != std::string::npos) {
    int slots = 0;
    const std::string text = host.substr(colon + 1);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), slots);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty() || slots < 1 ||
        slots > kMaxSlots)
      fail(PCM_ERR_CONFIG, "inventory entry '{}': slots must be a number from 1 to {}", spec,
           kMaxSlots);
    h.slots = slots;
  }
  if (!proto::valid_host(h.name)) fail(PCM_ERR_CONFIG, "inventory entry '{}': bad host name", spec);
  return h;
}

SiteLink parse_site_link(const std::string& spec) {
  SiteLink l;
  const auto c1 = spec.find(':');
  const auto c2 = c1 == std::string::npos ? c1 : spec.find(':', c1 + 1);
  if (c2 == std::string::npos)
    fail(PCM_ERR_CONFIG, "site link '{}': write SITE:SITE:LOW-HIGH (the open MPI port range)",
         spec);
  l.a = spec.substr(0, c1);
  l.b = spec.substr(c1 + 1, c2 - c1 - 1);
  for (const auto* site : {&l.a, &l.b})
    if (!proto::valid_name(*site))
      fail(PCM_ERR_CONFIG, "site link '{}': bad site name '{}'", spec, *site);
  if (l.a == l.b) fail(PCM_ERR_CONFIG, "site link '{}': a site always reaches itself", spec);
  const std::string range = spec.substr(c2 + 1);
  const auto dash = range.find('-');
  auto number = [&](const std::string& t) {
    int v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 1 || v > 65535)
      fail(PCM_ERR_CONFIG, "site link '{}': ports are numbers from 1 to 65535", spec);
    return v;
  };
  if (dash == std::string::npos)
    fail(PCM_ERR_CONFIG, "site link '{}': the port range is LOW-HIGH", spec);
  l.low = number(range.substr(0, dash));
  l.high = number(range.substr(dash + 1));
  if (l.low > l.high) fail(PCM_ERR_CONFIG, "site link '{}': the range is reversed", spec);
  return l;
}

std::vector<HostSlots> parse_hostfile(std::string_view text) {
  std::vector<HostSlots> hosts;
  std::unordered_map<std::string, std::size_t> index;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::size_t colon = line.find(':');
    std::string_view name = trim(line.substr(0, colon));
    int slots = 1;
    if (colon != std::string_view::npos) {
      std::string_view count = trim(line.substr(colon + 1));
      auto v = parse_uint(count);
      if (!v || *v < 1 || *v > static_cast<std::uint64_t>(kMaxSlots))
        fail(PCM_ERR_ARG, "{}slots must be a number from 1 to {}, not {}", where, kMaxSlots,
             quote(count));
      slots = static_cast<int>(*v);
    }
    if (!proto::valid_host(name)) fail(PCM_ERR_ARG, "{}bad host name {}", where, quote(name));
    add_slots(hosts, index, name, slots, where);
  }
  return hosts;
}

std::vector<std::string> expand_slurm_nodelist(std::string_view list) {
  list = trim(list);
  if (list.empty()) fail(PCM_ERR_ARG, "empty host list");
  std::vector<std::string> out;
  bool in_bracket = false;
  std::size_t entry_start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') {
      if (in_bracket) fail(PCM_ERR_ARG, "nested '[' in host list {}", quote(list));
      in_bracket = true;
    } else if (c == ']') {
      if (!in_bracket) fail(PCM_ERR_ARG, "']' without '[' in host list {}", quote(list));
      in_bracket = false;
    } else if (c == ',' && (!in_bracket || i == list.size())) {
      if (in_bracket) fail(PCM_ERR_ARG, "'[' without ']' in host list {}", quote(list));
      expand_entry(list.substr(entry_start, i - entry_start), out);
      entry_start = i + 1;
    }
  }
  return out;
}

std::vector<int> expand_slurm_tasks(std::string_view tasks) {
  tasks = trim(tasks);
  if (tasks.empty()) fail(PCM_ERR_ARG, "empty task list");
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= tasks.size()) {
    std::size_t comma = tasks.find(',', start);
    if (comma == std::string_view::npos) comma = tasks.size();
    std::string_view item = tasks.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) fail(PCM_ERR_ARG, "empty entry in task list {}", quote(tasks));
    std::string_view count_s = item;
    std::uint64_t repeat = 1;
    if (std::size_t paren = item.find('('); paren != std::string_view::npos) {
      count_s = item.substr(0, paren);
      std::string_view rest = item.substr(paren + 1);
      if (rest.size() < 3 || rest.front() != 'x' || rest.back() != ')')
        fail(PCM_ERR_ARG, "bad repeat in task list entry {}", quote(item));
      auto r = parse_uint(rest.substr(1, rest.size() - 2));
      if (!r || *r < 1 || *r > kMaxHosts)
        fail(PCM_ERR_ARG, "repeat must be from 1 to {} in {}", kMaxHosts, quote(item));
      repeat = *r;
    }
    auto count = parse_uint(count_s);
    if (!count || *count < 1 || *count > static_cast<std::uint64_t>(kMaxSlots))
      fail(PCM_ERR_ARG, "task count must be from 1 to {} in {}", kMaxSlots, quote(item));
    if (repeat > kMaxHosts - out.size())
      fail(PCM_ERR_ARG, "task list expands to more than {} counts", kMaxHosts);
    out.insert(out.end(), repeat, static_cast<int>(*count));
  }
  return out;
}

std::vector<HostSlots> slurm_hosts(std::string_view nodelist, std::string_view tasks_per_node) {
  std::vector<std::string> names = expand_slurm_nodelist(nodelist);
  std::vector<int> counts = expand_slurm_tasks(tasks_per_node);
  if (names.size() != counts.size())
    fail(PCM_ERR_ARG, "the node list names {} nodes but the task list has {} counts", names.size(),
         counts.size());
  std::vector<HostSlots> hosts;
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < names.size(); ++i) add_slots(hosts, index, names[i], counts[i], "");
  return hosts;
}

std::optional<Placement> parse_placement(std::string_view s) {
  if (s == "spread") return Placement::kSpread;
  if (s == "concentrate") return Placement::kConcentrate;
  return std::nullopt;
}

const char* placement_name(Placement p) {
  return p == Placement::kSpread ? "spread" : "concentrate";
}

std::vector<std::string> place(const std::vector<Host>& hosts, int n, Placement p) {
  if (n < 0) fail(PCM_ERR_ARG, "cannot place {} processes", n);
  std::unordered_map<std::string_view, int> seen;
  std::int64_t free_total = 0;
  for (const Host& h : hosts) {
    if (h.slots < 0 || h.used < 0)
      fail(PCM_ERR_ARG, "host '{}' has {} slots and {} used", h.name, h.slots, h.used);
    // NaN would break the sort's ordering; a negative latency is not a measurement.
    if (!(h.latency_ms >= 0.0) || std::isinf(h.latency_ms))
      fail(PCM_ERR_ARG, "host '{}' has latency {}", h.name, h.latency_ms);
    // A host named twice would be counted twice: two views of one machine's slots.
    if (!seen.emplace(h.name, 0).second) fail(PCM_ERR_ARG, "host '{}' is listed twice", h.name);
    free_total += std::max(h.slots - h.used, 0);
  }
  if (free_total < n)
    fail(PCM_ERR_REFUSED, "cannot place {} processes ({}): {} hosts have {} free slots", n,
         placement_name(p), hosts.size(), free_total);

  // The paper's slist: hosts by ascending latency; names break ties so the result is reproducible.
  std::vector<std::size_t> order(hosts.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (hosts[a].latency_ms != hosts[b].latency_ms)
      return hosts[a].latency_ms < hosts[b].latency_ms;
    return hosts[a].name < hosts[b].name;
  });

  std::vector<int> u(hosts.size(), 0);  // processes mapped onto each host (u_i)
  int left = n;
  if (p == Placement::kConcentrate) {
    for (std::size_t i : order) {
      const int take = std::min(std::max(hosts[i].slots - hosts[i].used, 0), left);
      u[i] = take;
      left -= take;
      if (left == 0) break;
    }
  } else {
    // Round-robin over the hosts that still have room; a full host leaves the round, so the work
    // is proportional to n plus the number of hosts however uneven the capacities.
    std::vector<std::size_t> open;
    for (std::size_t i : order)
      if (hosts[i].slots > hosts[i].used) open.push_back(i);
    while (left > 0) {
      std::size_t kept = 0;
      for (std::size_t k = 0; k < open.size() && left > 0; ++k) {
        const std::size_t i = open[k];
        ++u[i];
        --left;
        if (u[i] < hosts[i].slots - hosts[i].used) open[kept++] = i;
      }
      open.resize(kept);
    }
  }

  // Ranks host by host, in slist order (the paper's numbering).
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::size_t i : order) out.insert(out.end(), static_cast<std::size_t>(u[i]), hosts[i].name);
  return out;
}

}  // namespace pcm::common
