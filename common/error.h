// error.h — the one error type used inside PCM: a PCM_ERR_* code and a message.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "namespaces.h"

namespace pcm {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

template <typename... Args>
[[noreturn]] void fail(int code, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(code, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace pcm
