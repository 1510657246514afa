// env_choice / env_flag: unset is the default, each choice maps to its index, and any other value
// (the empty string too) is an invalid_argument naming the variable, the value and the choices.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/expect_error.h"
#include "core/env_switch.h"

namespace gpuattn {
namespace {

using testing::expect_invalid_argument;

constexpr const char* kVar = "GPUATTN_TEST_ENV_SWITCH";

TEST(EnvSwitch, ChoicesFlagsAndBadValues) {
  ::unsetenv(kVar);
  EXPECT_EQ(env_choice(kVar, {"1", "0", "all"}), 0);
  EXPECT_TRUE(env_flag(kVar, true));
  EXPECT_FALSE(env_flag(kVar, false));
  ::setenv(kVar, "all", 1);
  EXPECT_EQ(env_choice(kVar, {"1", "0", "all"}), 2);
  ::setenv(kVar, "0", 1);
  EXPECT_EQ(env_choice(kVar, {"1", "0", "all"}), 1);
  EXPECT_FALSE(env_flag(kVar, true));
  EXPECT_FALSE(env_flag(kVar, false));
  ::setenv(kVar, "1", 1);
  EXPECT_TRUE(env_flag(kVar, true));
  EXPECT_TRUE(env_flag(kVar, false));
  ::setenv(kVar, "yes", 1);
  expect_invalid_argument(
      [] {
        (void)env_choice(kVar, {"1", "0", "all"});
      },
      "GPUATTN_TEST_ENV_SWITCH is \"yes\": expected 1, 0 or all");
  expect_invalid_argument([] { (void)env_flag(kVar, false); },
                          "GPUATTN_TEST_ENV_SWITCH is \"yes\": expected 0 or 1");
  ::setenv(kVar, "", 1);
  expect_invalid_argument([] { (void)env_flag(kVar, true); }, "is \"\": expected 0 or 1");
  ::unsetenv(kVar);
}

}  // namespace
}  // namespace gpuattn
