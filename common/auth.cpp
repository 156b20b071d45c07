// auth.cpp — secret strength, HMAC proofs (libsodium) and CURVE key pairs (libzmq).
#include "auth.h"

#include <fmt/format.h>
#include <sodium.h>
#include <zmq.h>

#include <cmath>
#include <map>

#include "error.h"
#include "pcm_types.h"

namespace pcm::common {

namespace {

void init_sodium() {
  static const int rc = sodium_init();  // thread-safe once; 1 means already initialised
  if (rc < 0) fail(PCM_ERR_INTERNAL, "libsodium cannot be initialised");
}

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    s += hex[bytes[i] >> 4];
    s += hex[bytes[i] & 15];
  }
  return s;
}

}  // namespace

double secret_bits(std::string_view secret) {
  if (secret.empty()) return 0;
  std::map<char, std::size_t> counts;
  for (char c : secret) ++counts[c];
  double per_char = 0;
  const double n = static_cast<double>(secret.size());
  for (const auto& [c, k] : counts) {
    const double p = static_cast<double>(k) / n;
    per_char -= p * std::log2(p);
  }
  return per_char * n;
}

void check_secret_strength(std::string_view secret, const std::string& where) {
  const double bits = secret_bits(secret);
  if (secret.size() < kMinSecretLength || bits < kMinSecretBits)
    fail(PCM_ERR_CONFIG,
         "the secret in {} is weak ({} characters, about {:.0f} bits; at least {} characters "
         "and {:.0f} bits are needed). Fix: remove {} and start pcmd again, which writes a new "
         "random secret (running jobs that read the old file must be restarted)",
         where, secret.size(), bits, kMinSecretLength, kMinSecretBits, where);
}

std::string random_hex(std::size_t n) {
  init_sodium();
  std::string bytes(n, '\0');
  randombytes_buf(bytes.data(), n);
  return to_hex(reinterpret_cast<const unsigned char*>(bytes.data()), n);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  init_sodium();
  crypto_auth_hmacsha256_state state;
  unsigned char out[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()),
                              key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(message.data()),
                                message.size());
  crypto_auth_hmacsha256_final(&state, out);
  return to_hex(out, sizeof out);
}

CurveKeyPair curve_keypair() {
  char pub[41] = {0}, sec[41] = {0};
  if (zmq_curve_keypair(pub, sec) != 0)
    fail(PCM_ERR_INTERNAL, "libzmq cannot make a CURVE key pair: {} (built without libsodium?)",
         zmq_strerror(zmq_errno()));
  return {pub, sec};
}

std::string curve_public_of(const std::string& secret_key) {
  char pub[41] = {0};
  if (secret_key.size() != 40 || zmq_curve_public(pub, secret_key.c_str()) != 0) return "";
  return pub;
}

bool valid_curve_key(std::string_view s) {
  if (s.size() != 40) return false;
  std::string text(s);
  unsigned char key[32];
  return zmq_z85_decode(key, text.c_str()) != nullptr;
}

std::string watch_proof(std::string_view secret, std::string_view nonce, std::string_view fields) {
  std::string message;
  message.reserve(nonce.size() + 1 + fields.size());
  message.append(nonce).append(" ").append(fields);
  return hmac_sha256_hex(secret, message);
}

namespace {
constexpr std::string_view kWatchPrefix = "PCM-WATCH 2 ";
}  // namespace

std::string watch_challenge(std::string_view nonce) {
  return std::string(kWatchPrefix).append(nonce).append("\n");
}

std::string watch_nonce(std::string_view challenge) {
  const auto nl = challenge.find('\n');
  if (nl == std::string_view::npos || challenge.substr(0, kWatchPrefix.size()) != kWatchPrefix)
    return "";
  return std::string(challenge.substr(kWatchPrefix.size(), nl - kWatchPrefix.size()));
}

std::string watch_hello(std::string_view secret, std::string_view nonce, std::string_view job,
                        long pid, std::string_view host, long long incarnation) {
  const std::string fields = fmt::format("{} {} {} {}", job, pid, host, incarnation);
  return fmt::format("{}{} {}\n", kWatchPrefix, watch_proof(secret, nonce, fields), fields);
}

}  // namespace pcm::common
