// gpuattn::BatchScheduler: admission in groups of similar prompt length, by priority then arrival,
// within the batch size, the prefill token budget and the cache's pages; decodes first every step;
// the adaptive wait of a shallow queue; preemption (recompute) when the cache runs short; finished
// requests free their pages; bad requests and configurations named. A random simulation runs to
// completion and checks every invariant at every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "gpuattn/scheduler.h"

namespace gpuattn::testing {
namespace {

Request req(std::int64_t id, int prompt, int new_tokens, int priority = 0, double t = 0.0) {
  Request r;
  r.id = id;
  r.prompt_len = prompt;
  r.max_new_tokens = new_tokens;
  r.priority = priority;
  r.arrival_s = t;
  return r;
}

SchedulerConfig no_wait(int max_batch = 64, int budget = 8192) {
  SchedulerConfig c;
  c.max_batch = max_batch;
  c.max_prefill_tokens = budget;
  c.max_wait_s = 0.0;
  return c;
}

using Groups = std::vector<std::vector<std::int64_t>>;

TEST(BatchScheduler, GroupsOfSimilarLength) {
  KvCacheManager kv(1024, 16);
  BatchScheduler s(no_wait(), kv);
  const std::vector<int> prompts = {100, 150, 400, 90, 210};
  for (int i = 0; i < 5; ++i) s.enqueue_request(req(i, prompts[i], 4, 0, 0.001 * i));
  const ScheduledStep st = s.schedule(1.0);
  // 100 leads; 150 and 90 stay within 2x; 400 leads the next group with 210.
  EXPECT_EQ(st.prefill_groups, (Groups{{0, 1, 3}, {2, 4}}));
  EXPECT_TRUE(st.decode.empty());
  EXPECT_EQ(s.running(), 5);
  EXPECT_EQ(kv.length(s.sequence(2)), 400);
}

TEST(BatchScheduler, PriorityThenArrival) {
  KvCacheManager kv(1024, 16);
  BatchScheduler s(no_wait(2), kv);
  s.enqueue_request(req(1, 50, 4, 0, 0.0));
  s.enqueue_request(req(2, 50, 4, 5, 0.2));
  s.enqueue_request(req(3, 50, 4, 0, 0.1));
  EXPECT_EQ(s.schedule(1.0).prefill_groups, (Groups{{2, 1}}));
  EXPECT_EQ(s.waiting(), 1);
}

TEST(BatchScheduler, DecodesFirstThenFreeSlotsAndBudget) {
  KvCacheManager kv(1024, 16);
  BatchScheduler s(no_wait(3, 250), kv);
  for (int i = 0; i < 5; ++i) s.enqueue_request(req(i, 100 + i, 3));
  ScheduledStep a = s.schedule(0.0);
  EXPECT_EQ(a.prefill_groups, (Groups{{0, 1}}));  // 100 + 101 tokens; 102 would pass 250
  EXPECT_TRUE(s.complete_step(a).empty());
  ScheduledStep b = s.schedule(0.0);
  EXPECT_EQ(b.decode, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(b.prefill_groups, (Groups{{2}}));  // one slot left
  EXPECT_EQ(kv.length(s.sequence(0)), 101);    // the first generated token's keys appended
  // A prompt longer than the whole budget runs alone in a step of its own.
  KvCacheManager kv2(1024, 16);
  BatchScheduler t(no_wait(8, 250), kv2);
  t.enqueue_request(req(7, 600, 1));
  t.enqueue_request(req(8, 500, 1));
  EXPECT_EQ(t.schedule(0.0).prefill_groups, (Groups{{7}}));
}

TEST(BatchScheduler, FinishedRequestsFreeTheirPages) {
  KvCacheManager kv(64, 16);
  BatchScheduler s(no_wait(), kv);
  s.enqueue_request(req(1, 20, 3));
  s.enqueue_request(req(2, 20, 5));
  ScheduledStep st = s.schedule(0.0);
  EXPECT_TRUE(s.complete_step(st).empty());  // 1 token each
  st = s.schedule(0.0);
  EXPECT_TRUE(s.complete_step(st, {2}).size() == 1);  // 2 stopped early (an end token)
  EXPECT_EQ(s.running(), 1);
  st = s.schedule(0.0);
  EXPECT_EQ(s.complete_step(st), (std::vector<std::int64_t>{1}));  // its third token
  EXPECT_EQ(kv.free_pages(), 64);
}

TEST(BatchScheduler, AShallowQueueWaitsForCompany) {
  KvCacheManager kv(256, 16);
  SchedulerConfig c;
  c.max_wait_s = 0.004;
  c.deep_queue = 4;
  BatchScheduler s(c, kv);
  s.enqueue_request(req(1, 10, 2, 0, 1.000));
  ScheduledStep st = s.schedule(1.001);  // depth 1: waits up to 3 ms after the arrival
  EXPECT_TRUE(st.empty());
  EXPECT_NEAR(st.wait_s, 0.002, 1e-9);
  s.enqueue_request(req(2, 10, 2, 0, 1.0015));  // depth 2: 2 ms from the oldest arrival
  st = s.schedule(1.0019);
  EXPECT_TRUE(st.empty());
  EXPECT_NEAR(st.wait_s, 0.0001, 1e-9);
  EXPECT_EQ(s.schedule(1.0021).prefill_groups, (Groups{{1, 2}}));
  // A deep queue does not wait.
  BatchScheduler d(c, kv);
  for (int i = 10; i < 14; ++i) d.enqueue_request(req(i, 10, 2, 0, 2.0));
  EXPECT_EQ(d.schedule(2.0).prefill_groups.size(), 1u);
}

TEST(BatchScheduler, ShortCachePreemptsAndRecomputes) {
  KvCacheManager kv(4, 4);  // 16 keys in all
  BatchScheduler s(no_wait(), kv);
  s.enqueue_request(req(1, 4, 8, 1));  // higher priority
  s.enqueue_request(req(2, 4, 8, 0));
  ScheduledStep st = s.schedule(0.0);
  ASSERT_EQ(st.prefill_groups, (Groups{{1, 2}}));
  s.complete_step(st);
  // Each decode step appends a key: 4 + 4 keys fit, the 9th needs a page, and both hold 2.
  st = s.schedule(0.0);
  EXPECT_EQ(st.decode, (std::vector<std::int64_t>{1, 2}));
  EXPECT_TRUE(st.preempted.empty());
  s.complete_step(st);
  for (int i = 0; i < 3; ++i) s.complete_step(s.schedule(0.0));
  // Request 1 holds 8 keys (2 pages), request 2 too: the next appends need pages.
  st = s.schedule(0.0);
  EXPECT_EQ(st.preempted, (std::vector<std::int64_t>{2}));  // lower priority
  EXPECT_EQ(st.decode, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(s.waiting(), 1);
  const std::vector<std::int64_t> done = s.complete_step(st);
  EXPECT_TRUE(done.empty());
  // Request 2 comes back with its 5 generated tokens in its prompt and 3 left to generate.
  int steps = 0;
  std::set<std::int64_t> finished;
  while (finished.size() < 2 && steps++ < 50) {
    const ScheduledStep n = s.schedule(0.0);
    for (const auto id : s.complete_step(n)) finished.insert(id);
  }
  EXPECT_EQ(finished, (std::set<std::int64_t>{1, 2}));
  EXPECT_EQ(kv.free_pages(), 4);
}

TEST(BatchScheduler, BadRequestsAndConfigsAreNamed) {
  KvCacheManager kv(4, 4);
  auto expect_invalid = [](const std::function<void()>& f, const std::string& words) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one naming '" << words << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  BatchScheduler s(no_wait(), kv);
  expect_invalid([&] { s.enqueue_request(req(1, 0, 4)); }, "request 1: prompt_len is 0");
  expect_invalid([&] { s.enqueue_request(req(1, 4, 0)); }, "request 1: max_new_tokens is 0");
  // prompt + max_new_tokens - 1 keys: the last token's are never appended.
  expect_invalid([&] { s.enqueue_request(req(1, 10, 8)); },
                 "request 1: 17 keys need 5 pages, the cache has 4");
  expect_invalid([&] { s.enqueue_request(req(1, INT32_MAX - 1, 5)); },
                 "request 1: prompt_len (2147483646) + max_new_tokens (5) - 1 is 2147483650 keys, "
                 "more than a cache sequence holds");
  Request late = req(1, 4, 4);
  late.arrival_s = std::numeric_limits<double>::infinity();
  expect_invalid([&] { s.enqueue_request(late); }, "request 1: arrival_s is inf, must be finite");
  late.arrival_s = std::numeric_limits<double>::quiet_NaN();
  expect_invalid([&] { s.enqueue_request(late); }, "request 1: arrival_s is nan");
  EXPECT_EQ(s.waiting(), 0);
  s.enqueue_request(req(1, 4, 4));
  expect_invalid([&] { s.enqueue_request(req(1, 4, 4)); }, "request 1 is already queued");
  SchedulerConfig c = no_wait();
  c.length_ratio = 0.5;
  expect_invalid([&] { BatchScheduler{c, kv}; }, "length_ratio is 0.5");
  c = no_wait(0);
  expect_invalid([&] { BatchScheduler{c, kv}; }, "max_batch is 0");
  c = no_wait();
  c.max_wait_s = std::numeric_limits<double>::infinity();
  expect_invalid([&] { BatchScheduler{c, kv}; }, "max_wait_s is inf, must be finite and >= 0");
  expect_invalid([&] { s.schedule(std::numeric_limits<double>::quiet_NaN()); }, "now_s is nan");
}

// A request of prompt + max_new_tokens - 1 keys, exactly the cache, runs to completion.
TEST(BatchScheduler, ARequestFillingTheCacheRuns) {
  KvCacheManager kv(4, 4);
  BatchScheduler s(no_wait(), kv);
  s.enqueue_request(req(1, 10, 7));  // 16 keys at most: 4 pages
  int steps = 0;
  std::vector<std::int64_t> done;
  while (done.empty() && steps++ < 20) {
    const ScheduledStep st = s.schedule(0.0);
    EXPECT_TRUE(st.preempted.empty());
    done = s.complete_step(st);
  }
  EXPECT_EQ(done, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(steps, 7);
  EXPECT_EQ(kv.free_pages(), 4);
}

// complete_step takes only the step schedule() planned, and a bad one changes nothing; schedule()
// refuses to plan again before the report.
TEST(BatchScheduler, ForeignStepsAreRefusedAndChangeNothing) {
  KvCacheManager kv(64, 16);
  BatchScheduler s(no_wait(), kv);
  s.enqueue_request(req(1, 20, 5));
  s.enqueue_request(req(2, 20, 5));
  s.complete_step(s.schedule(0.0));
  const ScheduledStep st = s.schedule(0.0);
  ASSERT_EQ(st.decode, (std::vector<std::int64_t>{1, 2}));
  auto expect_invalid = [&](const std::function<void()>& f, const std::string& words) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one naming '" << words << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_EQ(s.generated(1), 1);
    EXPECT_EQ(s.generated(2), 1);
    EXPECT_EQ(s.running(), 2);
    EXPECT_EQ(kv.length(s.sequence(1)), 21);
  };
  expect_invalid([&] { s.schedule(0.0); }, "schedule() called again before complete_step()");
  ScheduledStep forged = st;
  forged.decode = {2, 99};
  expect_invalid([&] { s.complete_step(forged); }, "request 99 was not planned in it");
  forged.decode = {2, 2};
  expect_invalid([&] { s.complete_step(forged); }, "request 2 appears in it twice");
  forged.decode = {2};
  expect_invalid([&] { s.complete_step(forged); }, "it lacks request 1, which was");
  expect_invalid([&] { s.complete_step(st, {12345}); },
                 "stopped names request 12345, which is not in the step");
  EXPECT_TRUE(s.complete_step(st, {2}) == (std::vector<std::int64_t>{2}));
  try {
    s.complete_step(st);  // reported once already
    ADD_FAILURE() << "no error for a step reported twice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(none is outstanding)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.generated(1), 2);
  EXPECT_EQ(s.running(), 1);
  // An empty step (nothing to run) needs no report.
  EXPECT_TRUE(s.complete_step(ScheduledStep{}).empty());
}

// Random arrivals, lengths and priorities on a small cache, stepped to completion: every request
// ends with exactly its max_new_tokens tokens (across preemptions), steps stay within max_batch,
// groups within length_ratio and the token budget (a lone long prompt aside), and the cache is
// empty at the end.
// A scheduler destroyed with requests running gives their pages back to the cache, which
// outlives it (they were lost: 3 of 8 pages after one request of 40 prompt keys); it cannot be
// copied (two copies appended to one sequence: 18 keys after one decode step each).
TEST(BatchScheduler, ADestroyedSchedulerFreesItsSequences) {
  static_assert(!std::is_copy_constructible_v<BatchScheduler>);
  static_assert(!std::is_copy_assignable_v<BatchScheduler>);
  KvCacheManager kv(8, 16);
  {
    BatchScheduler s(no_wait(), kv);
    s.enqueue_request(req(1, 40, 50));
    s.complete_step(s.schedule(0.0));
    EXPECT_EQ(kv.free_pages(), 5);
  }
  EXPECT_EQ(kv.free_pages(), 8);
  BatchScheduler again(no_wait(), kv);  // the cache serves a new scheduler whole
  again.enqueue_request(req(2, 8 * 16, 1));
  EXPECT_EQ(again.schedule(0.0).prefill_groups, (Groups{{2}}));
}

// Prompts near 2^31 keys: the prefill budget's sum is taken in 64 bits (it wrapped negative, and
// a second prompt of 1.1e9 joined the group past the budget of 8192).
TEST(BatchScheduler, HugePromptsDoNotOverflowTheBudget) {
  KvCacheManager kv(4, 1 << 30);
  BatchScheduler s(no_wait(), kv);
  s.enqueue_request(req(1, INT_MAX - 10, 1));
  s.enqueue_request(req(2, 1100000000, 1, 0, 1.0));
  const ScheduledStep st = s.schedule(2.0);
  EXPECT_EQ(st.prefill_groups, (Groups{{1}}));
  EXPECT_EQ(s.waiting(), 1);
}

TEST(BatchScheduler, RandomSimulationRunsToCompletion) {
  std::mt19937 rng(11);
  KvCacheManager kv(48, 8);
  SchedulerConfig c = no_wait(6, 96);
  BatchScheduler s(c, kv);
  std::map<std::int64_t, int> want, got;
  std::int64_t next = 0;
  std::set<std::int64_t> done;
  int preemptions = 0, waits_for_pages = 0;
  for (int step = 0; step < 4000 && (next < 60 || done.size() < want.size()); ++step) {
    if (next < 60 && rng() % 3 == 0) {
      const int prompt = 1 + static_cast<int>(rng() % 120), gen = 1 + static_cast<int>(rng() % 40);
      s.enqueue_request(req(next, prompt, gen, static_cast<int>(rng() % 3), step));
      want[next] = gen;
      ++next;
    }
    const ScheduledStep st = s.schedule(step);
    preemptions += static_cast<int>(st.preempted.size());
    waits_for_pages += st.prefill_groups.empty() && s.waiting() > 0;
    int batch = static_cast<int>(st.decode.size());
    int tokens = 0;
    for (const auto& g : st.prefill_groups) {
      batch += static_cast<int>(g.size());
      int lo = INT32_MAX, hi = 0;
      for (const auto id : g) {
        const int len = kv.length(s.sequence(id));
        lo = std::min(lo, len);
        hi = std::max(hi, len);
        tokens += len;
      }
      EXPECT_LE(hi, c.length_ratio * lo);
    }
    EXPECT_LE(batch, c.max_batch);
    if (st.prefill_groups.size() > 1 ||
        (st.prefill_groups.size() == 1 && st.prefill_groups[0].size() > 1)) {
      EXPECT_LE(tokens, c.max_prefill_tokens);
    }
    for (const auto id : st.decode) ++got[id];
    for (const auto& g : st.prefill_groups) {
      for (const auto id : g) ++got[id];
    }
    for (const auto id : s.complete_step(st)) done.insert(id);
  }
  ASSERT_EQ(done.size(), want.size());
  EXPECT_EQ(want.size(), 60u);
  EXPECT_GT(preemptions, 0);      // the workload exercises preemption ...
  EXPECT_GT(waits_for_pages, 0);  // ... and admissions held back by a full cache or batch
  // A preempted request's tokens moved into its prompt and it was asked for the rest only: the
  // steps it took part in produced exactly max_new_tokens tokens.
  for (const auto& [id, n] : want) EXPECT_EQ(got[id], n) << "request " << id;
  EXPECT_EQ(kv.free_pages(), 48);
  EXPECT_EQ(s.running(), 0);
  EXPECT_EQ(s.waiting(), 0);
}

}  // namespace
}  // namespace gpuattn::testing
