// Attention forward: out = softmax(q k^T * scale [+ mask]) v, exact, with fp32 accumulation.
#pragma once

#include <optional>

#include "gpuattn/types.h"

namespace gpuattn {

enum class Backend : std::uint8_t {
  automatic,  // from where the tensors live: CUDA tensors -> CUDA kernels, host tensors -> CPU
  cpu,        // tiled, threaded fp32 CPU path (host tensors only)
  cuda,       // CUDA kernels (device tensors only)
};

enum class Precision : std::uint8_t {
  standard,     // fp32 accumulators, online softmax
  compensated,  // additionally Kahan-compensated softmax denominator and output accumulators
};

// A user block-sparse layout (issue 5): which (query block, key block) pairs are computed at all.
//   layout: uint8 [H, n_blocks_q, n_blocks_k], H = Hq (one layout per query head) or 1 (shared by
//           every head), n_blocks_q = ceil(Sq / block_q), n_blocks_k = ceil(Sk / block_k); for
//           varlen calls Sq/Sk are max_seqlen_q/k and the same layout applies to every sequence,
//           block 0 at its first row and key (a sequence uses the blocks its length covers).
//           Byte (h, r, c) nonzero: query rows [r * block_q, (r + 1) * block_q) of head h may see
//           keys [c * block_k, (c + 1) * block_k); zero: they see none of them. Blocks count query
//           rows i (not bottom-right positions). Any non-negative strides; on the device of q.
//   block_q, block_k: the block sizes the layout assumes, positive multiples of 16 (64 and 128 are
//           the usual ones; a block size need not divide the sequence length). On Hopper at head
//           dims 64 and 128, a layout alone (no causal, window or global tokens) whose block_q and
//           block_k are multiples of 128 runs on the dense kernel, loading only the on tiles: the
//           fastest block sizes there (128 x 128: 0.66x FlexAttention's time at 90% sparsity).
// Absent layout (the default): no block mask, and block_q/block_k must be 0.
struct BlockSparseLayout {
  TensorView layout;
  int block_q = 0;
  int block_k = 0;
};

// Sparse attention masks beyond causal (issue 5). Positions are bottom-right aligned like causal:
// in a sequence of Sq queries and Sk keys, query i sits at key position p = i + Sk - Sq (p = i when
// Sq == Sk; a decode query is the last token). Query i sees key j (0 <= j < Sk) iff
//   block_on(i, j) and (!causal || j <= p) and (in_window(p, j) or j is global or p is global)
// where
//   block_on:  no block layout, or byte (i / block_q, j / block_k) of the layout is nonzero
//   in_window: (window_left < 0 || j >= p - window_left) &&
//              (window_right < 0 || j <= p + window_right)
//              (flash-attn's window_size = (window_left, window_right): -1 is unbounded on that
//              side, (-1, -1) no window; without global tokens, causal + window (l, r) is the
//              window (l, min(r, 0)), and causal alone the window (-1, 0))
//   global:    a position t >= 0 is global iff t < global_tokens or (global_stride > 0 and
//              t % global_stride == 0): global keys are seen by every query, global queries see
//              every key (Longformer). Global tokens widen a window; without a window every key is
//              already visible and they change nothing.
// The block layout combines with everything else by AND: an element is visible iff its block is
// on AND causal, the window and the global tokens allow it (a global token does not reach into a
// block that is off). Causal is a hard limit too: a global key after the causal limit stays
// invisible, and a global query sees every key up to its causal limit only. Windows larger than
// the sequence, window 0 (the key at the query's own position only) and global_tokens > Sk are all
// valid. A query row that sees no key (e.g. every block of its row is off) gets out = 0 and
// lse = -inf. For varlen calls Sq and Sk are the lengths of each sequence.
// Every backend honours every mask, skipping the key tiles no row of a block sees: the CPU
// backend, the reference, the Hopper kernel and the sm_80 kernel. On CUDA a block layout must be
// device memory of q's device.
struct MaskSpec {
  int window_left = -1;   // >= 0, or -1 (unbounded)
  int window_right = -1;  // >= 0, or -1 (unbounded)
  int global_tokens = 0;  // >= 0: the first global_tokens positions are global
  int global_stride = 0;  // >= 0: every global_stride-th position (0, S, 2S, ...) is global; 0: off
  BlockSparseLayout block_sparse;  // default: none
};

// Arguments of one attention forward call.
//
// Dense layout:  q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D], out [B, Sq, Hq, D];
//                lse (optional, fp32) [B, Hq, Sq].
// Varlen layout: q [total_q, Hq, D], k/v [total_k, Hkv, D], out [total_q, Hq, D], with
//                cu_seqlens_q/k int32 [batch + 1] (prefix sums starting at 0, on the same device
//                as q) and max_seqlen_q/k; lse (optional, fp32) [Hq, total_q] as in flash-attn.
// Any strides are accepted as long as the last dimension is contiguous and every other stride is a
// multiple of 16 bytes (a sequence (row) stride of q, k, v and out at most 2^23 elements, on every
// backend: the kernels step 256 rows in int32); pointers must be 16-byte aligned. Hq must be a
// multiple of Hkv (GQA/MQA: query head h reads kv head h / (Hq / Hkv); K/V are never copied).
// Causal masking is bottom-right aligned when Sq != Sk (flash-attn >= 2.1): query i sees key j iff
// j <= i + Sk - Sq. A query row that sees no key gets out = 0 and lse = -inf. `mask` adds a
// sliding window, global tokens and a block-sparse layout (see MaskSpec).
// q/k/v/out share a dtype: f16 or bf16 (either backend) or f32 (CPU backend only), except that k/v
// may be an 8-bit quantized cache (k_scale below) and q may be FP8 E4M3 beside an E4M3 cache
// (q_scale below); D is 64, 128 or 256 (any other is ErrorCode::not_supported).
// Inputs are expected finite; they are not scanned. A NaN or inf in q, k or v makes the rows that
// see it NaN or inf, and may reach rows of the same tile that do not see that key (a masked key's
// weight is 0, and 0 x inf is NaN, on the tensor cores as on the CPU). fp16 / bf16 outputs are
// the fp32 result rounded: values past the type's range (|v| near 65504 in fp16 summed over
// many keys) may round to inf. The weighted sum of V is accumulated in fp32 before its division by
// the row's softmax total, so |v| near FLT_MAX (bf16 or f32) may give inf where the average is
// finite. out and lse may not share memory with q, k, v, each other or any other view the call
// reads (the mask's layout, cu_seqlens, seqused_k, leftpad_k, block_table, the scales, counters), nor write
// an element twice (invalid_argument), except that out may be q itself, the same view (in place).
struct AttentionArgs {
  TensorView q, k, v, out;
  TensorView lse;  // optional

