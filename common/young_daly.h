// young_daly.h — the checkpoint interval that loses the least expected time to failures.
#pragma once

#include <cmath>

#include "namespaces.h"

namespace pcm::common {

// Seconds of work between two checkpoints for a checkpoint that costs `cost` seconds and a mean
// time between failures of `mtbf` seconds: Daly's higher-order estimate (J. T. Daly, "A higher
// order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3), 2006),
//   sqrt(2 c M) * (1 + sqrt(c / 2M) / 3 + (c / 2M) / 9) - c   for c < 2M, else M,
// which is Young's sqrt(2 c M) with the next terms. 0 when either is not positive.
inline double daly_interval(double cost, double mtbf) {
  if (!(cost > 0) || !(mtbf > 0)) return 0;
  if (cost >= 2 * mtbf) return mtbf;
  const double r = cost / (2 * mtbf);
  return std::sqrt(2 * cost * mtbf) * (1 + std::sqrt(r) / 3 + r / 9) - cost;
}

}  // namespace pcm::common
