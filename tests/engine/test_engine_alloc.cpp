// The engine after an allocation that failed: a KV pool that could not grow is reallocated by the
// next call, not left as a freed one (ensure_pool cleared the pool and kept its page count, so the
// next generate() wrote keys into freed memory). common/alloc_hook.h makes large allocations
// (>= 1 MiB, only the pool's here) fail and counts the ones of 32 KiB or more.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/alloc_hook.h"  // this binary's operator new
#include "engine/gpt2_test_util.h"
#include "engine/parallel.h"
#include "gpuattn/gpt2.h"

namespace gpuattn::testing {
namespace {

TEST(Gpt2EngineCpu, APoolThatFailedToGrowIsAllocatedAgain) {
  const Gpt2Weights w = Gpt2Weights::random(small_config(), 7);
  EngineOptions o = cpu_options();
  o.num_threads = 1;
  o.scheduler.max_batch = 64;
  Gpt2Engine e(w, o);
  GenerationRequest r;
  r.prompt = {1, 2, 3};
  r.max_new_tokens = 4;
  const std::vector<std::int32_t> first = e.generate({r})[0];
  ASSERT_EQ(first.size(), 4u);
  // 64 requests of 79 keys: 640 pages of 8 keys, 2.6 MB a layer's K (or V) pool.
  std::vector<GenerationRequest> big(64, r);
  for (GenerationRequest& q : big) {
    q.prompt.assign(60, 5);
    q.max_new_tokens = 20;
  }
  alloc_hook::fail_from = std::size_t{1} << 20;
  EXPECT_THROW(e.generate(big), std::bad_alloc);
  alloc_hook::fail_from = SIZE_MAX;
  // The next call allocates a pool again (a K and a V buffer a layer), and draws as before.
  alloc_hook::count_from = std::size_t{1} << 15;
  alloc_hook::counted = 0;
  EXPECT_EQ(e.generate({r})[0], first);
  alloc_hook::count_from = SIZE_MAX;
  EXPECT_GE(alloc_hook::counted, 2 * small_config().n_layer);
  EXPECT_EQ(e.generate(big).size(), 64u);
}

}  // namespace
}  // namespace gpuattn::testing

namespace gpuattn::testing {
namespace {

// engine/parallel.h: every part runs, and a part's exception waits for the other threads and is
// rethrown (the first in part order); a thread that cannot start runs its part here.
TEST(EngineParallel, PartsRunAndTheFirstExceptionIsRethrownAfterTheJoins) {
  std::vector<int> done(6, 0);
  engine::run_parts(6, [&](int i) { done[static_cast<std::size_t>(i)] = 1; });
  EXPECT_EQ(done, std::vector<int>(6, 1));
  std::fill(done.begin(), done.end(), 0);
  try {
    engine::run_parts(6, [&](int i) {
      done[static_cast<std::size_t>(i)] = 1;
      if (i == 2 || i == 4) throw std::runtime_error("part " + std::to_string(i));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 2");
  }
  EXPECT_EQ(done, std::vector<int>(6, 1));
}

}  // namespace
}  // namespace gpuattn::testing
