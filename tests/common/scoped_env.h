// ScopedEnv: an environment variable set (or unset, with a null value) for one scope, then put back
// as it was. ctest runs each test in its own process; the gtest binaries run their tests one
// after another in one, so a test that sets a variable must restore it.
#pragma once

#include <cstdlib>
#include <string>

namespace gpuattn::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace gpuattn::testing
