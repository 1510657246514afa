#include "gpuattn/kv_cache_manager.h"

#include <algorithm>
#include <climits>
#include <string>

namespace gpuattn {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, "gpuattn::KvCacheManager: " + msg);
}

}  // namespace

KvCacheManager::KvCacheManager(int num_pages, int page_size) : page_size_(page_size) {
  if (num_pages <= 0) invalid("num_pages is " + std::to_string(num_pages) + ", must be positive");
  if (page_size <= 0) invalid("page_size is " + std::to_string(page_size) + ", must be positive");
  refs_.assign(static_cast<std::size_t>(num_pages), 0);
  free_.reserve(refs_.size());
  for (int p = num_pages - 1; p >= 0; --p) free_.push_back(p);  // page 0 is handed out first
}

const KvCacheManager::Seq& KvCacheManager::get(SeqId seq) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) invalid("sequence " + std::to_string(seq) + " does not exist");
  return it->second;
}

KvCacheManager::Seq& KvCacheManager::get(SeqId seq) {
  return const_cast<Seq&>(static_cast<const KvCacheManager*>(this)->get(seq));
}

KvCacheManager::SeqId KvCacheManager::add_sequence() {
  Seq s;
  s.last_use = ++clock_;
  seqs_.emplace(next_id_, std::move(s));
  return next_id_++;
}

KvCacheManager::SeqId KvCacheManager::fork(SeqId parent) {
  // The child is in the map (the allocations that can throw) before any refcount moves.
  Seq& child = seqs_.emplace(next_id_, get(parent)).first->second;
  for (const std::int32_t p : child.pages) ++refs_[static_cast<std::size_t>(p)];
  child.last_use = ++clock_;
  return next_id_++;
}

void KvCacheManager::free_sequence(SeqId seq) {
  const Seq& s = get(seq);
  for (const std::int32_t p : s.pages) {
    if (--refs_[static_cast<std::size_t>(p)] == 0) free_.push_back(p);
  }
  seqs_.erase(seq);
}

int KvCacheManager::pages_needed(SeqId seq, int n) const {
  if (n < 0) invalid("appending " + std::to_string(n) + " keys: n must be >= 0");
  const Seq& s = get(seq);
  if (n == 0) return 0;
  const std::int64_t end = s.length + n;
  const std::int64_t pages = (end + page_size_ - 1) / page_size_;
  const bool copy =
      s.length % page_size_ != 0 && refs_[static_cast<std::size_t>(s.pages.back())] > 1;
  const std::int64_t need = pages - static_cast<std::int64_t>(s.pages.size()) + (copy ? 1 : 0);
  return need > INT32_MAX ? INT32_MAX : static_cast<int>(need);
}

std::optional<std::vector<PageCopy>> KvCacheManager::append(SeqId seq, int n) {
  const int need = pages_needed(seq, n);  // validates seq and n
  Seq& s = get(seq);
  if (static_cast<std::int64_t>(s.length) + n > INT32_MAX) {
    invalid("sequence " + std::to_string(seq) + " would hold " + std::to_string(s.length + n) +
            " keys, more than 2^31 - 1");
  }
  if (need > free_pages()) return std::nullopt;
  // Every allocation before the first change, so that a bad_alloc changes nothing.
  const bool copy_on_write =
      n > 0 && s.length % page_size_ != 0 && refs_[static_cast<std::size_t>(s.pages.back())] > 1;
  std::vector<PageCopy> copies;
  if (copy_on_write) copies.reserve(1);
  s.pages.reserve(static_cast<std::size_t>((s.length + n + page_size_ - 1) / page_size_));
  auto take = [&] {
    const std::int32_t p = free_.back();
    free_.pop_back();
    refs_[static_cast<std::size_t>(p)] = 1;
    return p;
  };
  if (copy_on_write) {
    std::int32_t& last = s.pages.back();
    const std::int32_t dst = take();
    copies.push_back({last, dst, static_cast<int>(s.length % page_size_)});
    --refs_[static_cast<std::size_t>(last)];
    last = dst;
  }
  s.length += n;
  while (static_cast<std::int64_t>(s.pages.size()) * page_size_ < s.length)
    s.pages.push_back(take());
  s.last_use = ++clock_;
  return copies;
}

int KvCacheManager::length(SeqId seq) const {
  return static_cast<int>(get(seq).length);
}

const std::vector<std::int32_t>& KvCacheManager::pages(SeqId seq) const {
  return get(seq).pages;
}

int KvCacheManager::refcount(std::int32_t page) const {
  if (page < 0 || page >= num_pages()) {
    invalid("page " + std::to_string(page) + " is not in [0, " + std::to_string(num_pages()) + ")");
  }
  return refs_[static_cast<std::size_t>(page)];
}

std::pair<std::int32_t, int> KvCacheManager::slot(SeqId seq, std::int64_t j) const {
  const Seq& s = get(seq);
  if (j < 0 || j >= s.length) {
    invalid("key " + std::to_string(j) + " of sequence " + std::to_string(seq) + " is not in [0, " +
            std::to_string(s.length) + ")");
  }
  return {s.pages[static_cast<std::size_t>(j / page_size_)], static_cast<int>(j % page_size_)};
}

std::vector<std::int32_t> KvCacheManager::block_table(const std::vector<SeqId>& seqs, int max_pages,
                                                      std::int32_t pad) const {
  if (max_pages <= 0) invalid("max_pages is " + std::to_string(max_pages) + ", must be positive");
  std::vector<std::int32_t> table(seqs.size() * static_cast<std::size_t>(max_pages), pad);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const Seq& s = get(seqs[i]);
    if (static_cast<std::int64_t>(s.pages.size()) > max_pages) {
      invalid("sequence " + std::to_string(seqs[i]) + " holds " + std::to_string(s.pages.size()) +
              " pages, more than max_pages " + std::to_string(max_pages));
    }
    std::copy(s.pages.begin(), s.pages.end(), table.begin() + i * max_pages);
  }
  return table;
}

std::vector<std::int32_t> KvCacheManager::lengths(const std::vector<SeqId>& seqs) const {
  std::vector<std::int32_t> out;
  out.reserve(seqs.size());
  for (const SeqId s : seqs) out.push_back(static_cast<std::int32_t>(get(s).length));
  return out;
}

std::optional<KvCacheManager::SeqId> KvCacheManager::least_recently_used() const {
  std::optional<SeqId> best;
  std::uint64_t oldest = 0;
  for (const auto& [id, s] : seqs_) {
    if (!best || s.last_use < oldest) {
      best = id;
      oldest = s.last_use;
    }
  }
  return best;
}

}  // namespace gpuattn
