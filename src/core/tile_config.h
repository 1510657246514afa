// The tile configurations of the forward kernels and the rule that picks one per call: the one
// place where "which kernel, which tiles" is decided. The CUDA dispatch (cuda_attention.cpp)
// launches what select_fwd_config() returns; `gpuattn bench --show-config` prints the table and
// the picks. Host-side core: no CUDA headers here.
#pragma once

#include <array>

#include "core/fwd_params.h"

namespace gpuattn {

// One compiled tile configuration of a forward kernel family (the sm80_* ones,
// sm90_ws_128x128 and sm90_ws_128x64_compensated exist for head dims 64 and 128,
// sm90_ws_128x64_d256 and sm90_ws_128x80_d256 for head dim 256, sm90_ws_192x128 for head dim 64,
// sm90_ws_128x128_s3 for head dim 128, sm90_ws_128x128_s4 for head dim 64; each for fp16 and
// bf16).
enum class FwdKernel {
  sm90_ws_128x128,             // sm_90a wgmma kernel, warp-specialized (src/cuda/fwd_sm90.cuh)
  sm90_ws_128x64_d256,         // the same kernel at head dim 256: 64-key tiles
  sm80_128x64,                 // sm_80 mma.sync kernel, 2 m-tiles per warp (FwdConfigs::Large)
  sm80_64x64,                  // the same with 1 m-tile per warp (FwdConfigs::Small)
  sm80_64x64_compensated,      // the compensated-precision kernel (FwdConfigs::Compensated)
  sm90_ws_128x64_compensated,  // the sm_90a kernel in compensated precision (FwdTraits<T, D, true>)
  sm90_ws_192x128,             // the sm_90a kernel's dense/causal instantiation at head dim 64:
                               // 3 consumer warpgroups (FwdThreeConsumerTraits)
  sm90_ws_128x80_d256,         // its dense/causal instantiation at head dim 256: 80-key tiles
                               // (FwdD256Traits)
  decode_16x64,                // split-KV decode kernel, sm_80 and newer (src/cuda/fwd_decode.cuh)
  decode_q8_16x64,        // the same over an int8 / FP8 E4M3 cache (src/cuda/fwd_decode_q8.cuh)
  sm90_ws_128x128_s3,     // the sm_90a kernel's dense/causal instantiation at head dim 128 for
                          // short keys: 3 K/V stages, 1 Q buffer (FwdD128ShortTraits; causal
                          // calls FwdD128ShortCausalTraits, half last tiles on one tile loop)
  sm90_ws_128x128_s4,     // its causal instantiation at head dim 64 on 2 consumers: 4 K/V stages
                          // (FwdD64CausalTraits)
  sm90_fp8_128x128,       // the FP8 E4M3 kernel (AttentionArgs::q_scale) at head dims 64-256
                          // (src/cuda/fwd_sm90_fp8.cu); picked by the FP8 dispatch, not by
                          // select_fwd_config
  sm90_fp8_192x128,       // the same on 3 consumer warpgroups at head dims 64 and 128 (picked
                          // as sm90_ws_192x128 is: three_consumers_pay; not varlen at 128)
  sm90_fp8_128x128_d256,  // the same at head dim 256 with the intra-warpgroup overlap, from
                          // kFp8D256OverlapMinKeys keys
  sm90_ws_64x128_2cta,    // the sm_90a kernel's dense/causal instantiation at head dim 64 on one
                          // consumer warpgroup, two CTAs an SM (FwdD64TwoCtaTraits)
};

struct TileConfig {
  FwdKernel kernel;
  const char* name;
  int block_m;  // query rows per CTA
  int block_n;  // keys per K/V tile
  int warps;    // per CTA, producer warps included
  int stages;   // K/V pipeline stages in shared memory
  const char* why;
  int ctas_per_sm = 1;  // CTAs resident on an SM at once (each its own items)
};

// The table, in FwdKernel order. The figures behind each `why` are in
// bench/results/sm80-kernel-notes.md and sm90-kernel-notes.md.
inline constexpr std::array<TileConfig, 16> kFwdTileConfigs = {{
    {FwdKernel::sm90_ws_128x128, "sm90_ws_128x128", 128, 128, 12, 2,
     "Hopper, standard precision: head dim 128 with every mask (dense and causal calls only from "
     "2049 keys: sm90_ws_128x128_s3 below), head dim 64 with a window, global tokens or a block "
     "layout, and its dense non-causal calls on small grids (larger ones: sm90_ws_192x128), "
     "causal ones from 2048 rows on small grids (under: sm90_ws_128x128_s4, a 4-stage variant, "
     "see its entry; larger grids: sm90_ws_192x128). 2 consumer warpgroups x 64 rows (wgmma M) + 1 "
     "TMA producer warpgroup; "
     "128-key tiles keep wgmma N = 128 and S, P, O "
     "(64 + 32 + D/2 regs) fit the consumers' 232 registers (setmaxnreg 40/232 since the "
     "producer works out each item's shape for the ring: 32 spilled 8 bytes, 24/240 40; without "
     "setmaxnreg 208 bytes spilled). 192-key tiles at D64 measured 1.14x the time at S1024 "
     "(5a66687 A/B). Each tile's softmax waits for the P V before it at its end (overlapping it) "
     "at head dim 128 and in dense non-causal D64 calls (a third instantiation: B1 H16 S1024 "
     "0.984x the time, H200 A/B 0344cde), at its start in causal D64 calls (the late wait cost "
     "causal B32 S512 3.7%), whose consumers also take turns for each tile's exponentials "
     "(causal D64 S1024 0.975-0.979x the time, 3 H200 A/Bs, twenty-first session). 2 K/V "
     "stages with the loads on the producer (the kernel without a producer needed 3: w2a vs w2). "
     "Warp specialization +31% over w2; H200 fp16 B4 H16 S4096 D128: 604 / 534 TFLOP/s "
     "non-causal / causal in gpuattn bench (w4); like for like with torch SDPA (do_bench): "
     "0.92x cuDNN, 1.62x FA2 non-causal. At head dim 128 a sliding window alone runs the dense "
     "instantiation from the window's first key tile, masking only the tiles that leave a "
     "warpgroup's common key band (W1024 0.935x, W4096 0.962x the time of the masked kernel, H200 "
     "A/B cf8e73f vs d135db7); at D64 and D256 the window code cost dense and causal calls up to "
     "3-4% (causal D64 S512, D256 S4096), so windows stay masked there. A block layout alone "
     "whose blocks are whole 128-row blocks and whole key tiles runs the dense instantiation too, "
     "its producer warp listing each item's on tiles (H200 A/B of 28b2268 vs a901afb: "
     "block-sparse 90% 0.883x, 50% 0.938x the time of the masked kernel). Other global-token "
     "and block-sparse calls run a second instantiation (w5m: the producer warp loads only tiles "
     "with a visible key, fully visible tiles skip the per-element mask; setmaxnreg 72/216; "
     "each tile's schedule word goes out with "
     "its loads, the search running a batch of 32 candidates ahead; a second producer warp "
     "searches the next item's first batch one item ahead: block-sparse 90% 0.979x, W1024 "
     "0.957x the time): with windows and whole-tile layouts on the dense kernel 0.65-0.70x "
     "FlexAttention's time on the sparse_bench shapes (H200, 4a535c6). O leaves through stmatrix "
     "and a TMA store by one thread per warpgroup (the 16-byte copy-out took 0.7 us a work item: "
     "causal S1024 -5.8%, S4096 -1-4%); gpuattn bench vs cuDNN at 4a535c6: 1.03x fp16 / 1.03x "
     "bf16 non-causal S4096, 1.05-1.11x causal, 1.08x S32k causal (82dff5b, another machine: "
     "1.06x / 1.11x / 1.03-1.05x / 1.07x). Every call with more row blocks than SMs "
     "runs "
     "persistently, one "
     "CTA per SM with 2 Q buffers: dense non-causal on a static schedule (+0-1.5% at S4096, +5.5% "
     "at D128 S512/S1024), causal and masked on a dynamic one (a per-launch atomic counter, "
     "longest first)"},
    {FwdKernel::sm90_ws_128x64_d256, "sm90_ws_128x64_d256", 128, 64, 12, 2,
     "Hopper, head dim 256, standard precision, windows, global tokens and block layouts, and "
     "dense and causal calls under 1024 keys (from 1024: sm90_ws_128x80_d256): the "
     "sm90_ws_128x128 kernel with 64-key tiles. O "
     "alone is D/2 = 128 fp32 registers per consumer thread, so 128 keys (S 64 + "
     "P 32) would not fit 240; with 64 (S 32 + P 16 + O 128) ptxas peaks at R199 of 240 dense "
     "and R207 of 216 masked (setmaxnreg 24/240 and 72/216), no spills in the tile loop (since the "
     "persistent item loop, nvcc 13.0 spills a few values at item boundaries: 8 accesses dense, "
     "33 masked). Shared memory: Q 64 KB + "
     "2 stages x (K + V) 32 KB each = 192 KB of 227. The S GEMM runs at wgmma N = 64 (more smem "
     "reads per FLOP than N = 128); FA3's 128 x 80 would leave 52 registers beside S, P and O "
     "and 2 KB of smem. Expected 0.9-1.1x the D128 kernel's TFLOP/s (the softmax costs half as "
     "much per FLOP). H200 (gpuattn bench): 612-665 TFLOP/s non-causal at S4096-8192 (1.0-1.06x "
     "cuDNN), up to 650 causal"},
    {FwdKernel::sm80_128x64, "sm80_128x64", 128, 64, 4, 2,
     "The sm_80 throughput configuration: 4 warps x 32 rows, 2 m-tiles per warp halve the K/V "
     "shared-memory reads per MMA (each K/V fragment feeds both), and 255 regs x 128 threads fit "
     "2 CTAs per SM. The variants (8 warps x 16 rows, 4 x 16 rows x 128 keys, 256-row CTAs, "
     "32-key tiles) measured 200-315 vs 306 TFLOP/s, and the 256-row CTA lost on causal and short "
     "sequences. H200 fp16 B4 H16 S4096 D128: 350 / 302 TFLOP/s, FA2 parity (v6). Shared memory "
     "(sm80_smem_bytes): 54 KB at D64, 102 KB at D128, over the 99 KB per block of sm_86, sm_89 "
     "and sm_120, which take sm80_64x64 there"},
    {FwdKernel::sm80_64x64, "sm80_64x64", 64, 64, 4, 2,
     "Taken when the 128-row grid has fewer than 2 CTAs per SM (ceil(Sq/128) * Hq * B < 2 * SMs): "
     "1 m-tile per warp doubles the CTAs so short sequences and few heads still fill every SM "
     "(v3: B1 H16 S1024 D64 back to 28 us). Also every standard call at head dim 256 off the "
     "sm_90a kernel: O alone is 128 registers per thread, so no 2-m-tile configuration there; "
     "and at head dim 128 where sm80_128x64's 102 KB of shared memory exceed the device's opt-in "
     "limit per block (99 KB on sm_86, sm_89, sm_120): 64 rows take 85 KB"},
    {FwdKernel::sm80_64x64_compensated, "sm80_64x64_compensated", 64, 64, 4, 2,
     "Precision::compensated off Hopper, at head dim 256 and under GPUATTN_KERNEL=sm80: the Kahan "
     "terms of the softmax denominator and O need the registers a second m-tile would take, so 1 "
     "m-tile per warp and 1 CTA per SM (at head dim 256 O's columns split over 2 CTAs). H200: "
     "~150-250 TFLOP/s"},
    {FwdKernel::sm90_ws_128x64_compensated, "sm90_ws_128x64_compensated", 128, 64, 12, 2,
     "Hopper, head dims 64 and 128, Precision::compensated, every mask (one instantiation: the "
     "masked code path, setmaxnreg 72/216). The sm_80 kernel's numerics (exact running max, row "
     "sums Kahan-summed across tiles, each tile's P V into a fresh accumulator Kahan-added into O) "
     "on the warp-specialized wgmma kernel. O and its Kahan terms take D registers per consumer "
     "thread (128 at D128), so 64-key tiles (S 32 + P 16), P V one 64-column slab of O at a time "
     "into a 32-register fresh accumulator, and no intra-warpgroup overlap (the S of the next tile "
     "would be live during P V): peak O 128 + tacc 32 + P 16 = 176 of 216; the two consumers still "
     "overlap each other (ping-pong per GEMM). Every compensated GPU test passes on it (H200); its "
     "speed is not measured yet (gpuattn bench --precision compensated); expected ~300-400 "
     "TFLOP/s at fp16 B4 H16 S4096 D128, above sm80_64x64_compensated's ~150-250. Head dim 256 (O "
     "+ "
     "its Kahan terms alone: 256 registers) stays on the sm_80 path"},
    {FwdKernel::sm90_ws_192x128, "sm90_ws_192x128", 192, 128, 16, 2,
     "Hopper, head dim 64, standard precision, dense and causal calls whose grid fills the GPU "
     "(three_consumers_pay: 5 x its waves < 4 x the 128-row waves, causal from 2048 rows; masks "
     "stay on sm90_ws_128x128): 3 consumer warpgroups x 64 "
     "rows + the producer warpgroup, setmaxnreg 32/160 (S 64 + P 32 + O 32 registers). With 2 "
     "consumers a D64 tile's softmax (~0.88 us of its 1.29 us, H200 at 5a66687) added to its "
     "GEMMs instead of hiding under them (0.98x cuDNN at S4096, 1.16 us/head at B1 H16 S1024); "
     "192-key tiles (1.14x the time), no ping-pong (1.10x) and exp2 on the FMA pipe (1.09-1.18x) "
     "did not help. A third warpgroup gives the tensor cores a GEMM to run while two take their "
     "softmax, as FA3 lays out D64. H200 A/B against 2 consumers (2026-11-22, cf8e73f vs d135db7, "
     "3 rounds): fp16 B4 H32 S4096 0.894x the time; sweep (B*S = 16k, H32) non-causal S512-S16384 "
     "0.81-0.96x, causal S2048-S16384 0.90-0.97x. Where it loses, the rule keeps 2 consumers: "
     "causal S512/S1024 1.10x (the 192-row items waste more of the diagonal), B1 H16 S1024 1.14x "
     "(96 items for 132 SMs). ptxas: 12 bytes of spill stores at setmaxnreg 32/160. A warpgroup "
     "whose rows see none of the last tile's second 64 keys runs that tile at 64 keys "
     "(FwdTraits::kHalfLast; 2026-11-30-h200-s56 calls 2-3): B2 H16 S1088 0.971-0.976x the time, "
     "causal S8192 0.97-0.99x"},
    {FwdKernel::sm90_ws_128x80_d256, "sm90_ws_128x80_d256", 128, 80, 12, 2,
     "Hopper, head dim 256, standard precision, dense and causal calls with 1024 keys or more "
     "(kD256WideTileMinKeys; windows, global tokens and block layouts stay on "
     "sm90_ws_128x64_d256's masked instantiation, whose key masks go 64 keys at a time): FA3's "
     "hdim-256 tile, 128 x 80. S 40 + P 20 + O 128 registers of the consumers' 240; Q 64 KB + 2 "
     "stages x (K + V) 40 KB each = 224 KB of smem (+ barriers: 225.5 of 227). Each tile's fixed "
     "costs (O's 128-register rescale when the row max grows, the row reductions, two barrier "
     "waits, the turn hand-offs) spread over 80 keys instead of 64. H200 A/B against 64-key tiles "
     "(2026-11-22, 3 rounds, two runs): non-causal S2048-S16384 0.91-0.98x the time, causal "
     "0.93-0.99x, B4 H8 S4096 0.93-0.96x; S1024 0.98x / 1.00x causal; S512 1.02-1.03x (the "
     "seventh tile of 512 keys is 32 wide and masked), hence the 1024-key floor"},
    {FwdKernel::decode_16x64, "decode_16x64", 16, 64, 4, 2,
     "Any GPU (sm_80 and newer), standard precision, dense and causal calls with at most 64 query "
     "rows per KV head (seqlen_q x hq / hkv <= DecodePlan::kMaxRows): the decode steps of "
     "generation. The prefill kernels' 128-row tiles leave 127 of 128 rows idle at seqlen_q = 1 "
     "and run one CTA per (batch, query head) through the whole sequence, each reading its KV "
     "head's K and V again: H200, bf16 B8 Hq32 Hkv8 Sq1 Sk4096 D128 took 102 us, 0.49x cuDNN "
     "(1.3 TB/s of K/V). Here the rows of a GQA group share one 16-row block (mma.sync m16: one "
     "read of each K/V tile per group), and each sequence's key tiles are split over as many CTAs "
     "as fill one wave of the GPU (at least 4 tiles a split, at most 64 splits); 4 warps take 16 "
     "keys of each 64-key tile (2-stage cp.async ring) with their own online softmax, merged "
     "through shared memory; the CTA that finishes a unit last merges the splits' normalized O "
     "and log-sum-exp from a per-launch workspace, in split order (bitwise reproducible). "
     "Memory-bound: the goal is HBM bandwidth on K and V. H200 (compare_torch, 5ce352a): that "
     "shape 51.8 us, 0.95x cuDNN, 1.01x FA2; 0.90-0.99x cuDNN at Sq1 from 134 MB of K/V, 0.80x "
     "at 8 MB (fixed costs: the counts' memset, the merge; 0.84x once the merge's weights went "
     "to a warp a row and the count-in to one thread's acquire-release add, 2026-11-29-h200-s30; "
     "the counts kept per stream and left zeroed by the merging CTA, no memset node: 17.5 -> "
     "16.5 us at the small shapes, 2026-11-29-h200-s31); "
     "Sq 2-4 causal 3.5-8.7x cuDNN. Ring "
     "stages 3 / 2 / 2 at head dims 64 / 128 / 256 (3 at 128 and 256 measured within 2%, and "
     "would not fit 99 KB at 128; 3 at 64, not 4: 51 KB a CTA, 4 CTAs an H200 SM where 68 KB "
     "let 3, GPT-2 124M B128 prompt 512 +4.9%, 2026-11-29-h200-s38); splits for one wave of 2 "
     "CTAs per SM (3 per SM: more partials, "
     "1.04x the time)"},
    {FwdKernel::decode_q8_16x64, "decode_q8_16x64", 16, 64, 4, 4,
     "decode_16x64's calls over a quantized KV cache (k/v int8 or FP8 E4M3, float32 scales per KV "
     "head: AttentionArgs::k_scale / v_scale), read in place at one byte an element; every other "
     "call on such a cache runs on a dequantized 16-bit copy. The same layout of the work (a GQA "
     "group's rows in one 16-row block, key tiles split over CTAs, the LSE merge shared); 8-bit "
     "tiles of 64 keys in a cp.async ring of twice the 16-bit kernel's stages (the same bytes in "
     "flight), converted to fp16 pairs in registers (cvt.rn.f16x2.e4m3x2; int8 by byte permute), "
     "the mma in fp16; k_scale folded into the softmax scale and v_scale into the output. Splits "
     "for one wave of 3 CTAs per SM (the conversions need the third CTA's warps to keep HBM "
     "busy): H200 (2026-11-23, bench/quantized_decode.py), bf16 q GQA 32:8 D128, E4M3 cache "
     "1.47x / 1.59x / 1.48x cuDNN's time on the bf16 cache at B32 L4096 / B8 L32768 / B1 "
     "L131072 (2 CTAs per SM: B8 L32768 175 us against 162)"},
    {FwdKernel::sm90_ws_128x128_s3, "sm90_ws_128x128_s3", 128, 128, 12, 3,
     "Hopper, head dim 128, standard precision, dense and causal calls with at most "
     "kD128ThreeStageMaxKeys (2048) keys: sm90_ws_128x128 with 3 K/V stages instead of 2, which "
     "leaves room for one Q buffer (Q 32 KB + 3 x (K + V) 64 KB = 224 KB + barriers of 227). As "
     "at head dim 256, the next item's Q loads once this item's last S GEMM is done and O goes "
     "out through the last tile's stage. ncu (H200, base clocks, 2026-11-23-h200-s23 call 9): "
     "at B32 H16 S512 the 2-stage kernel took 182 us against cuDNN's 167, its warps waiting on "
     "loads (long_scoreboard 1.34 warps per issue against 0.70): short items start on cold K/V "
     "tiles. Same-run A/B against 2 stages (call 10, 3 rounds): S512 0.924x the time, S1024 "
     "0.959x, S2048 0.979x, causal S512 0.973x, S1024 0.98-1.005x; from S4096 1.02-1.04x "
     "(S32k causal 1.027x), hence the key bound (forced past it with the causal twin, "
     "2026-12-01-h200-s59 call 1: causal S3000-S16384 0.975-1.012x, dense S4096 1.001x: "
     "kept). With 3 stages (2026-11-23-h200-s24 call 4): "
     "168 us against cuDNN's 167, long_scoreboard 0.64. Causal calls run a twin of their own "
     "(as sm90_ws_128x128_s4 does): a last key tile whose second 64 keys none of a warpgroup's "
     "rows sees runs on its first 64 keys, and every tile on one loop, mask code included "
     "(2026-11-30-h200-s57 call 3, against the twin-less kernel: causal S512 0.982x the time, "
     "S1024 0.970x, S2048 0.983x, GQA S1000 0.986x; non-causal calls lost with it, 1.01-1.04x, "
     "and keep the whole-tile loop)"},
    {FwdKernel::sm90_ws_128x128_s4, "sm90_ws_128x128_s4", 128, 128, 12, 4,
     "Hopper, head dim 64, standard precision, causal calls (no other mask) of fewer than "
     "kD64FourStageMaxRows (2048) rows, which never take sm90_ws_192x128: sm90_ws_128x128's "
     "causal D64 kernel with 4 K/V stages instead of 2; a "
     "D64 stage is 32 "
     "KB, so 4 fit beside the two Q buffers (32 + 128 KB). Its items hold 1-16 key tiles and "
     "start on cold K/V: ncu (H200, base clocks, 2026-11-23-h200-s23 call 9) had causal B32 "
     "H32 S512 waiting on loads 0.61 warps per issue against cuDNN's 0.52. Same-run A/B against "
     "2 stages (2026-11-23-h200-s24 call 6, 5 rounds): causal S512 0.955x the time, S1024 "
     "0.971x; in turn with cuDNN (2026-11-28-h200-s25, 11 rounds) causal B32 H32 S512 0.97 -> "
     "1.01x cuDNN, B16 H32 S1024 1.00 -> 1.03x. Not for dense non-causal calls: 3 and 4 stages "
     "measured 0.991-1.025x on the one-wave B1 H16 S1024 shape (ninth session). Half last tiles "
     "(the first warpgroup's diagonal tile at 64 keys, FwdTraits::kHalfLast) and one tile loop "
     "instead of the whole-tile one (kWholeLoop), together (2026-11-30-h200-s56 call 3, 2 rounds): "
     "causal B32 H32 S512 0.983x the time, B16 H32 S1024 0.970-0.989x; either alone lost "
     "(1.09x / 1.01-1.03x). Since then the late P V wait without exponential turns (the 2-stage "
     "kernel's causal calls keep the hoisted wait with the turns): 2026-11-30-h200-s57 calls 6-7, "
     "causal B32 H32 S512 0.989x the time, B16 H32 S1024 0.990-0.994x"},
    {FwdKernel::sm90_fp8_128x128, "sm90_fp8_128x128", 128, 128, 12, 2,
     "Hopper, FP8 attention (E4M3 q, k, v; AttentionArgs::q_scale), head dims 64, 128 and 256, "
     "dense "
     "and causal calls (varlen too) without seqused_k, a block table or broadcast strides, not "
     "decode calls (cuda_fp8_kernel_takes; every other FP8 call runs on a dequantized q). QGMMA "
     "m64n128k32 for S, m64nDk32 for P V (at D = 64 Q and K rows of 64 bytes, the 64-byte "
     "swizzle, and 3 K/V stages: against 2, causal S512 1.045x TFLOP/s, S1024 1.055x, S2048+ "
     "1.02x, dense 0.99-1.01x, 2026-11-30-h200-s50 call 4; at D = 256 rows of two 128-byte slabs, "
     "one Q buffer and 2 V^T stages to fit 224 KB, no intra-warpgroup overlap: with it ptxas "
     "serialized the wgmmas and spilled at 232 registers; 1.20-1.91x the dequantized q's time, "
     "2026-11-30-h200-s49 call 8; two Q buffers beside a one-stage V ring: dense S512-S1024 "
     "1.00x, causal 0.95-0.97x, 2026-11-30-h200-s53 calls 7-8; from 2048 keys "
     "sm90_fp8_128x128_d256 runs D = 256 with the overlap); 8-bit operands are K-major only, so 3 "
     "producer warps transpose each V tile into a 3-stage V^T ring in shared memory "
     "(ldmatrix.trans, stmatrix), which "
     "against s43's V^T pass before the kernel measured +12-27% at S <= 1024, +5-7% at S2048, "
     "-2-6% at dense S >= 4096 and -3% to +1% at causal S >= 4096 (H200, 2026-11-30-h200-s44 "
     "call 6; its steps' constant addresses as immediates since s52: 0.99-1.09x); persistent, 2 "
     "Q buffers, 2 consumer warpgroups x 64 rows with the "
     "intra-warpgroup overlap, 128-key tiles (S 64 + O D/2 + P 16 registers). 2 K/V stages at D = "
     "128 (3 measured the same on s43's K / V^T ring; 3 and 4 on this one 0.95-1.02x, no pattern, "
     "s50 call 4); ping-pong between the consumers lost 7-8% "
     "(2026-11-29-h200-s43 calls 5-7); 256-key tiles at D = 128 (no overlap: it spilled) "
     "0.76-0.98x (2026-11-30-h200-s52 call 4)"},
    {FwdKernel::sm90_fp8_192x128, "sm90_fp8_192x128", 192, 128, 16, 3,
     "Hopper, FP8 attention at head dims 64 and 128 where three_consumers_pay (the rule of "
     "sm90_ws_192x128: large grids, causal ones only from 2048 rows; at D = 128 not varlen calls; "
     "GPUATTN_KERNEL=sm90_ws_192x128 / "
     "sm90_ws_128x128 force it or sm90_fp8_128x128): sm90_fp8_128x128's kernel on 3 consumer "
     "warpgroups x 64 rows (setmaxnreg 32 / 160), 3 K/V stages at D = 64, 2 at D = 128. At D = 64 "
     "the 8-bit GEMMs take half a tile's time at most and the softmax the rest, so a third "
     "warpgroup's softmax overlaps the others' "
     "GEMMs. H200, gpuattn_fp8_probe --head-dim 64 in balanced order (2026-11-30-h200-s49 call 4, "
     "3 rounds, H32, B x S = 16k): against 2 consumers dense S512-S16384 1.13-1.29x TFLOP/s, "
     "causal S2048-S16384 1.12-1.20x, but causal S512 0.99x and S1024 0.95x (the rule keeps 2 "
     "there); against the dequantized q it replaces (GPUATTN_FP8_KERNEL=0) 1.08-1.61x at every "
     "shape. At D = 128 without the intra-warpgroup overlap (S 64 + P 16 + O 64 registers do not "
     "fit 160 with it), the warpgroups overlapping each other: against 2 consumers with it "
     "(2026-11-30-h200-s52 call 6, 3 rounds, H16) dense S512-S16384 1.02-1.09x, causal "
     "S2048-S32768 1.02-1.07x, causal S512 0.92x and S1024 0.88x, varlen16 0.98x (kept on 2). "
     "The rule is the 16-bit kernel's: FP8 3 against 2 was measured on 16k-token grids "
     "only, not near the rule's wave cutoff"},
    {FwdKernel::sm90_fp8_128x128_d256, "sm90_fp8_128x128_d256", 128, 128, 12, 2,
     "Hopper, FP8 attention at head dim 256 from kFp8D256OverlapMinKeys (2048) keys "
     "(GPUATTN_KERNEL=sm90_fp8_128x128_d256 / sm90_ws_128x128 force it or sm90_fp8_128x128): "
     "sm90_fp8_128x128's kernel with the intra-warpgroup overlap (the next tile's S GEMM under "
     "this tile's softmax and P V), which holds S 64 + P 16 + O 128 registers at once. At "
     "setmaxnreg 40 / 232 ptxas serialized the wgmmas and spilled; at 24 / 240 the consumers "
     "neither spill nor serialize, and the producer's V transposer spills 72 bytes (~27 of its "
     "~680 instructions a tile). H200, gpuattn_fp8_probe in balanced order against "
     "sm90_fp8_128x128 (2026-11-30-h200-s53 call 3, 3 rounds, H8): S4096-S16384 1.05-1.075x "
     "TFLOP/s dense and causal, S32768 causal 1.059x, varlen16 (max 4096) 1.033x, S2048 1.025x; "
     "S1024 1.008x dense and 0.947x causal, S512 0.979x and 0.930x, which stay on "
     "sm90_fp8_128x128 (with few tiles an item, the overlap's extra S GEMM ahead and the "
     "producer's spills are not paid back)"},
    {FwdKernel::sm90_ws_64x128_2cta, "sm90_ws_64x128_2cta", 64, 128, 8, 2,
     "Hopper, head dim 64, standard precision, dense and causal calls (not varlen) on small grids "
     "(two_ctas_pay: non-causal calls that three_consumers_pay leaves on 2 consumers, with at "
     "most 3 waves of 64-row items; causal ones with one wave, each CTA one item; both up to "
     "kTwoCtaMaxKeys (2048) keys): the "
     "sm90_ws_128x128 kernel on one consumer warpgroup (64-row items) and the producer "
     "warpgroup, 256 threads, setmaxnreg 40/216, Q 2 x 8 KB + 2 K/V stages of 32 KB: two CTAs "
     "share each SM, each with its own items, K/V ring and barriers, and no turns between them. "
     "The 2-consumer kernel's warpgroups meet at every item's start and end; here the SM's two "
     "CTAs run apart. H200, gpuattn bench a shape a process against the dispatch's pick "
     "(2026-11-30-h200-s55 calls 3-5, 2 rounds): B1 H16 S1024 0.954-0.957x the time (1.08 "
     "us/head), causal 0.941x, B1 H8 S1024 0.856x, B1 H32 S512 0.956x, B1 H16 S2048 0.950x, B2 "
     "H16 S1024 0.937x, B3 H16 S1024 0.914x, bf16 0.956x; against 3 consumers (B4 H16 S1024, B1 "
     "H16 S4096) 1.04x and at 16k-token grids 1.10-1.18x, against 4 K/V stages on causal grids "
     "of two waves and more (B2-B8 H16 S1024, B32 H32 S512) 1.06-1.15x: the rule keeps those. "
     "With the late P V wait it measured 0.93-0.98x (better causal, worse dense): not taken. "
     "Past 2048 keys (2026-12-01-h200-s59 call 2, forced against the pick, 3 rounds): B1 H8 "
     "S4096 0.993x, B1 H4 S8192 1.001x, B1 H16 S4096 / B2 H8 S4096 / B1 H8 S8192 1.06-1.09x, "
     "causal B1 H8 S4096 1.22x: the key bound stays",
     2},
}};

const TileConfig& tile_config(FwdKernel kernel);

// Dynamic shared memory per CTA of the sm80_* configurations, in bytes, as the sm_80 launcher
// asks for it (FwdTraits::kSmemBytes of src/cuda/fwd_sm80.cuh, which static_asserts that the two
// agree): Q, 2 stages of K and V, 80 bytes of mask words; Q/K/V rows of D * 2 bytes padded by 16
// (head dim 256: XOR-swizzled, unpadded). Calls with a block-sparse layout add the kernel's tile
// bitmaps (BlockTileBits<4>). 0: the configuration does not exist at that head dim.
inline constexpr int kSm80BlockLayoutSmemBytes = 1156;
constexpr int sm80_smem_bytes(FwdKernel kernel, int head_dim, bool block_layout) {
  int bytes = 0;
  switch (kernel) {
    case FwdKernel::sm80_128x64:  // Q 128 rows, 2 x (K + V) 64 rows; no such config at D256
      bytes = head_dim == 64 ? 55376 : head_dim == 128 ? 104528 : 0;
      break;
    case FwdKernel::sm80_64x64:  // Q 64 rows, 2 x (K + V) 64 rows
      bytes = head_dim == 64 ? 46160 : head_dim == 128 ? 87120 : head_dim == 256 ? 163920 : 0;
      break;
    case FwdKernel::sm80_64x64_compensated:  // the same; at D256 V holds half of O's columns
      bytes = head_dim == 64 ? 46160 : head_dim == 128 ? 87120 : head_dim == 256 ? 131152 : 0;
      break;
    default: break;  // the sm90_* configurations
  }
  return bytes == 0 ? 0 : bytes + (block_layout ? kSm80BlockLayoutSmemBytes : 0);
}

// What the selection rule reads of a call and of the device.
struct FwdShape {
  int sm_major = 0;                    // compute capability major of the device
  bool sm90_kernel_available = false;  // the sm_90a kernel runs here for this dtype/head dim and
                                       // is not switched off (GPUATTN_KERNEL=sm80)
  int num_sms = 0;
  int head_dim = 0;
  bool causal = false;
  bool dense_or_causal = true;     // no window, global tokens or block layout (on Hopper at head
                                   // dim 64 the rule reads it: sm90_ws_192x128 runs no other mask)
  bool force_192x128 = false;      // GPUATTN_KERNEL=sm90_ws_192x128 (see kernel_choice_from_env)
  bool force_128x128 = false;      // GPUATTN_KERNEL=sm90_ws_128x128: never sm90_ws_192x128,
                                   // sm90_ws_128x128_s3, sm90_ws_128x128_s4 or sm90_ws_64x128_2cta
  bool force_64x128_2cta = false;  // GPUATTN_KERNEL=sm90_ws_64x128_2cta
  bool force_128x128_s4 = false;   // GPUATTN_KERNEL=sm90_ws_128x128_s4 (causal calls)
  bool force_128x128_s3 = false;   // GPUATTN_KERNEL=sm90_ws_128x128_s3 (any length)
  bool varlen = false;             // cu_seqlens (sm90_ws_64x128_2cta takes none, forced or not)
  Precision precision = Precision::standard;
  int seqlen_q = 0;  // varlen: the max
  int seqlen_k = 0;  // varlen: the max (head dim 256 on Hopper takes 80-key tiles from 1024 keys)
  int batch = 0;
  int hq = 0;
  int max_smem_per_block = 0;  // the device's opt-in shared memory per block in bytes (99 KB on
                               // sm_86/sm_89/sm_120, 163 KB on an A100); 0: unknown, not checked
  int hkv = 0;                 // KV heads (0: as many as hq)
  bool decode_allowed = true;  // false under GPUATTN_KERNEL=sm80 / sm90_*: their own kernels
  bool kv_quantized = false;   // k/v int8 or FP8 E4M3: a decode call takes decode_q8_16x64
  bool alibi = false;          // ALiBi: on Hopper at head dim 64 the 2-consumer kernel (or the
                               // 3-consumer one, where three_consumers_pay)
};

// What the environment variable GPUATTN_KERNEL asks of the dispatch: unset or "auto", the rule of
// select_fwd_config (the fastest the device runs); "sm80", the portable mma.sync kernel everywhere
// (e.g. to cross-check the Hopper one); "sm90_ws_192x128", the 3-consumer head-dim-64 kernel for
// every call it runs (Hopper, head dim 64, dense or causal, standard precision), whatever the
// grid, so that the GPU tests run it at every size (the rule takes it only for large grids);
// "sm90_ws_128x128", the 2-consumer 2-stage kernel where the rule would take sm90_ws_192x128
// (large dense or causal head-dim-64 grids), sm90_ws_128x128_s3 (dense and causal head-dim-128
// calls of up to kD128ThreeStageMaxKeys keys) or sm90_ws_128x128_s4 (short causal head-dim-64
// calls), so that they can be timed on the same shape and the GPU tests run it there; other
// calls as "auto", except that every named kernel keeps decode calls off decode_16x64 (so the
// prefill kernels stay tested, and timed, at decode shapes). The two sm90_ws names pick the FP8
// kernel's instantiations alike at head dims 64 and 128 (sm90_fp8_192x128 for every such call,
// varlen ones included, or sm90_fp8_128x128: fp8_kernel_of); "sm90_ws_128x128" keeps FP8
// head-dim-256 calls on sm90_fp8_128x128 too, and "sm90_fp8_128x128_d256" runs every FP8
// head-dim-256 call the FP8 kernel takes on sm90_fp8_128x128_d256 (other calls as "auto");
// "sm90_ws_64x128_2cta", the one-consumer head-dim-64 kernel (two CTAs an SM) for every call it
// runs (Hopper, head dim 64, dense or causal, standard precision, not varlen), whatever the grid
// (the rule takes it only for small ones; FP8 calls as "auto"); "sm90_ws_128x128_s4", the
// 4-stage 2-consumer head-dim-64 kernel for every causal call it runs (Hopper, head dim 64,
// causal without another mask, standard precision, varlen too), whatever the length and grid
// (the rule takes it under kD64FourStageMaxRows rows where neither sm90_ws_64x128_2cta nor
// sm90_ws_192x128 does; other calls as "auto"); "sm90_ws_128x128_s3", the 3-stage head-dim-128
// kernel (its causal twin for causal calls) for every call it runs (Hopper, head dim 128, dense or
// causal, standard precision, varlen too), whatever the length (the rule takes it up to
// kD128ThreeStageMaxKeys keys; other calls as "auto"), so that it is tested, and can be timed,
// on long sequences. Any other value: Error invalid_argument naming it.
enum class KernelChoice {
  automatic,
  sm80,
  sm90_ws_192x128,
  sm90_ws_128x128,
  sm90_fp8_128x128_d256,
  sm90_ws_64x128_2cta,
  sm90_ws_128x128_s4,
  sm90_ws_128x128_s3
};
KernelChoice kernel_choice_from_env();
// GPUATTN_KERNEL read once for a whole call on this thread: while it lives, kernel_choice_from_env
// answers what it read (a call asks 2-3 times, and another thread may change the environment
// between them: each part of the call would pick by a different value). Scopes nest.
class KernelChoiceScope {
 public:
  KernelChoiceScope();
  ~KernelChoiceScope();
  KernelChoiceScope(const KernelChoiceScope&) = delete;
  KernelChoiceScope& operator=(const KernelChoiceScope&) = delete;

