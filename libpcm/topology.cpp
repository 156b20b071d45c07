// topology.cpp — where a communicator's processes are (PCM_Topology, PCM_Host_comm): QCG-OMPI's
// colours per level (site, host), from each process's host name, pcmd's inventory sites and
// PCM_SITE.
#include <mpi.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "c_boundary.h"
#include "error.h"
#include "mpi_util.h"
#include "ops.h"
#include "pcm.h"
#include "protocol.h"
#include "runtime.h"
#include "settings.h"

namespace pcm::lib {
namespace {

constexpr int kHostLen = 256;  // kMaxHost + NUL
constexpr int kSiteLen = 65;   // a name: kMaxName + NUL
static_assert(proto::kMaxHost < kHostLen);

void check_comm(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) fail(PCM_ERR_STATE, "MPI is not initialised (or finalized)");
  if (comm == MPI_COMM_NULL) fail(PCM_ERR_ARG, "comm is MPI_COMM_NULL");
  int inter = 0;
  mpi_check(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter) fail(PCM_ERR_ARG, "comm is an intercommunicator");
}

// This process's record: host name, then its own site (PCM_SITE, "" when unset or invalid).
std::vector<char> own_record() {
  std::vector<char> rec(kHostLen + kSiteLen, '\0');
  char proc[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(proc, &len);
  std::string host = proc;
  if (!proto::valid_host(host)) host = "unknown";
  std::memcpy(rec.data(), host.data(), host.size());
  const std::string site = Settings::site();
  if (site.size() < kSiteLen && proto::valid_name(site))
    std::memcpy(rec.data() + kHostLen, site.data(), site.size());
  return rec;
}

// Colours from every process's (site, host): the lowest rank with the same site, and the lowest
// with the same site and host.
std::vector<int> colours(const std::vector<std::pair<std::string, std::string>>& where) {
  std::map<std::string, int> site_first;
  std::map<std::pair<std::string, std::string>, int> host_first;
  std::vector<int> out;
  for (int r = 0; r < static_cast<int>(where.size()); ++r) {
    out.push_back(site_first.emplace(where[r].first, r).first->second);
    out.push_back(host_first.emplace(where[r], r).first->second);
  }
  return out;
}

}  // namespace

// Collective over comm: this process's colour at each level.
void topology(MPI_Comm comm, int colors[PCM_TOPO_LEVELS]) {
  check_comm(comm);
  int rank = 0, size = 0;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<char> mine = own_record();
  const int rec = kHostLen + kSiteLen;
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(size) * rec : 0);
  mpi_check(MPI_Gather(mine.data(), rec, MPI_CHAR, all.data(), rec, MPI_CHAR, 0, comm),
            "MPI_Gather");
  std::vector<int> out(rank == 0 ? static_cast<std::size_t>(size) * PCM_TOPO_LEVELS : 0);
  if (rank == 0) {
    std::vector<std::pair<std::string, std::string>> where;
    std::vector<std::string> hosts;
    std::map<std::string, std::size_t> index;
    for (int r = 0; r < size; ++r) {
      const char* p = &all[static_cast<std::size_t>(r) * rec];
      where.emplace_back(std::string(p + kHostLen), std::string(p));
      if (index.emplace(where.back().second, hosts.size()).second)
        hosts.push_back(where.back().second);
    }
    // pcmd's inventory site wins over a process's own PCM_SITE.
    std::vector<std::string> sites = Runtime::instance().sites_of(hosts);
    for (auto& [site, host] : where)
      if (const std::string& s = sites[index[host]]; !s.empty()) site = s;
    out = colours(where);
  }
  int mine_out[PCM_TOPO_LEVELS];
  mpi_check(MPI_Scatter(out.data(), PCM_TOPO_LEVELS, MPI_INT, mine_out, PCM_TOPO_LEVELS, MPI_INT, 0,
                        comm),
            "MPI_Scatter");
  for (int l = 0; l < PCM_TOPO_LEVELS; ++l) colors[l] = mine_out[l];
}

}  // namespace pcm::lib

using pcm::lib::guard;

PCM_EXPORT int PCM_Topology(MPI_Comm comm, int* nlevels, int colors[PCM_TOPO_LEVELS]) {
  return guard("PCM_Topology", [&] {
    if (!nlevels || !colors) pcm::fail(PCM_ERR_ARG, "nlevels and colors must not be NULL");
    int c[PCM_TOPO_LEVELS];
    pcm::lib::topology(comm, c);
    *nlevels = PCM_TOPO_LEVELS;
    for (int l = 0; l < PCM_TOPO_LEVELS; ++l) colors[l] = c[l];
    return PCM_SUCCESS;
  });
}

PCM_EXPORT int PCM_Host_comm(MPI_Comm comm, MPI_Comm* host_comm) {
  return guard("PCM_Host_comm", [&] {
    if (!host_comm) pcm::fail(PCM_ERR_ARG, "host_comm must not be NULL");
    int c[PCM_TOPO_LEVELS], rank = 0;
    pcm::lib::topology(comm, c);
    pcm::lib::mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    pcm::lib::mpi_check(MPI_Comm_split(comm, c[PCM_TOPO_HOST], rank, host_comm), "MPI_Comm_split");
    return PCM_SUCCESS;
  });
}
