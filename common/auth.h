// auth.h — secrets and keys: how strong a shared secret is, HMAC proofs for the watch port's
// challenge, and CURVE key pairs for pcmd's sockets beyond loopback.
#pragma once

#include <string>
#include <string_view>

#include "namespaces.h"

namespace pcm::common {

// Secrets shorter than this, or with fewer estimated bits than kMinSecretBits, are refused.
constexpr std::size_t kMinSecretLength = 32;
constexpr double kMinSecretBits = 96;

// An estimate of a secret's entropy in bits: its length times the Shannon entropy of its
// characters' frequencies. A random hex secret of 64 characters scores about 240, "aaaa..." 0,
// "abab..." one bit per character.
double secret_bits(std::string_view secret);

// Throws pcm::Error(PCM_ERR_CONFIG) naming where the secret came from and how to fix it, if the
// secret is too short or too predictable.
void check_secret_strength(std::string_view secret, const std::string& where);

// n random bytes from libsodium, hex encoded (2n characters).
std::string random_hex(std::size_t n);

// HMAC-SHA256 of message under key, hex encoded (64 characters).
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// A CURVE key pair, both halves Z85 encoded (40 characters each).
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
};
// A new key pair (zmq_curve_keypair). Throws pcm::Error(PCM_ERR_INTERNAL) if libzmq has no CURVE.
CurveKeyPair curve_keypair();
// The public half of a Z85 secret key ("" if it is none).
std::string curve_public_of(const std::string& secret_key);
// Whether s is a Z85-encoded 32-byte key.
bool valid_curve_key(std::string_view s);

// The watch port's challenge and the proof that answers it (pcmd/watch.h): the hello's fields
// after the proof, signed with the secret together with the challenge's nonce.
std::string watch_proof(std::string_view secret, std::string_view nonce, std::string_view fields);
// pcmd's challenge line for a nonce: "PCM-WATCH 2 NONCE\n".
std::string watch_challenge(std::string_view nonce);
// The nonce of what a process read from the watch port up to and including the first newline;
// "" unless it is a challenge.
std::string watch_nonce(std::string_view challenge);
// A process's hello that answers a challenge's nonce (with its newline): libpcm's, and the rank
// emulator's (bench/scale_emu.cpp).
std::string watch_hello(std::string_view secret, std::string_view nonce, std::string_view job,
                        long pid, std::string_view host, long long incarnation);

}  // namespace pcm::common
