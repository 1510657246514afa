// A continuous-batching scheduler (DESIGN.md's scheduler; vLLM's scheduler, the seed report's
// ContinuousBatchScheduler), host-only. Requests wait in a queue by priority, then arrival; each
// step every running request decodes one token, and new requests are admitted in groups of
// similar prompt length (the longest at most `length_ratio` times the shortest) as far as the
// batch size, the step's prefill tokens and the KV cache's free pages allow. When the cache runs
// out of pages for the decodes, the running request of lowest priority admitted last is
// preempted: its pages are freed and it waits again at the head of its priority, to be recomputed
// from its prompt and the tokens it had generated.
// A shallow queue may wait a little for company (the adaptive wait): the wait shrinks with the
// queue's depth and ends at `max_wait_s` after the oldest arrival.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "gpuattn/kv_cache_manager.h"

namespace gpuattn {

struct Request {
  std::int64_t id = 0;
  int prompt_len = 0;      // > 0
  int max_new_tokens = 0;  // > 0: tokens to generate, the first by the prefill step
  int priority = 0;        // higher first
  double arrival_s = 0.0;  // the caller's clock (finite)
  // It can come to hold prompt_len + max_new_tokens - 1 keys (the last token's are never
  // appended): at most 2^31 - 1, and in pages no more than the cache has.
};

struct SchedulerConfig {
  int max_batch = 64;             // requests in one step (decodes and prefills together)
  int max_prefill_tokens = 8192;  // prompt tokens admitted in one step (a longer lone prompt
                                  // is admitted alone)
  double length_ratio = 2.0;      // >= 1: a group's longest prompt / its shortest
  double max_wait_s = 0.002;      // finite, >= 0: the longest a shallow queue waits for company
  int deep_queue = 32;            // waiting requests at which nobody waits
};

// One step's plan. The caller runs the prefill groups (each a batch of similar lengths) and the
// decodes, after making `copies` (copies on write of shared pages), then reports with
// complete_step.
struct ScheduledStep {
  std::vector<std::int64_t> decode;                       // running: one token each
  std::vector<std::vector<std::int64_t>> prefill_groups;  // admitted now, grouped
  std::vector<std::int64_t> preempted;                    // back in the queue, pages freed
  std::vector<PageCopy> copies;
  double wait_s = 0.0;  // > 0: nothing to run; call again after this long (or on a new request)
  bool empty() const { return decode.empty() && prefill_groups.empty(); }
};

class BatchScheduler {
 public:
  // `kv` must outlive the scheduler; the scheduler holds one cache sequence per running request,
  // and frees them when it is destroyed. Not copyable: two schedulers would drive the same
  // sequences.
  BatchScheduler(const SchedulerConfig& config, KvCacheManager& kv);
  ~BatchScheduler();
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  // Queues a request (invalid_argument naming the field for a bad one, or a duplicate id).
  void enqueue_request(const Request& r);
  // Plans the next step at time now_s (not NaN). It appends the decodes' keys to the cache, so a
  // step with requests in it must be reported with complete_step before the next schedule (an
  // empty step, e.g. one that waits, needs no report); invalid_argument otherwise. All or
  // nothing: where it throws (an allocation failure), the cache and the scheduler are as before
  // the call (it keeps a copy of the cache's bookkeeping for the step: O(pages + requests)).
  ScheduledStep schedule(double now_s);
  // The step ran: every request in it produced one token. Returns the ids that are now done
  // (max_new_tokens reached or listed in `stopped`, e.g. at an end-of-sequence token); their
  // cache sequences are freed. `step` must be the one the last schedule planned and `stopped`
  // may name only requests in it (invalid_argument naming the request otherwise, and nothing
  // changes).
  std::vector<std::int64_t> complete_step(const ScheduledStep& step,
                                          const std::vector<std::int64_t>& stopped = {});

  int waiting() const { return static_cast<int>(queue_.size()); }
  int running() const { return static_cast<int>(running_.size()); }
  // The cache sequence of a running request (its block table row; its length is the keys in the
  // cache: the prompt plus the tokens generated before this step).
  KvCacheManager::SeqId sequence(std::int64_t id) const;
  int generated(std::int64_t id) const;

 private:
  struct Running {
    Request req;
    KvCacheManager::SeqId seq = 0;
    int generated = 0;
    std::uint64_t admitted = 0;  // order of admission
  };
  void requeue(const Request& r);
  ScheduledStep plan(double now_s);
  std::vector<std::int64_t> form_group(int slots, std::int64_t token_budget);

  SchedulerConfig cfg_;
  KvCacheManager& kv_;
  std::deque<Request> queue_;  // by priority (higher first), then arrival
  std::unordered_map<std::int64_t, Running> running_;
  std::uint64_t admissions_ = 0;
  std::vector<std::int64_t> outstanding_;  // the planned step's ids until complete_step
};

}  // namespace gpuattn
