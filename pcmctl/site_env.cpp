// site_env.cpp — the MPI port range of the sites' links (issue 26 item 3). When pcmd runs
// with --closed-sites and --site-link A:B:LOW-HIGH, a job may span sites A and B only if its MPI
// connections keep to ports LOW-HIGH, the range both sites' firewalls open. `pcmctl site-env`
// prints the variables that make the MPIs do so; `pcmctl run` sets them in the job's environment
// (each one the user has not set already).
//
//   MPICH (ch3 and hydra's mpiexec, which listens for its proxies in the same range):
//     MPIR_CVAR_CH3_PORT_RANGE=LOW:HIGH
//   Open MPI (the TCP BTL, and the out-of-band channel of mpirun, its daemons and the ranks):
//     OMPI_MCA_btl_tcp_port_min_v4=LOW  OMPI_MCA_btl_tcp_port_range_v4=HIGH-LOW+1
//     OMPI_MCA_oob_tcp_dynamic_ipv4_ports=LOW-HIGH
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <utility>

#include "error.h"
#include "pcm_types.h"
#include "pcmctl.h"

namespace pcm::ctl {

using proto::json;

namespace {

struct PortRange {
  int low = 0, high = 0;
};

// The range common to every link of pcmd's `host list` reply that touches one of `sites` (every
// link when `sites` is empty); nullopt when sites are not closed or no link applies (nothing to
// set). Throws pcm::Error when the links' ranges do not overlap: one process listens in one range.
std::optional<PortRange> links_range(const json& reply, const std::vector<std::string>& sites) {
  const json s = reply.value("sites", json::object());
  if (!s.value("closed", false)) return std::nullopt;
  std::optional<PortRange> r;
  std::vector<std::string> used;
  for (const json& l : s.value("links", json::array())) {
    const std::string a = l.value("a", ""), b = l.value("b", "");
    if (!sites.empty() && std::find(sites.begin(), sites.end(), a) == sites.end() &&
        std::find(sites.begin(), sites.end(), b) == sites.end())
      continue;
    const int low = l.value("low", 0), high = l.value("high", 0);
    used.push_back(fmt::format("{}:{}:{}-{}", a, b, low, high));
    if (!r)
      r = PortRange{low, high};
    else
      r = PortRange{std::max(r->low, low), std::min(r->high, high)};
    if (r->low > r->high)
      fail(PCM_ERR_ARG,
           "the site links {} have no port in common: a process listens in one range (set the "
           "MPI's port range yourself, or give --site)",
           fmt::join(used, ", "));
  }
  return r;
}

std::vector<std::pair<std::string, std::string>> range_env(const PortRange& r) {
  return {{"MPIR_CVAR_CH3_PORT_RANGE", fmt::format("{}:{}", r.low, r.high)},
          {"OMPI_MCA_btl_tcp_port_min_v4", std::to_string(r.low)},
          {"OMPI_MCA_btl_tcp_port_range_v4", std::to_string(r.high - r.low + 1)},
          {"OMPI_MCA_oob_tcp_dynamic_ipv4_ports", fmt::format("{}-{}", r.low, r.high)}};
}

}  // namespace

void set_site_port_range(Connection& pcmd) {
  std::optional<PortRange> r;
  try {
    r = links_range(pcmd.request(req_host_list()), {});
  } catch (const std::exception& e) {
    std::cerr << "pcmctl run: the MPI port range of the site links is not set: " << e.what()
              << "\n";
    return;
  }
  if (!r) return;
  std::vector<std::string> set, kept;
  for (const auto& [name, value] : range_env(*r)) {
    if (const char* v = std::getenv(name.c_str()); v && *v) {
      kept.push_back(fmt::format("{}={}", name, v));
      continue;
    }
    ::setenv(name.c_str(), value.c_str(), 1);
    set.push_back(fmt::format("{}={}", name, value));
  }
  std::cerr << fmt::format(
      "pcmctl run: MPI ports kept to {}-{} (pcmd's site links): {}{}\n", r->low, r->high,
      set.empty() ? "none set" : fmt::to_string(fmt::join(set, " ")),
      kept.empty() ? "" : fmt::format("; yours kept: {}", fmt::join(kept, " ")));
}

int print_site_env(Connection& pcmd, const std::vector<std::string>& sites) {
  const auto r = links_range(pcmd.request(req_host_list()), sites);
  if (!r) {
    std::cerr << "pcmctl: no site link applies (pcmd --closed-sites --site-link A:B:LOW-HIGH): "
                 "nothing to set\n";
    return 0;
  }
  for (const auto& [name, value] : range_env(*r))
    std::cout << "export " << name << "=" << value << "\n";
  return 0;
}

}  // namespace pcm::ctl
