#include "gpuattn/scheduler.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <iterator>
#include <sstream>
#include <string>

namespace gpuattn {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, "gpuattn::BatchScheduler: " + msg);
}

// A double as written back (std::to_string prints 0.000000 for 1e-9 and "inf" / "nan" alike).
std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// The ids a step runs (decodes, then the prefill groups in order).
std::vector<std::int64_t> ids_of(const ScheduledStep& step) {
  std::vector<std::int64_t> ids = step.decode;
  for (const auto& group : step.prefill_groups) ids.insert(ids.end(), group.begin(), group.end());
  return ids;
}

}  // namespace

BatchScheduler::BatchScheduler(const SchedulerConfig& config, KvCacheManager& kv)
    : cfg_(config), kv_(kv) {
  if (cfg_.max_batch <= 0) {
    invalid("max_batch is " + std::to_string(cfg_.max_batch) + ", must be positive");
  }
  if (cfg_.max_prefill_tokens <= 0) {
    invalid("max_prefill_tokens is " + std::to_string(cfg_.max_prefill_tokens) +
            ", must be positive");
  }
  if (!(cfg_.length_ratio >= 1.0)) {
    invalid("length_ratio is " + num(cfg_.length_ratio) + ", must be >= 1");
  }
  if (!(cfg_.max_wait_s >= 0.0) || !std::isfinite(cfg_.max_wait_s)) {
    invalid("max_wait_s is " + num(cfg_.max_wait_s) + ", must be finite and >= 0");
  }
  if (cfg_.deep_queue <= 0) {
    invalid("deep_queue is " + std::to_string(cfg_.deep_queue) + ", must be positive");
  }
}

void BatchScheduler::enqueue_request(const Request& r) {
  const std::string who = "request " + std::to_string(r.id);
  if (r.prompt_len <= 0) {
    invalid(who + ": prompt_len is " + std::to_string(r.prompt_len) + ", must be positive");
  }
  if (r.max_new_tokens <= 0) {
    invalid(who + ": max_new_tokens is " + std::to_string(r.max_new_tokens) + ", must be positive");
  }
  if (!std::isfinite(r.arrival_s)) {
    invalid(who + ": arrival_s is " + num(r.arrival_s) + ", must be finite");
  }
  // The keys it can come to hold: the prompt's and every generated token's but the last one's,
  // which is never fed back (recomputed after a preemption, the same total).
  const std::int64_t keys = static_cast<std::int64_t>(r.prompt_len) + r.max_new_tokens - 1;
  if (keys > INT32_MAX) {
    invalid(who + ": prompt_len (" + std::to_string(r.prompt_len) + ") + max_new_tokens (" +
            std::to_string(r.max_new_tokens) + ") - 1 is " + std::to_string(keys) +
            " keys, more than a cache sequence holds (2^31 - 1)");
  }
  const std::int64_t pages = (keys + kv_.page_size() - 1) / kv_.page_size();
  if (pages > kv_.num_pages()) {
    invalid(who + ": " + std::to_string(keys) + " keys need " + std::to_string(pages) +
            " pages, the cache has " + std::to_string(kv_.num_pages()));
  }
  if (running_.count(r.id) != 0 ||
      std::any_of(queue_.begin(), queue_.end(), [&](const Request& q) { return q.id == r.id; })) {
    invalid(who + " is already queued or running");
  }
  // By priority (higher first), then arrival; after every equal one.
  const auto at = std::find_if(queue_.begin(), queue_.end(), [&](const Request& q) {
    return q.priority < r.priority || (q.priority == r.priority && q.arrival_s > r.arrival_s);
  });
  queue_.insert(at, r);
}

void BatchScheduler::requeue(const Request& r) {
  // At the head of its priority: it was admitted before everything of its priority still waiting.
  const auto at = std::find_if(queue_.begin(), queue_.end(),
                               [&](const Request& q) { return q.priority <= r.priority; });
  queue_.insert(at, r);
}

KvCacheManager::SeqId BatchScheduler::sequence(std::int64_t id) const {
  const auto it = running_.find(id);
  if (it == running_.end()) invalid("request " + std::to_string(id) + " is not running");
  return it->second.seq;
}

