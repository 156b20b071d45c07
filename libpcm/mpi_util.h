// mpi_util.h — libpcm's small MPI helpers: error checks, agreed error codes, header broadcasts,
// type mapping, settings from the environment, and the library's logger.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace pcm::detail {

// The "pcm" logger (stderr, level from PCM_LOG_LEVEL).
std::shared_ptr<spdlog::logger> plog();

// Milliseconds of a coarse monotonic clock (a few nanoseconds per read).
std::int64_t now_ms();

// Throws pcm::Error(PCM_ERR_MPI) naming `what` unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* what);

// An integer setting from the environment: fallback when unset; throws PCM_ERR_ARG when it is
// not a number in [lo, hi].
long env_long(const char* name, long fallback, long lo, long hi);

// Collective over comm: every rank throws the same pcm::Error (the most negative local code,
// with the message of the lowest rank that had it), or returns if every code is PCM_SUCCESS.
void agree(MPI_Comm comm, int local_code, const std::string& local_msg);

// Decodes a header that another process of the job encoded with proto::encode (no size limit).
nlohmann::json decode_internal(const std::string& bytes);

// Broadcasts a header from root over comm.
nlohmann::json bcast_json(const nlohmann::json& value, int root, MPI_Comm comm);

// Broadcasts a header from the sending group's rank 0 to every process of the receiving group of
// an intercommunicator. Returns what was received (the receivers) or value (the senders).
nlohmann::json bcast_inter(const nlohmann::json& value, bool sender, int my_rank, MPI_Comm inter);

// The MPI type of a PCM_Datatype.
MPI_Datatype mpi_type(int type);

}  // namespace pcm::detail
