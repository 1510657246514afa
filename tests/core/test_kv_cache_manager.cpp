// gpuattn::KvCacheManager: pages handed out as sequences grow, shared by forks with reference
// counts, copied on the first write into a shared partly-filled page, returned when the last holder
// is freed; an append that does not fit changes nothing; block tables and lengths as the attention
// calls take them; every bad argument named. A random workload checks the invariants throughout,
// and one end-to-end case runs append_kv and a paged attention call on the manager's table against
// the dense computation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/alloc_hook.h"  // this binary's operator new
#include "common/expect_error.h"
#include "common/test_util.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/kv_cache_manager.h"
#include "gpuattn/scheduler.h"

namespace gpuattn::testing {
namespace {

TEST(KvCacheManager, PagesFollowTheLength) {
  KvCacheManager m(8, 16);
  const auto s = m.add_sequence();
  EXPECT_EQ(m.length(s), 0);
  EXPECT_TRUE(m.pages(s).empty());
  auto copies = m.append(s, 17);
  ASSERT_TRUE(copies.has_value());
  EXPECT_TRUE(copies->empty());
  EXPECT_EQ(m.length(s), 17);
  EXPECT_EQ(m.pages(s), (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(m.free_pages(), 6);
  EXPECT_EQ(m.slot(s, 16), std::make_pair(std::int32_t{1}, 0));
  EXPECT_EQ(m.pages_needed(s, 15), 0);  // page 1 has 15 free rows
  EXPECT_EQ(m.pages_needed(s, 16), 1);
  ASSERT_TRUE(m.append(s, 15).has_value());
  EXPECT_EQ(m.pages(s).size(), 2u);
  ASSERT_TRUE(m.append(s, 0).has_value());
  EXPECT_EQ(m.length(s), 32);
  m.free_sequence(s);
  EXPECT_EQ(m.free_pages(), 8);
  EXPECT_EQ(m.refcount(0), 0);
}

TEST(KvCacheManager, ForksShareAndCopyOnWrite) {
  KvCacheManager m(6, 4);
  const auto prompt = m.add_sequence();
  ASSERT_TRUE(m.append(prompt, 6).has_value());  // pages 0 (full), 1 (2 of 4 rows)
  const auto a = m.fork(prompt), b = m.fork(prompt);
  EXPECT_EQ(m.length(a), 6);
  EXPECT_EQ(m.pages(a), m.pages(prompt));
  EXPECT_EQ(m.refcount(0), 3);
  EXPECT_EQ(m.refcount(1), 3);
  EXPECT_EQ(m.free_pages(), 4);
  // a writes into the shared, partly filled page 1: a private copy of its 2 rows first.
  EXPECT_EQ(m.pages_needed(a, 1), 1);
  const auto copies = m.append(a, 1);
  ASSERT_TRUE(copies.has_value());
  ASSERT_EQ(copies->size(), 1u);
  EXPECT_EQ((*copies)[0].src, 1);
  EXPECT_EQ((*copies)[0].rows, 2);
  const std::int32_t dst = (*copies)[0].dst;
  EXPECT_EQ(m.pages(a), (std::vector<std::int32_t>{0, dst}));
  EXPECT_EQ(m.refcount(1), 2);
  EXPECT_EQ(m.refcount(dst), 1);
  // a's next write stays in its own page; the full shared page 0 is never copied.
  EXPECT_TRUE(m.append(a, 1)->empty());
  // b copies too; then the prompt is page 1's only holder and writes in place.
  EXPECT_EQ(m.append(b, 3)->size(), 1u);
  EXPECT_EQ(m.refcount(1), 1);
  EXPECT_TRUE(m.append(prompt, 2)->empty());
  EXPECT_EQ(m.pages(prompt), (std::vector<std::int32_t>{0, 1}));
  m.free_sequence(prompt);
  EXPECT_EQ(m.refcount(0), 2);
  EXPECT_EQ(m.refcount(1), 0);
  m.free_sequence(a);
  m.free_sequence(b);
  EXPECT_EQ(m.free_pages(), 6);
}

TEST(KvCacheManager, AnAppendThatDoesNotFitChangesNothing) {
  KvCacheManager m(3, 4);
  const auto s = m.add_sequence(), t = m.add_sequence();
  ASSERT_TRUE(m.append(s, 6).has_value());
  const auto u = m.fork(s);
  EXPECT_EQ(m.pages_needed(u, 7), 3);  // a copy of page 1 and two new pages; 1 is free
  EXPECT_FALSE(m.append(u, 7).has_value());
  EXPECT_EQ(m.length(u), 6);
  EXPECT_EQ(m.pages(u), m.pages(s));
  EXPECT_EQ(m.free_pages(), 1);
  EXPECT_EQ(m.refcount(1), 2);
  // The least recently used sequence is the eviction candidate: t was added before s's append.
  EXPECT_EQ(m.least_recently_used(), t);
  m.free_sequence(t);
  EXPECT_EQ(m.least_recently_used(), s);
}

// An allocation that fails inside append or fork changes nothing: the k-th allocation of each call
// is made to throw, for every k until the call goes through; the pool and the sequences must read
// as before after every throw. (append took a page and grew the length before its push_back could
// throw: a page lost for good and a length without pages; fork raised refcounts before its insert.)
TEST(KvCacheManager, AFailedAllocationChangesNothing) {
  struct State {
    std::vector<int> refs;
    std::map<KvCacheManager::SeqId, std::pair<int, std::vector<std::int32_t>>> seqs;
    int free = 0;
    bool operator==(const State& o) const {
      return refs == o.refs && seqs == o.seqs && free == o.free;
    }
  };
  KvCacheManager m(16, 4);
  std::vector<KvCacheManager::SeqId> ids;
  ids.reserve(4);  // the test's own push_back never allocates under the armed counter
  const auto state = [&] {
    State st;
    for (int p = 0; p < 16; ++p) st.refs.push_back(m.refcount(p));
    for (const auto id : ids) st.seqs[id] = {m.length(id), m.pages(id)};
    st.free = m.free_pages();
    return st;
  };
  const auto each_failure = [&](const char* what, const std::function<void()>& call) {
    for (long k = 0;; ++k) {
      const State before = state();
      alloc_hook::fail_in = k;
      bool threw = false;
      try {
        call();
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      alloc_hook::fail_in = -1;
      if (!threw) return;
      ASSERT_TRUE(state() == before)
          << what << ": allocation " << k << " failed and changed the state";
      ASSERT_LT(k, 50) << what;
    }
  };
  ids.push_back(m.add_sequence());
  each_failure("append to an empty sequence",
               [&] { ASSERT_TRUE(m.append(ids[0], 9).has_value()); });
  each_failure("fork", [&] { ids.push_back(m.fork(ids[0])); });
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_EQ(m.refcount(m.pages(ids[1]).back()), 2);
  each_failure("append with a copy on write",
               [&] { ASSERT_TRUE(m.append(ids[1], 6).has_value()); });
  EXPECT_EQ(m.length(ids[1]), 15);
  EXPECT_NE(m.pages(ids[1])[2], m.pages(ids[0])[2]);
  m.free_sequence(ids[0]);
  m.free_sequence(ids[1]);
  EXPECT_EQ(m.free_pages(), 16);
}

TEST(KvCacheManager, TablesAndLengthsForTheAttentionCall) {
  KvCacheManager m(10, 2);
  const auto a = m.add_sequence(), b = m.add_sequence(), c = m.add_sequence();
  ASSERT_TRUE(m.append(a, 3).has_value());
  ASSERT_TRUE(m.append(b, 1).has_value());
  const std::vector<std::int32_t> table = m.block_table({a, b, c}, 3);
  EXPECT_EQ(table, (std::vector<std::int32_t>{0, 1, -1, 2, -1, -1, -1, -1, -1}));
  EXPECT_EQ(m.lengths({a, b, c}), (std::vector<std::int32_t>{3, 1, 0}));
  expect_invalid_argument([&] { m.block_table({a}, 1); },
                          "sequence 0 holds 2 pages, more than max_pages 1");
}

TEST(KvCacheManager, BadArgumentsAreNamed) {
  expect_invalid_argument([] { KvCacheManager(0, 16); }, "num_pages is 0, must be positive");
  expect_invalid_argument([] { KvCacheManager(4, -1); }, "page_size is -1, must be positive");
  KvCacheManager m(4, 4);
  const auto s = m.add_sequence();
  expect_invalid_argument([&] { m.append(s + 7, 1); }, "sequence 7 does not exist");
  expect_invalid_argument([&] { m.append(s, -2); }, "appending -2 keys: n must be >= 0");
  expect_invalid_argument([&] { m.slot(s, 0); }, "key 0 of sequence 0 is not in [0, 0)");
  expect_invalid_argument([&] { m.refcount(4); }, "page 4 is not in [0, 4)");
  m.free_sequence(s);
  expect_invalid_argument([&] { m.free_sequence(s); }, "sequence 0 does not exist");
}

// Random adds, forks, appends and frees: every page is free or held, refcounts equal the holders,
// page counts follow the lengths, and a full pool refuses without changing anything.
TEST(KvCacheManager, RandomWorkloadKeepsTheInvariants) {
  std::mt19937 rng(7);
  KvCacheManager m(64, 8);
  std::vector<KvCacheManager::SeqId> live;
  for (int step = 0; step < 3000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (live.empty() || op == 0) {
      live.push_back(m.add_sequence());
    } else if (op == 1) {
      live.push_back(m.fork(live[rng() % live.size()]));
    } else if (op == 2) {
      const std::size_t i = rng() % live.size();
      m.free_sequence(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      const auto s = live[rng() % live.size()];
      const int n = static_cast<int>(rng() % 20);
      const int before = m.length(s), free_before = m.free_pages(), need = m.pages_needed(s, n);
      const auto r = m.append(s, n);
      if (r) {
        EXPECT_EQ(m.length(s), before + n);
        EXPECT_EQ(m.free_pages(), free_before - need);
      } else {
        EXPECT_GT(need, free_before);
        EXPECT_EQ(m.length(s), before);
        EXPECT_EQ(m.free_pages(), free_before);
      }
    }
    std::map<std::int32_t, int> holders;
    for (const auto s : live) {
      EXPECT_EQ(static_cast<std::int64_t>(m.pages(s).size()), (m.length(s) + 7) / 8);
      for (const std::int32_t p : m.pages(s)) ++holders[p];
    }
    int held = 0;
    for (int p = 0; p < 64; ++p) {
      const auto it = holders.find(p);
      ASSERT_EQ(m.refcount(p), it == holders.end() ? 0 : it->second) << "page " << p;
      held += m.refcount(p) > 0;
    }
    ASSERT_EQ(held + m.free_pages(), 64);
  }
}

// The manager's table drives append_kv and a paged decode call on the CPU backend: a prompt forked
// into two continuations (copy on write of its partly filled page) attends exactly as the dense
// caches of the two token streams do.
TEST(KvCacheManager, DrivesAppendAndAttention) {
  const int ps = 4, pages = 16, H = 2, D = 64, prompt_len = 6;
  KvCacheManager m(pages, ps);
  HostTensor pool_k(DType::f32, {pages, ps, H, D}), pool_v(DType::f32, {pages, ps, H, D});
  pool_k.randomize(1);  // stale values everywhere: only written rows may matter
  pool_v.randomize(2);
  const std::size_t row = static_cast<std::size_t>(H) * D;
  auto write = [&](KvCacheManager::SeqId s, const HostTensor& kn, const HostTensor& vn) {
    const int n = static_cast<int>(kn.shape[1]), used = m.length(s);
    const auto copies = m.append(s, n);
    ASSERT_TRUE(copies.has_value());
    for (const PageCopy& c : *copies) {  // the caller's copy on write
      for (HostTensor* pool : {&pool_k, &pool_v}) {
        char* base = static_cast<char*>(pool->data());
        std::memcpy(base + c.dst * ps * row * 4, base + c.src * ps * row * 4, c.rows * row * 4);
      }
    }
    const std::vector<std::int32_t> t = m.block_table({s}, pages);
    HostTensor table(DType::i32, {1, pages}), lens = int32s({used});
    std::memcpy(table.data(), t.data(), t.size() * 4);
    AppendKvArgs a;
    a.k_cache = pool_k.view();
    a.v_cache = pool_v.view();
    a.k_new = kn.view();
    a.v_new = vn.view();
    a.cache_seqlens = lens.view();
    a.block_table = table.view();
    append_kv(a);
  };
  // Token streams: the prompt, then two different continuations of 5 keys.
  HostTensor pk(DType::f32, {1, prompt_len, H, D}), pv(DType::f32, {1, prompt_len, H, D});
  pk.randomize(3);
  pv.randomize(4);
  const auto prompt = m.add_sequence();
  write(prompt, pk, pv);
  const auto x = m.fork(prompt), y = m.fork(prompt);
  HostTensor xk(DType::f32, {1, 5, H, D}), xv(DType::f32, {1, 5, H, D}),
      yk(DType::f32, {1, 5, H, D}), yv(DType::f32, {1, 5, H, D});
  xk.randomize(5);
  xv.randomize(6);
  yk.randomize(7);
  yv.randomize(8);
  write(x, xk, xv);
  write(y, yk, yv);
  // One paged decode call over both sequences against each stream's dense cache.
  HostTensor q(DType::f32, {2, 1, 4, D}), out(DType::f32, {2, 1, 4, D});
  q.randomize(9);
  out.poison();
  const std::vector<std::int32_t> t = m.block_table({x, y}, pages);
  HostTensor table(DType::i32, {2, pages});
  std::memcpy(table.data(), t.data(), t.size() * 4);
  const std::vector<std::int32_t> l = m.lengths({x, y});
  const HostTensor lens = int32s({l[0], l[1]});
  AttentionArgs a = tensor_args(q, pool_k, pool_v, out);
  a.block_table = table.view();
  a.seqused_k = lens.view();
  a.causal = true;
  attention_forward(a);
  for (int s = 0; s < 2; ++s) {
    const HostTensor& nk = s == 0 ? xk : yk;
    const HostTensor& nv = s == 0 ? xv : yv;
    HostTensor dk(DType::f32, {1, prompt_len + 5, H, D}), dv(DType::f32, {1, prompt_len + 5, H, D});
    std::memcpy(dk.data(), pk.data(), pk.bytes());
    std::memcpy(static_cast<char*>(dk.data()) + pk.bytes(), nk.data(), nk.bytes());
    std::memcpy(dv.data(), pv.data(), pv.bytes());
    std::memcpy(static_cast<char*>(dv.data()) + pv.bytes(), nv.data(), nv.bytes());
    HostTensor qs(DType::f32, {1, 1, 4, D}), want(DType::f32, {1, 1, 4, D});
    std::memcpy(qs.data(), static_cast<const char*>(q.data()) + s * 4 * D * 4, 4 * D * 4);
    AttentionArgs d = tensor_args(qs, dk, dv, want);
    d.causal = true;
    attention_forward(d);
    for (int i = 0; i < 4 * D; ++i) {
      ASSERT_EQ(out.get(s * 4 * D + i), want.get(i)) << "sequence " << s << " element " << i;
    }
  }
}

// BatchScheduler::schedule is all or nothing: an allocation that fails anywhere in it (a decode's
// append, a preemption, an admission) leaves the cache and the scheduler as they were, and the
// same call then plans the step it would have. (Before, a retry appended a decode's key twice,
// leaked an admitted request's pages, and decoded a request whose prefill never ran.) Here,
// beside the cache's own tests, as this binary's operator new can fail on demand.
TEST(BatchScheduler, AFailedScheduleChangesNothing) {
  const auto request = [](std::int64_t id, int prompt, int priority) {
    Request r;
    r.id = id;
    r.prompt_len = prompt;
    r.max_new_tokens = 8;
    r.priority = priority;
    return r;
  };
  SchedulerConfig cfg;
  cfg.max_wait_s = 0.0;
  int failures = 0;
  for (long k = 0;; ++k) {
    // 5 pages of 16: request 1 (16 keys, then 17: 2 pages) runs beside request 2 (48 keys, 3
    // pages); the step under test decodes 1 (18 keys: no new page), finds no page for request 2's
    // 49th key and preempts it (the lowest priority admitted last), then admits request 3
    // (priority 1, 16 keys: 1 page). Request 2, requeued with 49 keys, waits for 4 pages.
    KvCacheManager kv(5, 16);
    BatchScheduler s(cfg, kv);
    s.enqueue_request(request(1, 16, 0));
    s.complete_step(s.schedule(0.0));
    s.enqueue_request(request(2, 48, 0));
    s.complete_step(s.schedule(0.0));
    ASSERT_EQ(kv.free_pages(), 0);
    s.enqueue_request(request(3, 16, 1));
    const auto snapshot = [&] {
      return std::vector<long long>{kv.free_pages(), kv.length(s.sequence(1)),
                                    kv.length(s.sequence(2)), s.waiting(), s.running()};
    };
    const std::vector<long long> before = snapshot();
    alloc_hook::fail_in = k;
    bool threw = false;
    ScheduledStep st;
    try {
      st = s.schedule(0.0);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    alloc_hook::fail_in = -1;
    if (threw) {
      ++failures;
      ASSERT_EQ(snapshot(), before) << "allocation " << k << " failed and changed the state";
      st = s.schedule(0.0);  // the same call again: the step, whole
    }
    EXPECT_EQ(st.decode, (std::vector<std::int64_t>{1})) << "after allocation " << k;
    EXPECT_EQ(st.preempted, (std::vector<std::int64_t>{2})) << "after allocation " << k;
    EXPECT_EQ(st.prefill_groups, (std::vector<std::vector<std::int64_t>>{{3}}));
    EXPECT_EQ(kv.length(s.sequence(1)), 18);
    EXPECT_EQ(kv.length(s.sequence(3)), 16);
    EXPECT_EQ(kv.free_pages(), 5 - 2 - 1);
    EXPECT_EQ(s.waiting(), 1);
    s.complete_step(st);
    if (!threw) break;
    ASSERT_LT(k, 200);
  }
  EXPECT_GT(failures, 5) << "the step's allocations were not reached";
}

}  // namespace
}  // namespace gpuattn::testing