int BatchScheduler::generated(std::int64_t id) const {
  const auto it = running_.find(id);
  if (it == running_.end()) invalid("request " + std::to_string(id) + " is not running");
  return it->second.generated;
}

std::vector<std::int64_t> BatchScheduler::form_group(int slots, std::int64_t token_budget) {
  // The first waiting request leads; the others join in queue order while the group's longest
  // prompt stays within length_ratio of its shortest, and the slots, the token budget and the
  // cache allow. A lead longer than the whole budget runs alone.
  std::vector<std::int64_t> group;
  if (queue_.empty() || slots <= 0) return group;
  int lo = queue_.front().prompt_len, hi = lo;
  std::int64_t tokens = 0;  // prompts near 2^31 each: their sum in 64 bits
  for (auto it = queue_.begin(); it != queue_.end() && static_cast<int>(group.size()) < slots;) {
    const int len = it->prompt_len;
    const int new_lo = std::min(lo, len), new_hi = std::max(hi, len);
    const bool lead = group.empty();
    const bool fits_ratio = new_hi <= cfg_.length_ratio * new_lo;
    const bool fits_budget =
        tokens + len <= token_budget || (lead && token_budget == cfg_.max_prefill_tokens);
    if (!lead && (!fits_ratio || !fits_budget)) {
      ++it;
      continue;
    }
    if (lead && !fits_budget) break;
    const KvCacheManager::SeqId seq = kv_.add_sequence();
    if (!kv_.append(seq, len)) {  // the cache is full: admit nothing more this step
      kv_.free_sequence(seq);
      break;
    }
    Running run;
    run.req = *it;
    run.seq = seq;
    run.admitted = ++admissions_;
    running_.emplace(it->id, run);
    group.push_back(it->id);
    lo = new_lo;
    hi = new_hi;
    tokens += len;
    it = queue_.erase(it);
  }
  return group;
}

ScheduledStep BatchScheduler::schedule(double now_s) {
  if (std::isnan(now_s)) invalid("schedule: now_s is nan");
  // Each step appends its decodes' keys here: planning another before the last one is reported
  // would append them twice.
  if (!outstanding_.empty()) {
    invalid("schedule() called again before complete_step() reported the step it planned (" +
            std::to_string(outstanding_.size()) + " requests, request " +
            std::to_string(outstanding_.front()) + " first)");
  }
  // All or nothing: planning appends keys, frees a victim's pages and admits requests; where any
  // of it throws (an allocation), the cache and the scheduler go back to what they were. The
  // copies are of bookkeeping only (O(pages + requests)); moving them back cannot throw.
  KvCacheManager kv_before = kv_;
  std::deque<Request> queue_before = queue_;
  std::unordered_map<std::int64_t, Running> running_before = running_;
  const std::uint64_t admissions_before = admissions_;
  try {
    ScheduledStep step = plan(now_s);
    outstanding_ = ids_of(step);
    return step;
  } catch (...) {
    kv_ = std::move(kv_before);
    queue_ = std::move(queue_before);
    running_ = std::move(running_before);
    admissions_ = admissions_before;
    outstanding_.clear();
    throw;
  }
}

BatchScheduler::~BatchScheduler() {
  // The running requests' cache sequences go back to the cache, which outlives the scheduler.
  // A sequence the caller freed behind the scheduler's back is skipped (a destructor must not
  // throw).
  for (const auto& [id, run] : running_) {
    try {
      kv_.free_sequence(run.seq);
    } catch (const Error&) {
    }
  }
}

