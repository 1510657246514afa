// The random-case settings and dice (tests/common/random_cases.h): bad GPUATTN_FUZZ_* values are
// refused by name, a run's cases and seeds are the same every time, and the lengths stay in range.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/random_cases.h"
#include "common/scoped_env.h"

namespace gpuattn::testing {
namespace {

std::string refusal(const char* name, const char* value) {
  const ScopedEnv env(name, value);
  try {
    FuzzRun::from_env(7, 5);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(RandomCases, UnsetTakesTheDefaultsAndValuesAreRead) {
  {
    const ScopedEnv s("GPUATTN_FUZZ_SEED", nullptr), c("GPUATTN_FUZZ_CASES", nullptr);
    const FuzzRun r = FuzzRun::from_env(7, 5);
    EXPECT_EQ(r.seed, 7u);
    EXPECT_EQ(r.cases, 5);
  }
  const ScopedEnv s("GPUATTN_FUZZ_SEED", "18446744073709551615"), c("GPUATTN_FUZZ_CASES", "0");
  const FuzzRun r = FuzzRun::from_env(7, 5);
  EXPECT_EQ(r.seed, 18446744073709551615ull);
  EXPECT_EQ(r.cases, 0);
}

TEST(RandomCases, BadValuesAreRefusedByName) {
  for (const char* bad : {"", "-1", "+3", "12x", " 4", "0x10", "18446744073709551616"}) {
    const std::string m = refusal("GPUATTN_FUZZ_SEED", bad);
    EXPECT_NE(m.find(std::string("GPUATTN_FUZZ_SEED='") + bad + "'"), std::string::npos)
        << "value '" << bad << "': " << m;
  }
  for (const char* bad : {"100001", "-2", "many"}) {
    const std::string m = refusal("GPUATTN_FUZZ_CASES", bad);
    EXPECT_NE(m.find(std::string("GPUATTN_FUZZ_CASES='") + bad +
                     "' is not a whole number in [0, "
                     "100000]"),
              std::string::npos)
        << "value '" << bad << "': " << m;
  }
}

TEST(RandomCases, ARunIsTheSameEveryTimeAndNamesItsReplay) {
  FuzzRun run, more, other;
  run.seed = more.seed = 42;
  other.seed = 43;
  run.cases = other.cases = 3;
  more.cases = 9;
  EXPECT_EQ(run.case_seed(0), more.case_seed(0));
  EXPECT_NE(run.case_seed(0), run.case_seed(1));
  EXPECT_NE(run.case_seed(0), other.case_seed(0));
  EXPECT_EQ(run.where(2), "random case 2 (replay: GPUATTN_FUZZ_SEED=42 GPUATTN_FUZZ_CASES=3)");
  Dice a(run.seed), b(run.seed);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.length(1, 3000), b.length(1, 3000));
}

TEST(RandomCases, LengthsStayInRangeAndReachTheEdges) {
  Dice d(1);
  bool one = false, edge = false;
  for (int i = 0; i < 20000; ++i) {
    const int lo = d.between(0, 5), hi = lo + d.between(0, 2000);
    const int v = d.length(lo, hi);
    ASSERT_GE(v, lo);
    ASSERT_LE(v, hi);
    one = one || v == 1;
    edge = edge || v == 129 || v == 127 || v == 257;
  }
  EXPECT_TRUE(one);
  EXPECT_TRUE(edge);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(d.length(0, 0), 0);
}

}  // namespace
}  // namespace gpuattn::testing