  // Varlen only: int32 [batch + 1]. A sequence may be empty on either side, and so may every
  // sequence: packed k/v (or q/out) of 0 rows, through valid pointers (rows without keys get
  // out = 0 and lse = -inf).
  TensorView cu_seqlens_q;
  TensorView cu_seqlens_k;
  int max_seqlen_q = 0;
  int max_seqlen_k = 0;
  // Dense calls only, optional: int32 [batch], the keys sequence b uses, each in [0, Sk] (a KV
  // cache of Sk slots filled to seqused_k[b]; flash-attn's cache_seqlens). Causal stays
  // bottom-right aligned to the used keys. On CUDA it lives next to q and its values are checked
  // on a host copy (a stream synchronization, as for cu_seqlens); decode calls (at most 64 query
  // rows per KV head, standard precision, no mask beyond causal) run the split-KV decode kernel,
  // every other call the portable sm_80 kernel, on Hopper too (the wgmma kernel does not read
  // it), whatever GPUATTN_KERNEL names. Every mask and precision works with it, on both backends.
  TensorView seqused_k;
  // Dense calls only, optional: int32 [batch], the first key sequence b uses, each in
  // [0, seqused_k[b]] (or [0, Sk]): sequence b attends to keys leftpad_k[b] .. seqused_k[b] - 1
  // of its cache (flash-attn's leftpad_k, cache_leftpad in Python), and every mask counts keys
  // from there (causal bottom-right aligned to those keys). With a block table the positions are
  // logical (key leftpad_k[b] + j in page block_table[b][(leftpad_k[b] + j) / page_size]). On
  // CUDA it lives next to q and is checked on a host copy with seqused_k; it takes the kernels
  // seqused_k takes (decode calls the split-KV decode kernel, reading a dense or paged cache in
  // place; every other call the sm_80 kernel), on both backends.
  TensorView leftpad_k;
  // Dense calls only, optional: a paged KV cache (flash-attn's block_table; vLLM's block tables).
  // k and v are then [num_pages, page_size, Hkv, D], a pool of fixed-size pages of page_size keys
  // each (any page_size >= 1), and block_table is int32 [B, max_pages] (last stride 1, on q's
  // device): key j of sequence b lives in page block_table[b][j / page_size], row j % page_size.
  // The logical cache length is Sk = max_pages * page_size; seqused_k (above) cuts it per
  // sequence, and causal is bottom-right aligned to the keys used. Entries of the pages a sequence
  // uses (those holding its logical keys leftpad_k[b] .. seqused_k[b] - 1; without leftpad_k the
  // first ceil(seqused_k[b] / page_size)) must be in [0, num_pages); the rest are never
  // read (vLLM pads them with anything). Pages may be shared between sequences. On CUDA the table
  // (and seqused_k) are checked on a host copy (a stream synchronization); decode calls (as
  // above) read the pages in place in the split-KV decode kernel, and every other call (prefill
  // over a paged cache, compensated precision, windows) first gathers the used pages into a
  // contiguous buffer from the library's pool (2 x B x the largest seqused_k x Hkv x D elements, freed on
  // `stream`) and runs on it. Every mask and precision works with it, on both backends.
  TensorView block_table;

