// error_string.cpp — PCM_Error_string, shared by libpcm and the MPI-free tools.
#include "pcm_types.h"

// Exported from libpcm, which hides everything else.
extern "C" __attribute__((visibility("default"))) const char* PCM_Error_string(int code) {
  switch (code) {
    case PCM_SUCCESS:
      return "success";
    case PCM_ERR_ARG:
      return "invalid argument";
    case PCM_ERR_STATE:
      return "call not allowed in this state";
    case PCM_ERR_CONFIG:
      return "configuration file missing or invalid";
    case PCM_ERR_DAEMON:
      return "pcmd unreachable or not answering";
    case PCM_ERR_REFUSED:
      return "refused by pcmd";
    case PCM_ERR_NOT_FOUND:
      return "not found (no data under that rank and key, or no checkpoint version)";
    case PCM_ERR_TYPE:
      return "stored type differs";
    case PCM_ERR_COUNT:
      return "stored count differs";
    case PCM_ERR_MPI:
      return "MPI call failed";
    case PCM_ERR_SPAWN:
      return "spawn failed";
    case PCM_ERR_INTERNAL:
      return "internal error in PCM";
    case PCM_ERR_CORRUPT:
      return "checkpoint data failed verification";
    case PCM_ERR_NOSPACE:
      return "no space left on the disk";
    default:
      return "unknown PCM error code";
  }
}
