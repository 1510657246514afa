// A test helper that needs GoogleTest (test_util.h stays free of it: the gpuattn tool uses it too).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "gpuattn/types.h"

namespace gpuattn::testing {

// f throws a gpuattn::Error of code invalid_argument whose message contains `words`.
inline void expect_invalid_argument(const std::function<void()>& f, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming '" << words << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

}  // namespace gpuattn::testing