  // Optional: a quantized KV cache (INT8 or FP8 with per-head scales). k and v are then of dtype
  // i8 or e4m3 (both the same; FP8 E4M3 is the OCP "fn" format, largest finite 448) while q and
  // out are f16 or bf16 (f32 too on the CPU backend), and k_scale / v_scale are float32 [Hkv] (one
  // scale a KV head) or [1] (one for every head), the two of the same shape and, at [Hkv], the
  // same stride (one stride reads both), on q's device, each positive, finite and at most
  // FLT_MAX / 448 (about 7.6e35, so that 448 x scale stays finite): element
  // x of KV head hk stands for x * k_scale[hk] in K (v_scale[hk] in V). append_kv writes such a
  // cache from 16-bit keys and values with the same scales. Required with 8-bit k/v, absent
  // otherwise. Any layout and mask works: dense, varlen, seqused_k, paged, every mask and
  // precision, on both backends. On CUDA, decode calls (as at seqused_k) read the 8-bit cache in
  // place in the split-KV decode kernel (half the bytes of a 16-bit cache; the scales are applied
  // to the scores and the output, never per element), and every other call first dequantizes the
  // keys each sequence uses into a 16-bit buffer from the library's pool (as a paged prefill
  // gathers its pages). On CUDA the scale values are checked on a host copy when check_indices is
  // set (a stream synchronization), and trusted otherwise. A float16 call's dequantized copy holds
  // x * scale in float16, so there a scale above 65504 / 448 (about 146; int8: 65504 / 127, about
  // 516) is refused by name when checked (a bfloat16 call, or a decode call, takes it) and reads
  // infinities when not.
  TensorView k_scale;
  TensorView v_scale;
  // Optional: FP8 attention. q is then of dtype e4m3 too, beside an E4M3 cache (k/v e4m3 with
  // k_scale / v_scale, as above), and q_scale is float32 [Hq] (one scale a query head) or [1], on
  // q's device, each positive, finite and at most FLT_MAX / 448: element x of query head h stands
  // for x * q_scale[h].
  // out is f16 or bf16 (f32 too on the CPU backend) and is the dtype the call computes in. Every
  // layout, mask and precision works, on both backends. On Hopper (sm_90a), dense and causal
  // calls at head dims 64, 128 and 256 (varlen or not) without seqused_k, leftpad_k or a block table, in
  // standard precision, with no broadcast (zero) stride, and not decode calls (those read the cache
  // in place, as above), run the FP8 kernel: S = Q K^T and O = P V on E4M3 operands with fp32
  // accumulation, P rounded to E4M3 (its values lie in [0, 1]; the row sums are taken before the
  // rounding), the scales applied to the scores and the output, never per element; it transposes V
  // tile by tile in shared memory (wgmma's 8-bit B operand must be K-major) and takes no buffer.
  // Every other CUDA call, and every call under GPUATTN_KERNEL=sm80 or GPUATTN_FP8_KERNEL=0 (16-bit
  // accuracy: P is not rounded), first dequantizes q into a pool buffer of out's dtype (total_q x
  // Hq x D elements: x * q_scale[h] rounded once) and runs as an 8-bit cache's call does (decode
  // calls on the cache in place, the others on a dequantized copy of K and V as well). Scales are
  // checked on a host copy when check_indices is set, as k_scale's are; a float16 out on that
  // path bounds q_scale at 65504 / 448 as it bounds a copied cache's scales (above).
  TensorView q_scale;