 private:
  KernelChoice choice_;
  const KernelChoice* outer_;
};
// Sets `s`'s force_* flags and decode_allowed from `choice` (decode_16x64 only under "auto"), as
// the CUDA dispatch and gpuattn bench's config view both read them.
void apply_kernel_choice(FwdShape& s, KernelChoice choice);

FwdShape fwd_shape(const FwdParams& p, int sm_major, bool sm90_kernel_available, int num_sms,
                   int max_smem_per_block);

// Whether a dense or causal head-dim-64 call runs faster on sm90_ws_192x128 than on
// sm90_ws_128x128, judged from its grid (H200 A/B of the two, 2026-11-22, in
// bench/results/sm90-kernel-notes.md). With every SM busy the 3-consumer kernel takes ~1.3x the
// time for a 192-row item that the 2-consumer one takes for 128 rows (0.85-0.90x per row). The
// rule takes it when 1.25 x its waves (ceil(items / num_sms)) stay below the 2-consumer kernel's
// waves (1.25, not 1.3: at S512 B32 H32, 24 waves against 32, it measured 0.96x the time), and
// never for causal calls shorter than 2048 rows (the 192-row items waste more of the diagonal:
// 1.10x the time at S512 and S1024 with 1024 heads; again 1.07-1.10x in 2026-11-22-h200-short-items
// call 9). B1 H16 S1024 (96 items for 132 SMs, 1.14x the time on 3 consumers) keeps 2.
// kThreeConsumersCausalMinRows is that causal bound (seqlen_q; varlen: the max).
inline constexpr int kThreeConsumersCausalMinRows = 2048;
bool three_consumers_pay(const FwdShape& s);

// Whether a dense or causal head-dim-64 call on Hopper (standard precision, not varlen) runs
// faster on sm90_ws_64x128_2cta (one consumer warpgroup, two CTAs an SM) than on the 2- or
// 3-consumer kernels, judged from its grid: 64-row items = ceil(seqlen_q / 64) * hq * batch
// against the 2 * num_sms CTAs. Non-causal calls that three_consumers_pay leaves on 2 consumers
// with at most kTwoCtaMaxWaves waves of those items; causal calls with one wave (each CTA one
// item); both with at most kTwoCtaMaxKeys keys (seqlen_k): longer items weigh their boundaries
// less and the lost turns between the consumers more (H200, 2026-12-01-h200-s59 call 2: forced at
// S4096-S8192 with 4-16 heads 0.99-1.09x the pick's time, causal S4096 1.22x). H200 A/B
// (2026-11-30-h200-s55 calls 3-5): 0.84-0.96x the time there, up to 2.9 waves non-causal; causal
// at 2 waves 1.15x (against sm90_ws_128x128_s4), non-causal against 3 consumers 1.04-1.18x.
// Never under force_128x128 or force_192x128 (their kernels for every such call); under
// force_128x128_s4 non-causal calls keep this rule (that force takes causal calls only), and
// force_64x128_2cta takes the kernel without it but for varlen calls (the kernel runs none; see
// FwdTraits::kTakesVarlen), which keep the rule.
inline constexpr int kTwoCtaMaxWaves = 3;
inline constexpr int kTwoCtaMaxKeys = 2048;
bool two_ctas_pay(const FwdShape& s);

// From how many keys (seqlen_k; varlen: the max) a dense or causal head-dim-256 call on Hopper
// takes sm90_ws_128x80_d256 (H200 A/B against 64-key tiles, 2026-11-22, two runs: S2048-S16384
// 0.91-0.98x the time, S1024 0.98x non-causal and 1.00x causal, S512 1.02-1.03x; at 512 keys the
// seventh 80-key tile is 32 keys wide and runs masked, 9% more tensor-core work than 8 x 64).
// Measured again once O no longer went through the Q buffer (14ee069, bench/results/
// 2026-11-22-h200-short-items call 9): 80-key tiles at S512 1.03x the time, 64-key at S1024
// 1.045x non-causal: 1024 stays.
inline constexpr int kD256WideTileMinKeys = 1024;

// From how many keys (seqlen_k; varlen: the max) an FP8 head-dim-256 call takes
// sm90_fp8_128x128_d256 (the intra-warpgroup overlap at setmaxnreg 24 / 240) rather than
// sm90_fp8_128x128 (none, at 40 / 232). H200, gpuattn_fp8_probe in balanced order, the overlap
// against none (2026-11-30-h200-s53 call 3, 3 rounds, H8): S4096-S16384 1.05-1.075x TFLOP/s dense
// and causal, varlen16 (max 4096) 1.033x, S2048 1.025x, but S1024 1.008x dense and 0.947x causal,
// S512 0.979x dense and 0.930x causal.
inline constexpr int kFp8D256OverlapMinKeys = 2048;

// Up to how many keys (seqlen_k; varlen: the max) a dense or causal head-dim-128 call on Hopper
// takes sm90_ws_128x128_s3 (3 K/V stages, 1 Q buffer) rather than sm90_ws_128x128 (2 stages, 2 Q
// buffers): see its table entry for the A/B. Measured again past the bound once the 3-stage kernel
// had lost its window code and gained its causal twin (H200, 2026-12-01-h200-s59 call 1, forced
// against the pick, 4 rounds a shape a process): causal S3000-S16384 0.975-1.012x the time
// (geometric mean 0.994, within the 3-11% spread of those shapes), dense S4096 1.001x: no gain
// that would pay for moving the bound.
inline constexpr int kD128ThreeStageMaxKeys = 2048;

// Whether a call on Hopper at head dim 64 that the rule gives 2 consumer warpgroups runs
// sm90_ws_128x128_s4 (4 K/V stages): causal calls with no other mask and fewer than
// kD64FourStageMaxRows rows (seqlen_q; varlen: the max), standard precision, unless
// GPUATTN_KERNEL=sm90_ws_128x128. See its table entry for the A/B. The row bound keeps it where it
// was measured (causal S512 and S1024): longer causal calls on 2 consumers (small grids) keep 2
// stages, as 4 stages were not measured there (on long non-causal calls they were 0.99-1.03x).
inline constexpr int kD64FourStageMaxRows = 2048;
static_assert(kD64FourStageMaxRows <= kThreeConsumersCausalMinRows,
              "sm90_ws_128x128_s4's calls are causal calls that three_consumers_pay never gives 3 "
              "consumers (the table's why and --configs say so)");
bool d64_four_stages(const FwdShape& s);

// The forward kernel configuration of one call. The table is keyed by (arch, head dim, causal,
// sequence bucket); today the rule reads the arch (and whether the sm_90a kernel runs), the head
// dim, the precision, on sm_80 the grid size (a bucket of seqlen_q * hq * batch) and the device's
// shared memory per block (the shared memory compared is a block-layout call's, the most any mask
// takes), and on Hopper at head dims 64 and 256 whether the call has a mask beyond causal, at 256
// seqlen_k, and at 64 the grid in waves and, for causal calls, seqlen_q (three_consumers_pay);
// causal changes the pick only there:
//   decode_16x64            any GPU (sm_major >= 8), standard precision, dense and causal calls
//                           with seqlen_q x hq / hkv <= DecodePlan::kMaxRows (64) whose shared
//                           memory (DecodePlan::smem_bytes) fits a known max_smem_per_block, unless
//                           GPUATTN_KERNEL names a kernel (decode_allowed);
//   sm90_ws_128x80_d256     Hopper (sm_major 9) with the sm_90a kernel available, standard
//                           precision, head dim 256, dense and causal calls with at least
//                           kD256WideTileMinKeys keys;
//   sm90_ws_128x64_d256     the same with fewer keys, or with a window, global tokens or a block
//                           layout;
//   sm90_ws_128x128_s3      the same at head dim 128 for dense and causal calls with at most
//                           kD128ThreeStageMaxKeys keys, unless GPUATTN_KERNEL=sm90_ws_128x128;
//                           with any number when GPUATTN_KERNEL=sm90_ws_128x128_s3 forces it;
//   sm90_ws_64x128_2cta     the same at head dim 64 for dense and causal calls (not varlen) on
//                           small grids (two_ctas_pay()), and every dense or causal head-dim-64
//                           call but varlen ones when GPUATTN_KERNEL=sm90_ws_64x128_2cta forces
//                           it;
//   sm90_ws_192x128         the same at head dim 64 for dense and causal calls whose grid fills the
//                           GPU (three_consumers_pay(): 192-row items on 3 consumer warpgroups,
//                           also taken when GPUATTN_KERNEL=sm90_ws_192x128 forces it, never
//                           when GPUATTN_KERNEL=sm90_ws_128x128);
//   sm90_ws_128x128_s4      the same at head dim 64 for causal calls (no other mask) of fewer
//                           than kD64FourStageMaxRows rows, which never take sm90_ws_192x128
//                           (d64_four_stages()), unless GPUATTN_KERNEL=sm90_ws_128x128;
//   sm90_ws_128x128         the same at head dims 64 and 128 otherwise, any mask (dense, causal,
//                           sliding window, global tokens, block-sparse layouts; the kernel picks
//                           its masked instantiation for global tokens and for block layouts
//                           other than FwdParams::whole_tile_layout's);
//   sm90_ws_128x64_compensated  Hopper with the sm_90a kernel available, compensated precision,
//                           head dims 64 and 128, any mask;
//   sm80_64x64_compensated  otherwise, compensated precision (other GPUs, GPUATTN_KERNEL=sm80,
//                           head dim 256: the sm_90a kernel has no compensated mode there);
//   sm80_64x64              otherwise, at head dim 256 (the sm_80 kernel's only standard
//                           configuration there), when ceil(seqlen_q / 128) * hq * batch <
//                           2 * num_sms, or when sm80_128x64 needs more shared memory than a known
//                           max_smem_per_block (head dim 128 on a 99 KB device);
//   sm80_128x64             otherwise.
// The pick may still exceed max_smem_per_block when no configuration of the call's precision at
// its head dim fits (head dim 256 on a 99 KB device): the sm_80 launcher then throws
// not_supported, naming the configuration, the head dim and both byte counts.
const TileConfig& select_fwd_config(const FwdShape& s);

// Where the softmax of a key tile in sm_90a configuration `kernel` (standard precision) waits for
// the P V GEMM of the tile before it (FwdTraits::kLateWait in src/cuda/fwd_sm90.cuh): at its end,
// so that the two overlap (true), or at its start, which hands the V stage back sooner (false).
// Late on sm90_ws_128x128 and sm90_ws_128x128_s3 at head dim 128 (every call) and on
// sm90_ws_128x128 at head dim 64 for dense non-causal calls (an instantiation of their own: the
// one-wave B1 H16 S1024 shape took 0.98x the time; causal calls under 2048 rows 1.02-1.04x),
// and on sm90_ws_128x128_s4 (head dim 64, causal; since its half last tiles and one tile loop,
// without exponential turns: 0.989-0.996x the time at causal S512-S1024); never on the other
// configurations. The CUDA dispatch launches by it, and --show-config prints it.
bool sm90_late_pv_wait(FwdKernel kernel, int head_dim, bool causal, bool dense_or_causal);

// Whether the sm_90a configuration `kernel` runs call p on its dense instantiation (no tile search,
// no schedule words, no per-element masks beyond the sequence end, the causal diagonal and a
// window's edges) rather than its masked one: dense and causal calls; on sm90_ws_128x128 also a
// sliding window alone at head dim 128 (FwdParams::banded) and a block layout of whole tiles at
// head dims 64 and 128 (FwdParams::whole_tile_layout(128, 128)). The compensated kernel has only
// the masked instantiation; sm_80 configurations: false. src/cuda/fwd_sm90.cuh's launcher decides
// with this.
bool sm90_dense_instantiation(FwdKernel kernel, const FwdParams& p);

}  // namespace gpuattn
