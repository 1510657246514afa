// The `auto` sparsity policy (issue 5): for one long-context self-attention call, recommend dense
// attention, a sliding window or a block-sparse layout from a memory estimate of each mode against
// the free memory, and from the sequence length. Explicit opt-in only: attention_forward never
// calls it and never changes a mask on its own; the caller applies the choice (or not).
//
// The rule, in order:
//   1. Every mode keeps Q, K, V, O and the LSE in memory (the kernels are O(N): no S x S matrix);
//      block-sparse adds its layout, one byte per (head, query block, key block), which grows as
//      (S / block)^2. A mode fits when its estimate is at most free_memory_bytes.
//   2. S <= max_dense_seqlen: dense. It is exact, and its S^2 work is what the budget allows.
//      A window hint that reaches across the whole sequence is dense as well.
//   3. Longer, with a window hint: sliding window (window_left = hint, window_right = 0 causal or
//      hint non-causal, plus global_tokens): the least work and no extra memory.
//   4. Longer, without a hint: block-sparse with block_size blocks, at most max_dense_seqlen / S
//      of the key blocks on per query block, when its layout fits next to Q, K, V, O; otherwise a
//      sliding window (window_left = max_dense_seqlen / 2 - 1, right 0 causal; max_dense_seqlen / 2
//      each side non-causal). Either way a query row sees about as many keys as in a dense call of
//      max_dense_seqlen tokens: the work budget.
//   5. When even Q, K, V, O do not fit, the choice of 2-4 stands with fits = false: no mode fits
//      on one device (split the batch, or shard the sequence).
// The reason string names the mode, each estimate, the free memory and the length.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gpuattn/attention.h"

namespace gpuattn {

enum class SparsityMode : std::uint8_t { dense, sliding_window, block_sparse };

// One self-attention call (Sq = Sk = seqlen) as the policy sees it.
struct SparsityRequest {
  std::int64_t seqlen = 0;             // tokens per sequence, > 0
  int batch = 1;                       // sequences, > 0
  int heads = 0;                       // query heads Hq, > 0
  int kv_heads = 0;                    // K/V heads Hkv (dividing Hq); 0: same as heads
  int head_dim = 0;                    // D, > 0
  int dtype_bytes = 2;                 // bytes per element of q/k/v/out: 2 for f16/bf16, 4 for f32
  std::int64_t free_memory_bytes = 0;  // what the call may use (e.g. cudaMemGetInfo's free), >= 0
  std::optional<int> window_hint;      // keys left of each query the model tolerates, >= 0
  int global_tokens = 0;               // global tokens to keep with a window, >= 0
  bool causal = true;
  std::int64_t max_dense_seqlen = 32768;  // longest sequence run dense (the work budget), > 0
  int block_size = 128;                   // block_q = block_k of a block-sparse layout, 16 * n
};

// Memory and work of one mode for the request.
struct SparsityEstimate {
  std::int64_t bytes = 0;    // Q, K, V, O, LSE (+ layout for block-sparse)
  double visible_pairs = 0;  // (query, key) pairs computed, all heads and sequences
  bool fits = false;         // bytes <= free_memory_bytes
};

struct SparsityChoice {
  SparsityMode mode = SparsityMode::dense;
  bool fits = false;  // the chosen mode's estimate is within free memory
  // sliding_window: the window and global tokens to set (mask.window_*, mask.global_tokens);
  // otherwise no window.
  int window_left = -1;
  int window_right = -1;
  int global_tokens = 0;
  // block_sparse: the block size of the layout to build (block_q = block_k) and the largest
  // fraction of its (query block, key block) pairs to turn on; otherwise 0.
  int block_size = 0;
  double max_block_density = 0;
  SparsityEstimate dense, sliding_window, block_sparse;
  std::string reason;
};

// Applies the rule above. Throws gpuattn::Error (invalid_argument) naming a bad request value.
SparsityChoice choose_sparsity(const SparsityRequest& request);

const char* to_string(SparsityMode mode);

}  // namespace gpuattn