  // CUDA only: whether cu_seqlens_q/k, seqused_k, leftpad_k and block_table values are checked on a host
  // copy before any kernel runs (a stream synchronization; every bad value is then an
  // invalid_argument naming it; the copies, with those of k_scale / v_scale / q_scale, go through
  // page-locked memory the calling thread keeps, so a call's copies share its one
  // synchronization). A checked call with any of these (or scales) to copy refuses a stream that is
  // capturing a CUDA graph (invalid_argument naming check_indices, before anything is queued); one
  // with none captures as an unchecked call does. false skips the copies: the call stays asynchronous and can be
  // captured into a CUDA graph, and the values are trusted as flash-attn and vLLM trust them (a
  // value out of range reads or writes out of bounds; a sequence longer than max_seqlen_q has its
  // rows past max_seqlen_q left unwritten). Decode calls then split the cache's whole
  // Sk rather than the longest used length, and paged prefill gathers Sk keys per sequence. The
  // CPU backend always checks (no synchronization to save).
  bool check_indices = true;

  // CUDA only, optional: int32 [n], contiguous, on q's device, all zero: the call's counters (the
  // work-item counter of a persistent causal or masked call on Hopper: 1; the split counts of a
  // decode call: batch x Hkv x ceil(Sq x Hq / Hkv / 16)), which the call leaves zero again.
  // Without it they come from an array the library keeps per stream, or, while the stream is
  // capturing a CUDA graph, from a buffer the graph zeroes before each launch (a memset node); with
  // it a captured call holds no memset node. The caller owns it and must not let two calls that
  // may run at the same time share it (calls on one stream, or ordered by events, may; a graph
  // that holds it must not run beside another user of it). attention_counters_needed(args) says
  // how many a call may take; a call that needs more than n counters is an invalid_argument
  // naming both, before anything is written. Counters that are not zero when its kernel starts
  // stop that kernel with a CUDA error (a trap), not a wrong result.
  TensorView counters;

  // CUDA on sm_90+, decode calls (those that run the split-KV decode kernels): launch the kernel
  // with programmatic dependent launch, so that it is scheduled while the kernel ahead of it in
  // the stream still runs and waits for it on the GPU (griddepcontrol.wait) instead of behind a
  // full launch. It pays in chains of small kernels (the GPT-2 engine's decode step: B1 generate
  // 2,318-2,331 -> 2,348-2,408 tok/s on an H200) and costs a lone call timed behind another
  // kernel (triton's do_bench, L2 flush ahead of each call: 16.5 -> 21.7-25.0 us, erratic, at
  // small decode shapes; not understood), so it is off by default. Other kernels ignore it; so does
  // the CPU backend. GPUATTN_PDL=0 turns it off everywhere.
  bool pdl = false;
  // With pdl, a promise about the memory the kernel ahead writes: it writes none of the call's
  // index arrays (cu_seqlens, seqused_k, leftpad_k, block_table) and, of the keys and values, at most each
  // sequence's last seqlen_q (those appended this step; q and out it may write). The 16-bit
  // decode kernel then issues its first key/value tiles (the rest of those keys) and reads the
  // index arrays before it waits for the kernel ahead, so the cache's latency overlaps it; q, and
  // the newest keys, after. The GPT-2 engine's decode steps keep it (their kernel ahead writes
  // qkv and the step's keys). It also relies on everything ahead of the kernel ahead being done
  // when the decode kernel starts: true when the kernel ahead lets its dependents start only after
  // its own griddepcontrol.wait (every kernel of this library and the engine) or not at all. A
  // broken promise reads stale keys: wrong results, no error. Ignored without pdl and by every
  // other kernel.
  bool pdl_cache_ready = false;

