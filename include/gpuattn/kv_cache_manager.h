// The host-side bookkeeping of a paged KV cache (DESIGN.md's KV cache manager; vLLM's block
// manager): which pool pages each sequence holds, in order, with reference counts so that
// sequences forked from one prompt share its pages (prefix sharing) until one of them writes into
// a shared page (copy on write). No CUDA: it hands out page numbers and block tables; the caller
// moves the bytes (append_kv writes new keys, a copy of one page's rows serves a copy on write).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuattn/types.h"

namespace gpuattn {

// A copy the caller must make before writing a sequence's next keys: rows [0, rows) of page `src`
// into page `dst` (the same rows; every head; K and V alike).
struct PageCopy {
  std::int32_t src = 0;
  std::int32_t dst = 0;
  int rows = 0;
};

class KvCacheManager {
 public:
  using SeqId = std::int64_t;

  // A pool of num_pages pages of page_size keys each (both positive; invalid_argument otherwise).
  KvCacheManager(int num_pages, int page_size);

  int num_pages() const { return static_cast<int>(refs_.size()); }
  int page_size() const { return page_size_; }
  int free_pages() const { return static_cast<int>(free_.size()); }

  // A new, empty sequence.
  SeqId add_sequence();
  // A new sequence sharing every page of `parent` (its prompt: prefix sharing), same length.
  SeqId fork(SeqId parent);
  // Returns every page of the sequence whose reference count drops to 0 to the free list.
  void free_sequence(SeqId seq);

  // Pages that appending n keys to seq would take from the free list (a copy on write included).
  int pages_needed(SeqId seq, int n) const;
  // Reserves room for n more keys of seq: new pages from the free list, and where its last page
  // is shared and partly filled, a private copy of it (returned: the caller copies those rows
  // before writing). Afterwards length(seq) has grown by n, and the keys' slots are
  // slot(seq, length - n .. length - 1). Returns nullopt, changing nothing, when the free list is
  // short (evict a sequence and retry). n >= 0. Copies returned by successive calls are to be
  // applied in order: after a free_sequence, one copy's source page can be a later one's
  // destination. A call that throws (bad_alloc included) changes nothing.
  std::optional<std::vector<PageCopy>> append(SeqId seq, int n);

  int length(SeqId seq) const;
  const std::vector<std::int32_t>& pages(SeqId seq) const;
  // How many sequences hold `page` (0: free).
  int refcount(std::int32_t page) const;
  // Pool page and row of key j of seq (j < length(seq)).
  std::pair<std::int32_t, int> slot(SeqId seq, std::int64_t j) const;

  // The block table of `seqs` as int32 [seqs.size(), max_pages], row-major, for
  // AttentionArgs::block_table and append_kv; entries past a sequence's pages are `pad` (never
  // read). max_pages positive and >= every sequence's page count (invalid_argument otherwise).
  std::vector<std::int32_t> block_table(const std::vector<SeqId>& seqs, int max_pages,
                                        std::int32_t pad = -1) const;
  // The lengths of `seqs` as int32, for seqused_k / cache_seqlens.
  std::vector<std::int32_t> lengths(const std::vector<SeqId>& seqs) const;

  // The sequence appended to (or added) longest ago: a candidate to evict when append returns
  // nullopt. nullopt when there are no sequences.
  std::optional<SeqId> least_recently_used() const;

 private:
  struct Seq {
    std::vector<std::int32_t> pages;
    std::int64_t length = 0;
    std::uint64_t last_use = 0;
  };
  const Seq& get(SeqId seq) const;
  Seq& get(SeqId seq);

  int page_size_;
  std::vector<int> refs_;           // per page
  std::vector<std::int32_t> free_;  // a stack: the most recently freed page is reused first
  std::unordered_map<SeqId, Seq> seqs_;
  SeqId next_id_ = 0;
  std::uint64_t clock_ = 0;
};

}  // namespace gpuattn
