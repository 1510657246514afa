// Randomized test cases: the settings of a random run (how many cases, from which seed) and the
// dice that draw awkward sizes. The CPU and GPU attention suites each draw their own cases with
// these (tests/cpu/test_cpu_attention.cpp, tests/cuda/test_attention_cuda.cpp); a failing case is
// named in full with its run's seed and its index, so it can be replayed:
//   GPUATTN_FUZZ_SEED=<seed> GPUATTN_FUZZ_CASES=<index + 1> <suite> --gtest_filter=<test>
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/test_util.h"

namespace gpuattn::testing {

// Environment variable `name` as a whole number in [lo, hi]; `unset` when it is not set. Anything
// else (empty, a sign where lo >= 0, trailing characters, out of range) throws invalid_argument
// naming the variable, its value and the range.
inline std::uint64_t env_whole_number(const char* name, std::uint64_t unset, std::uint64_t lo,
                                      std::uint64_t hi) {
  const char* s = std::getenv(name);
  if (s == nullptr) return unset;
  const std::string text = s;
  const std::string range =
      "a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument(std::string(name) + "='" + text + "' is not " + range);
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || v < lo || v > hi) {
    throw std::invalid_argument(std::string(name) + "='" + text + "' is not " + range);
  }
  return v;
}

// The seed of every suite's fixed set of random cases (GPUATTN_FUZZ_SEED unset).
constexpr std::uint64_t kDefaultFuzzSeed = 20261130;

// A random run: GPUATTN_FUZZ_SEED (any 64-bit number; `default_seed` when unset, so that every
// run of the suite checks the same cases) and GPUATTN_FUZZ_CASES (0-100000; `default_cases`).
struct FuzzRun {
  std::uint64_t seed = 0;
  int cases = 0;

  static FuzzRun from_env(std::uint64_t default_seed, int default_cases) {
    FuzzRun r;
    r.seed = env_whole_number("GPUATTN_FUZZ_SEED", default_seed, 0, UINT64_MAX);
    r.cases = static_cast<int>(env_whole_number(
        "GPUATTN_FUZZ_CASES", static_cast<std::uint64_t>(default_cases), 0, 100000));
    return r;
  }
  // Case i's seed for its inputs: the (i + 1)-th splitmix64 number after the run's seed.
  std::uint64_t case_seed(int i) const {
    std::uint64_t state = seed + 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(i);
    return next_random(state);
  }
  // Case i's name prefix in failure messages: what replays it.
  std::string where(int i) const {
    return "random case " + std::to_string(i) +
           " (replay: GPUATTN_FUZZ_SEED=" + std::to_string(seed) +
           " GPUATTN_FUZZ_CASES=" + std::to_string(i + 1) + ")";
  }
};

// Dice over one run's generator. The engine's numbers are the standard's, but the <random>
// distributions are each library's own: a seed's cases are fixed per standard library (libstdc++
// on these machines), and every set drawn is a valid one.
class Dice {
 public:
  explicit Dice(std::uint64_t seed) : rng_(seed) {}

  // Uniform in [lo, hi].
  int between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  // True with probability p.
  bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p; }
  // One of `options`, uniformly.
  template <class T>
  T one_of(std::initializer_list<T> options) {
    const int i = between(0, static_cast<int>(options.size()) - 1);
    return *(options.begin() + i);
  }
  // A sequence length in [lo, hi], awkward more often than not: around the kernels' tile edges
  // (multiples of 16 and 64, 80 and 128 keys, +-1), 1 and 2, or anywhere in the range.
  int length(int lo, int hi) {
    if (chance(0.45)) {
      const int base = one_of({16, 64, 80, 128, 176, 192, 256, 384, 512, 1024, 2048});
      const int mult = between(1, 3);
      const int v = base * mult + between(-1, 1);
      if (v >= lo && v <= hi) return v;
    }
    if (chance(0.15) && lo <= 2 && hi >= 1) return between(std::max(lo, 1), std::min(hi, 2));
    return between(lo, hi);
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace gpuattn::testing