  // default 1/sqrt(D); positive, finite and at most 2.36e38 (FLT_MAX / log2(e): the kernels
  // work in base 2)
  std::optional<float> softmax_scale;
  // Logit soft-capping (Gemma 2, Grok; flash-attn's softcap): with softcap > 0 each score is
  // softcap * tanh(q.k * scale / softcap) before the softmax (and before the mask), and the lse is
  // of those scores; 0 (the default) is none (flash-attn reads any value <= 0 as none; here a
  // negative one is an error). Finite, >= 0, at most 2.36e38 (FLT_MAX / log2(e)), and scale /
  // softcap a normal float. A soft-capped call takes the kernel its uncapped twin would (the
  // sm_90a kernels on Hopper, the decode kernels for decode calls, paged and 8-bit caches read in
  // place); the GPU kernels take tanh as 1 - 2 / (1 + e^2x), absolute error about 3e-7, for caps up
  // to 256, and above it (nearly no cap, where that error would show in the logits) an exact tanh
  // that the sm_90a kernels do not compile: such calls run the sm_80 kernel on Hopper. An FP8 q
  // refuses it (not_supported), as do sequence-parallel calls.
  float softcap = 0.f;
  // ALiBi (Press et al.; BLOOM, MPT; flash-attn's alibi_slopes), optional: float32 [Hq] (a slope
  // a query head) or [B, Hq] (a slope a sequence and head; B the batch, or the number of
  // sequences of a varlen call), last stride 1, batch stride 0 or at least Hq, on q's device. Query i of
  // sequence b, head h, adds
  //   -alibi_slopes[b][h] * |i + Sk - Sq - j|
  // to its score for key j (after the scale and the soft-cap, before the softmax; Sq, Sk and j
  // as the masks count them: per sequence, keys from leftpad_k[b], Sk the keys used), so the lse
  // is of the biased scores. (flash-attn's causal kernels add slope * j instead, which differs
  // by a constant a row: the same out, an lse shifted by slope * (i + Sk - Sq).) Each slope
  // finite, with |slope| x max(log2(e), 1 / u) at most FLT_MAX / 2^31 (about 1.58e29; u the
  // softmax_scale, or the softcap when capped) so that its bias stays a float at every distance;
  // checked on the host for host views, on a host copy (with check_indices; trusted otherwise)
  // on CUDA. Any layout, mask and precision, on both backends. On CUDA a branch uniform over the
  // call adds the bias in the 16-bit decode kernel, an instantiation of its own in the 8-bit one
  // (decode calls: 16-bit, paged and 8-bit caches read in place), the sm_80 kernel's masked
  // instantiations, and on Hopper the sm_90a kernels' dense loop: ALiBi calls at head dim 64 take
  // sm90_ws_128x128 there, or sm90_ws_192x128 where its 3 consumers pay (the instantiations with
  // the bias; GPUATTN_KERNEL forces only between those two: the other tuned D64 kernels leave the
  // bias out, which cost their plain calls up to 8.6%), at 128 and 256 the kernel the plain call
  // takes. The FP8 kernel does not add it (an FP8 q is dequantized, and an 8-bit cache's call
  // that is not a decode call runs on its dequantized copy, as without ALiBi); a sliding window
  // alone at head dim 128 runs sm90_ws_128x128's dense loop, as without ALiBi, but global tokens,
  // block layouts, windows at head dims 64 and 256 and compensated precision run the sm_80 kernel
  // on Hopper too. Sequence-parallel calls refuse it. A slope whose bias reaches float's range (|slope| near the bound) can push a score to
  // -inf, where the fp64 reference keeps it finite.
  TensorView alibi_slopes;
  bool causal = false;
  MaskSpec mask;  // sliding window, global tokens, block-sparse layout; default: none
  Precision precision = Precision::standard;
  Backend backend = Backend::automatic;