ScheduledStep BatchScheduler::plan(double now_s) {
  ScheduledStep step;
  // Decodes: every running request appends its last token's keys, oldest admission first. When
  // the cache is short, the running request of lowest priority admitted last is preempted.
  std::vector<std::int64_t> order;
  order.reserve(running_.size());
  for (const auto& [id, run] : running_) order.push_back(id);
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return running_.at(a).admitted < running_.at(b).admitted;
  });
  for (const std::int64_t id : order) {
    while (running_.count(id) != 0) {
      Running& run = running_.at(id);
      if (auto copies = kv_.append(run.seq, 1)) {
        step.copies.insert(step.copies.end(), copies->begin(), copies->end());
        step.decode.push_back(id);
        break;
      }
      std::int64_t victim = id;
      for (const auto& [other, r] : running_) {
        const Running& v = running_.at(victim);
        if (r.req.priority < v.req.priority ||
            (r.req.priority == v.req.priority && r.admitted > v.admitted)) {
          victim = other;
        }
      }
      Running& v = running_.at(victim);
      // Recompute: the tokens it generated join its prompt.
      Request again = v.req;
      again.prompt_len += v.generated;
      again.max_new_tokens -= v.generated;
      kv_.free_sequence(v.seq);
      running_.erase(victim);
      step.decode.erase(std::remove(step.decode.begin(), step.decode.end(), victim),
                        step.decode.end());
      step.preempted.push_back(victim);
      requeue(again);
    }
  }

  // Admissions: groups of similar prompt length into the free slots. With nothing running, a
  // shallow queue waits up to max_wait_s x (1 - depth / deep_queue) after its oldest arrival.
  if (queue_.empty()) return step;
  if (step.decode.empty() && static_cast<int>(queue_.size()) < cfg_.deep_queue) {
    double oldest = queue_.front().arrival_s;
    for (const Request& r : queue_) oldest = std::min(oldest, r.arrival_s);
    const double limit =
        cfg_.max_wait_s * (1.0 - static_cast<double>(queue_.size()) / cfg_.deep_queue);
    if (now_s - oldest < limit) {
      step.wait_s = limit - (now_s - oldest);
      return step;
    }
  }
  int slots = cfg_.max_batch - static_cast<int>(step.decode.size());
  std::int64_t budget = cfg_.max_prefill_tokens;
  while (slots > 0 && budget > 0 && !queue_.empty()) {
    std::vector<std::int64_t> group = form_group(slots, budget);
    if (group.empty()) break;
    for (const std::int64_t id : group) budget -= running_.at(id).req.prompt_len;
    slots -= static_cast<int>(group.size());
    step.prefill_groups.push_back(std::move(group));
  }
  return step;
}

std::vector<std::int64_t> BatchScheduler::complete_step(const ScheduledStep& step,
                                                        const std::vector<std::int64_t>& stopped) {
  // Everything is checked before anything changes: the step must be the one schedule() planned
  // (each request once), and `stopped` may name only requests in it.
  const std::vector<std::int64_t> ids = ids_of(step);
  std::vector<std::int64_t> want = outstanding_, got = ids;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (got != want) {
    const auto dup = std::adjacent_find(got.begin(), got.end());
    std::string why;
    if (dup != got.end()) {
      why = "request " + std::to_string(*dup) + " appears in it twice";
    } else {
      std::vector<std::int64_t> extra, missing;
      std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                          std::back_inserter(extra));
      std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                          std::back_inserter(missing));
      why = !extra.empty() ? "request " + std::to_string(extra.front()) + " was not planned in it"
                           : "it lacks request " + std::to_string(missing.front()) + ", which was";
    }
    invalid("complete_step: the step is not the one schedule() planned" +
            std::string(outstanding_.empty() ? " (none is outstanding)" : "") + ": " + why);
  }
  for (const std::int64_t id : stopped) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
      invalid("complete_step: stopped names request " + std::to_string(id) +
              ", which is not in the step");
    }
  }
  outstanding_.clear();
  std::vector<std::int64_t> done;
  auto advance = [&](std::int64_t id) {
    const auto it = running_.find(id);
    Running& run = it->second;
    ++run.generated;
    const bool stop = std::find(stopped.begin(), stopped.end(), id) != stopped.end();
    if (stop || run.generated >= run.req.max_new_tokens) {
      kv_.free_sequence(run.seq);
      running_.erase(it);
      done.push_back(id);
    }
  };
  for (const std::int64_t id : ids) advance(id);
  return done;
}

}  // namespace gpuattn
