// ScopedEnv: an environment variable set (or unset, with a null value) for one scope, then put back
// as it was. ctest runs each test in its own process; the gtest binaries run their tests one
// after another in one, so a test that sets a variable must restore it.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>

namespace gpuattn::testing {

class ScopedEnv {
 public:
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    const char* n = name_.c_str();
    const char* old = std::getenv(n);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) {
      setenv(n, value, 1);
    } else {
      unsetenv(n);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace gpuattn::testing