  void* stream = nullptr;  // cudaStream_t for the CUDA backend (nullptr: default stream)
  int num_threads = 0;     // CPU backend threads (0: hardware concurrency)
};

// Validates `args` and computes the forward pass. Throws gpuattn::Error, naming the offending
// value, on any invalid input; in that case `out` and `lse` are left untouched. The CUDA backend is
// asynchronous with respect to the host (stream-ordered) unless validation needs cu_seqlens,
// seqused_k, leftpad_k, block_table or scale values (check_indices).
// Device memory: none but what the caller passes, except from the library's own stream-ordered
// memory pool of the device (made on the first such call; it keeps what it has reserved): on
// Hopper a causal or masked call with more 128-row blocks than SMs takes a work counter, and a
// decode call (at most 64 query rows per KV head) that splits its keys over several CTAs takes a
// count per KV head and row block, and a workspace for the splits' partial results (about 16 KB
// per SM, 2.2 MB on 132 SMs) allocated and freed on `stream`. The counters must start at zero,
// and each call leaves them zeroed: the library keeps an array of them for each stream it is
// called on (for up to 1024 streams; zeroed once, when made or grown; kept for the life of the
// process, a destroyed stream's too, a few hundred bytes each), so a call needs no memset of its
// own, except while `stream` is capturing a CUDA graph, when the call allocates and zeroes its own
// counters (a memset node in the graph) and frees them in the graph, and except when the caller
// passes its own (AttentionArgs::counters). Such calls run on
// concurrent streams, and can be captured into a CUDA graph (a process's first call too: the
// library's one-time setup, its memory pool and page-locked staging, is made in relaxed capture
// mode) and replayed, also beside direct calls on the stream it was captured from. A paged
// call that is not a decode call takes the gather buffer described at block_table.
// Environment switches (GPUATTN_KERNEL and the others that docs/kernels.md and
// docs/gpt2-engine.md list) are read with getenv: a CUDA call reads GPUATTN_KERNEL once, at its
// start; setting the environment in one thread while another calls the library is undefined
// behaviour in C (getenv against setenv), so change them only while no call runs.
void attention_forward(const AttentionArgs& args);

// Validates `args` as attention_forward does and computes nothing: throws the same errors, writes
// nothing, launches nothing. Index arrays (cu_seqlens, seqused_k, leftpad_k, block_table) and scales on the
// host are checked as attention_forward checks them; on a device, attention_forward checks their
// values on a host copy when it runs (check_indices), and this does not read them. For a caller
// that must change something before the attention can run, and wants a bad call refused before
// that: flash_attn_with_kvcache's Python wrapper checks the attention this way before it appends
// k/v to the cache (append_kv validates its own arguments before it writes).
void check_attention_args(const AttentionArgs& args);

// How many int32 counters a CUDA call with these arguments may take, to size
// AttentionArgs::counters: batch x Hkv x ceil(Sq x Hq / Hkv / 16) for a call the split-KV decode
// kernel can run (standard precision, no mask beyond causal, at most 64 query rows per KV head),
// else 1 (a persistent causal or masked call's work counter); an upper bound (a call that runs on
// no counting kernel takes none). Validates `args` as attention_forward does (args.counters
// aside) and throws the same errors; it reads no device memory (of host tensors, the index
// arrays that attention_forward checks).
std::int64_t attention_counters_needed(const AttentionArgs& args);

// True when this build has the CUDA backend and a CUDA device is visible.
bool cuda_available();

const char* to_string(Backend b);
const char* to_string(Precision p);

}  // namespace gpuattn
