// Attention forward for Hopper (sm_90a), warp-specialized. Per CTA: a producer warpgroup whose one
// elected thread streams Q once and K/V tiles of kBlockN keys (128; at head dim 256 80 for dense
// and causal calls from 1024 keys, 64 for the others) through a 2-stage ring with TMA (completing
// on mbarriers; the consumers release each stage through "empty" mbarriers), and two consumer
// warpgroups of 64 query rows each (three for dense and causal calls at head dim 64 where the grid
// fills the GPU: sm90_ws_192x128) that run both GEMMs on wgmma: S = Q K^T from 128-byte-swizzled
// shared memory, O += P V with P straight from the S registers (the accumulator layout of S is the
// register-A layout of the second GEMM). Inside a consumer the next tile's S GEMM runs during this
// tile's softmax, and the consumers take turns issuing their GEMMs (ping-pong on a ring of named
// barriers), so one's softmax overlaps another's GEMMs; at head dims 64 and 128 the leading tiles
// that every row of a consumer sees whole run a step without the mask code, in a loop of their own
// (see the dense loop in consume()). With more row blocks than SMs the kernel is
// persistent (one CTA per SM; the producer passes the work items of core/work_schedule.h to the
// consumers through a 2-slot ring in shared memory, and loads the next item's Q and K/V while the
// consumers finish this one), and the consumers store O through their rows of the Q buffer (at
// head dim 256, through the last key tile's stage), 16 bytes a thread.
//
// Two instantiations per (dtype, head dim): dense/causal (kMasked = false; at head dim 128 it also
// runs a sliding window alone, from the window's first key tile, see ItemShape) and every other
// mask of core/mask.h (kMasked = true: global tokens, strided global tokens, block-sparse layouts,
// each alone or with a window or causal). The masked kernel loads only the key tiles in which some
// row of the CTA sees a key: two producer warps find them (32 candidate tiles per step, one per
// lane; a searcher warp looks one item ahead) and tell the consumers which tile each stage holds
// through a word per stage in shared memory; tiles fully visible to a consumer's 64 rows run
// without per-element masking.
//
// Precision::compensated (head dims 64 and 128) is a third instantiation, FwdTraits<T, D, true>
// on the masked code path (which serves dense and causal calls too): exact running max, the row
// sums Kahan-summed across tiles, each tile's P V computed into a fresh accumulator and
// Kahan-added into O, as in the sm_80 kernel; 64-key tiles and no intra-warpgroup overlap, so that
// O, its Kahan terms and the fresh accumulator fit the consumer's registers (see consume()).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>

#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "core/work_schedule.h"
#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"
#include "cuda/ptx.cuh"
#include "cuda/tma.cuh"
#include "cuda/tma_maps.h"
#include "cuda/wgmma.cuh"

namespace gpuattn::sm90 {

// The masked kernel's look-ahead record (see produce_masked), ints: the item, the batch start t,
// the 7 fields of TileCandidates and the 32 lanes' words.
constexpr int kLookaheadInts = 2 + 7 + 32;
// Ints per slot of the work-item ring: the item and the shape the consumers take from it (m0, lq,
// lk, n_tiles, b, h, t_first), worked out once by the producer.
constexpr int kItemInts = 8;

template <typename T_, int kHeadDim_, bool kCompensated_ = false, int kConsumers_ = 2,
          int kBlockN_ = 0, bool kLateWaitD64_ = false, int kStages_ = 0, bool kCausalOnly_ = false,
          bool kAlibi_ = false>
struct FwdTraits {
  using T = T_;
  static constexpr int kHeadDim = kHeadDim_;
  // Precision::compensated: runs only as the masked instantiation (fwd_kernel<Tr, true>).
  static constexpr bool kCompensated = kCompensated_;
  // Consumer warpgroups of 64 rows each (wgmma M): 2, or 3 for dense and causal calls at head
  // dim 64 (FwdThreeConsumerTraits): a D64 tile's softmax costs as much as its GEMMs and the two
  // added up with 2 warpgroups (H200, 5a66687: 1.29 us a 128-row tile, ~0.88 us of it softmax), so
  // a third warpgroup gives the tensor cores a GEMM to run while two take their softmax (FA3's D64
  // layout). The masked kernel keeps 2 (its schedule word holds 2 flag bits per consumer).
  static constexpr int kConsumers = kConsumers_;
  static_assert(kConsumers == 2 ||
                    ((kConsumers == 3 || kConsumers == 1) && kHeadDim_ == 64 && !kCompensated_ &&
                     kBlockN_ == 0 && kStages_ == 0 && !kLateWaitD64_),
                "3 consumer warpgroups, or 1: head dim 64, standard precision");
  // One consumer warpgroup (FwdD64TwoCtaTraits, sm90_ws_64x128_2cta): 64-row items and two CTAs
  // an SM, each with its own items, K/V ring and barriers, so that one CTA's item boundaries fall
  // in the other's tiles (the 2-consumer kernel's warpgroups meet at every boundary); no turns
  // between them, no exponential turns. Small grids only (two_ctas_pay, core/tile_config.h).
  static constexpr int kCtasPerSm = kConsumers == 1 ? 2 : 1;
  // Whether it runs varlen calls: not the one-consumer kernel, which the dispatch gives dense and
  // causal calls of fixed lengths only (two_ctas_pay; GPUATTN_KERNEL=sm90_ws_64x128_2cta leaves
  // varlen calls to the rule), so it compiles neither the varlen producer loop nor the row-by-row
  // O copy (nvcc 13.0, fp16: 4912 -> 3976 instructions); launch_kernel refuses a varlen call
  // there. Time unchanged (H200, 2026-11-30-h200-s58 call 1: one-wave D64 shapes 0.993-1.003x).
  static constexpr bool kTakesVarlen = kConsumers != 1;
  // An instantiation of its own for dense and causal calls (every one but the 2-consumer kernel
  // FwdTraits<T, D> and the compensated one): run_fwd launches these through launch_own, which
  // refuses any call that is not p.dense_or_causal(), or (the late-wait D64 one) only for dense
  // calls (sm90_late_pv_wait). So they never run a sliding window or a block layout, and compile
  // neither (kBanded, kListed below): that dead code was 17-34% of their instructions (nvcc
  // 13.0, fp16: the 3-stage D128 kernel 7640 -> 5048, its causal twin 7880 -> 5048, the 4-stage
  // D64 one 6264 -> 4984, the late-wait D64 one 6224 -> 4952). H200, gpuattn bench a shape a
  // process, A B B A against the kernels with it (2026-11-30-h200-s58, calls 1-2, 3 rounds):
  // D128 S512-S2048 0.985-0.994x the time, causal 0.956-0.981x; causal D64 S256 / S512 0.968 /
  // 0.980x, S768-S1536 0.99-1.02x (there both builds spread over 0.194-0.200 ms); B1 H8 S4096 D64
  // (late wait) 0.976x. The same cut of FwdTraits<T, 128> for sm90_ws_128x128's dense and causal
  // calls (7904 -> 5304, branch wip/d128-dense; call 5) measured 0.979-1.015x at S3000-S32768,
  // inside that run's noise: not worth its 2 instantiations.
  static constexpr bool kOwnDenseCausal = kConsumers_ != 2 || kBlockN_ != 0 || kLateWaitD64_ ||
                                          kStages_ != 0 || kCausalOnly_ || kAlibi_;
  // Whether the dense loop adds ALiBi (FwdParams::alibi_slopes: a branch uniform over the call in
  // consume()'s softmax; ALiBi calls are dense or causal, or at head dim 128 windows alone, see
  // pick_forward_kernel and select_fwd_config): the 2-consumer
  // kernel at head dim 128 and both head-dim-256 kernels (H200, same-run A/B of calls without
  // ALiBi, 2026-12-03-h200-s70 call 3: 0.98-1.00x the time), but at head dim 64, whose softmax
  // takes as long as its GEMMs, none of the plain calls' kernels: with the branch compiled in,
  // calls without ALiBi took 1.025-1.036x the time (3 consumers, 2 CTAs) and 1.086x (4 stages,
  // causal S512; no spill in any). There instantiations of their own (kAlibi_: FwdD64AlibiTraits,
  // the 2-consumer kernel, and FwdD64ThreeAlibiTraits, the 3-consumer one, for dense and causal
  // calls) run the ALiBi calls; the 3-stage head-dim-128 kernels leave it out too (B16 S1024
  // causal measured 1.025x, within that run's spread, not worth a doubt), and their ALiBi calls
  // take instantiations of their own as well (FwdD128ShortAlibiTraits and its causal twin; on the
  // 2-stage kernel such a call cost 1.255x its plain time, s70).
  static constexpr bool kAlibi =
      !kCompensated_ && (kAlibi_ || (kHeadDim_ == 128 && !kOwnDenseCausal) || kHeadDim_ == 256);
  // Whether the dense instantiation runs sliding windows alone (p.banded(), see ItemShape): at
  // head dim 128 only (the 2-consumer kernel; run_fwd sends only dense and causal calls to the
  // 3-consumer one). At head dims 64 and 256 windows stay on the masked instantiation: the window
  // code cost their dense and causal calls more than it was measured to give (H200 A/B of
  // 8cdd8ae with and without it there: causal D64 S512 0.966x, S1024 0.989x the time, causal
  // D256 S2048-S8192 0.96-0.97x; windows are benchmarked at head dim 128 only).
  static constexpr bool kBanded = kConsumers == 2 && kHeadDim == 128 && !kOwnDenseCausal;
  // Block layouts of whole tiles (FwdParams::whole_tile_layout) run on the dense instantiation
  // too, their producer warp listing each item's on tiles (count_listed); the D256 producer's 24
  // registers leave no room for it, so those stay masked.
  static constexpr bool kListed =
      kConsumers == 2 && kHeadDim <= 128 && !kCompensated && !kOwnDenseCausal;
  static constexpr int kThreads = (kConsumers + 1) * 128;  // + the producer warpgroup
  static constexpr int kBlockM = kConsumers * 64;
  // Keys per tile: 128 at head dims 64 and 128, where wgmma N = 128 for S keeps the tensor cores
  // busy per instruction and a consumer's S, P and O (64 + 32 + D/2 registers per thread) fit its
  // 240. At head dim 256, O alone takes 128 registers: 64-key tiles (S 32 + P 16 + O 128) fit, and
  // smem holds Q (64 KB) and 2 stages of K and V (32 KB each): 192 KB. FA3 takes 80 keys at
  // hdim 256: the dense and causal calls do too (kBlockN_ below); the masked kernel would have
  // 28 registers beside S, P and O (40 + 20 + 128) and split its 64-key row masks, so it keeps 64.
  // Compensated: O and its Kahan terms take D registers per thread (128 at D = 128) beside a
  // fresh P V accumulator; with 64-key tiles S (32) and P (16) fit next to them in the masked
  // consumer's 216 (see consume()), and each tile's fresh accumulator sums 64 keys, as the sm_80
  // compensated kernel's does.
  // kBlockN_ (0: this rule) overrides it for one instantiation: 80 for the dense and causal
  // calls at head dim 256 (FwdD256Traits; FA3's hdim-256 tile is 128 x 80): S 40 + P 20 + O 128
  // registers fit 240, and Q (64 KB) plus 2 stages of K and V (40 KB each) take 224 KB of smem.
  // 80 keys carry each tile's fixed costs (O's 128-register rescale, the row reductions, the
  // barriers) over 25% more keys: 0.91-0.98x the time from 2048 keys on an H200; under 1024
  // keys the rule keeps 64 (kD256WideTileMinKeys). The masked kernel builds its key masks 64 keys
  // at a time, so it keeps 64.
  static constexpr int kBlockN = kBlockN_ != 0                       ? kBlockN_
                                 : (kHeadDim == 256 || kCompensated) ? 64
                                                                     : 128;
  static_assert(kBlockN_ == 0 ||
                    (kBlockN_ == 80 && kHeadDim == 256 && !kCompensated && kConsumers == 2),
                "a key-tile override: 80 at head dim 256, standard precision");
  // K/V stages in the ring. At head dims 128 and 256 two (with two Q buffers, or one 64 KB Q)
  // fill the smem. Head dim 64 has room for 4: H200 A/B against 2 stages (6640e35, 3 rounds),
  // fp16 B1 H16 S1024 1.025x the time, B4 H32 S4096 0.994x: the loads are not what it waits for.
  // Measured again at eeaf289 (first loads before __syncthreads): 3 and 4 stages 0.995x and
  // 0.991x at B1 H16 S1024, within the noise of the D64 sweep (2026-11-22-h200-d64-free, call 12).
  // kStages_ (0: 2) overrides it for two instantiations: 3 for dense and causal calls at head
  // dim 128 with short keys (FwdD128ShortTraits, tile config sm90_ws_128x128_s3), which then keep
  // one Q buffer (kQBuffers below); 4 for causal calls at head dim 64 under 2048 rows
  // (FwdD64CausalTraits, sm90_ws_128x128_s4, 2 consumers), whose items of 1-16 key tiles start
  // on cold K/V (causal S512 0.955x the time, S1024 0.971x; two Q buffers still fit).
  static constexpr int kStages = kStages_ != 0 ? kStages_ : 2;
  static_assert(kStages_ == 0 ||
                    (kStages_ == 3 && kHeadDim_ == 128 && kConsumers_ == 2 && !kCompensated_ &&
                     kBlockN_ == 0) ||
                    (kStages_ == 4 && kHeadDim_ == 64 && kConsumers_ == 2 && !kCompensated_ &&
                     kBlockN_ == 0 && !kLateWaitD64_),
                "a stage override: 3 at head dim 128, 4 at head dim 64, "
                "standard precision");
  // An instantiation that runs causal calls only (run_fwd picks it): the causal twin of the
  // 3-stage head-dim-128 kernel (FwdD128ShortCausalTraits) and the 4-stage head-dim-64 one
  // (FwdD64CausalTraits). They take half last tiles on one tile loop (kHalfLast, kWholeLoop).
  static constexpr bool kCausalOnly = kCausalOnly_;
  static_assert(!kCausalOnly_ || kStages_ == 3 || kStages_ == 4,
                "causal-only instantiations: the 3- and 4-stage ones");
  // Consumers take turns issuing their GEMMs (see consume()): H200, gpuattn bench, fp16 B4 H16
  // S4096 D128 543 -> 588 TFLOP/s non-causal, 487 -> 551 causal; bf16 579 -> 659 / 504 -> 520.
  // The compensated consumer at D = 128 has no registers for the turns: with them ptxas spilled
  // (56 bytes of stores at setmaxnreg 216, 16 at 224 with the producer at 56); without them it
  // peaks at R213 of 216, no spills. Turns around each tile's exponentials instead, with no
  // overlap of a warpgroup's own GEMMs and softmax (cuDNN's head-dim-64 loop, read from its SASS):
  // 1.000x the time at D64 with 2 consumers, 1.06-1.16x with 3, 1.10-1.24x at D128 (branch
  // wip/exp-turns). No turns at D64, with the late wait: 1.08x (2026-11-22-h200-d64-free).
  static constexpr bool kPingPong = kConsumers > 1 && !(kCompensated && kHeadDim == 128);
  // Exp turns: besides the GEMM turns, the consumers take turns for each tile's exponentials and
  // row sums (after both rows' max; named barriers kExpBarrier + cw, a ring like the GEMM
  // turns'), so that no two warps of a sub-partition run their MUFU.EX2 at once:
  // tools/mufu_probe.cu (H200) times a warp's exponentials at 8.8 cycles each alone and 16.4
  // beside a second warp's. Serialized, the two runs take the same exp2 time; it pays only where
  // the warp done first has work to go on with: H200, same-run A/Bs (twenty-first session, calls
  // 3, 5 and 8; 2, 4 and 3 rounds), causal D64 S1024 (the 2-consumer kernel with the hoisted P V
  // wait, which runs causal calls under 2048 rows) 0.979 / 0.977 / 0.975x the time, S512 0.995 /
  // 0.996 / 0.990x; the other D64 kernels lost (one-wave late-wait 1.009-1.013x, the 3-consumer
  // sweep 1.00-1.03x) and so did D128 (1.00-1.06x). So: that instantiation's dense kernel only
  // (the masked one, not measured, keeps free-running exponentials). Not the 4-stage causal
  // kernel since its half last tiles and one tile loop (kHalfLast): without them there, and with
  // the late wait (kLateWait), H200 A/B against it (2026-11-30-h200-s57, calls 6-7, 4 rounds):
  // causal B32 H32 S512 0.989x the time (twice), B16 H32 S1024 0.990-0.994x, bf16 B8 S512
  // 0.995-0.996x; without the turns alone 0.989-1.000x.
  static constexpr bool kExpTurns =
      kConsumers == 2 && kHeadDim == 64 && !kCompensated && !kLateWaitD64_ && !kCausalOnly_;
  static constexpr int kExpBarrier = 8;  // after the turn (1-2), epilogue (3-4), stage (6-7) ones
  // Where a tile's softmax waits for the P V GEMM before it (see consume()'s step): after the
  // softmax, so that the two overlap (head dim 128), or at its start, where ptxas hoists the wait
  // by itself, which hands the V stage back to the producer a softmax earlier. H200, same-run
  // A/Bs against the hoisted wait (5 runs, 3 rounds each; identical code moved up to 4% between
  // runs): D128 causal S4096 0.94-0.98x the time (median 0.96), S32k causal 0.97-0.98x, fp16 and
  // bf16 S4096 0.91-1.01x (median 0.98); B16 S1024 causal and S512 0.99-1.02x. At head dim 64 it
  // won 3% on the one-wave B1 H16 S1024 but lost 1-3.5% on causal S512 / S1024 with 2 consumers
  // and 2-9% at S512-S2048 with 3; at head dim 256 it lost 1-5% at S512-S2048. There a tile's
  // softmax either already hides behind the other warpgroups' GEMMs or the items are too short
  // for the overlap to pay for the later V release.
  // So on the 2-stage kernel at head dim 64 only dense non-causal calls (the one-wave B1 H16
  // S1024 shape among them; grids that fill the GPU take 3) run the late wait, in an
  // instantiation of their own (FwdD64LateWaitTraits, picked by run_fwd); its causal calls keep
  // the hoisted one. H200, same-run A/Bs against the hoisted wait at B1 H16 S1024: 0.979x the time
  // (5 rounds) and 0.984x (7 rounds; the 3-consumer S4096 control 0.989x), 0.957x back to back
  // in a CUDA graph (2026-11-22-h200-steps, calls 2 and 9); causal B32 H32 S512 1.037x (call 2).
  // The 4-stage causal kernel (kCausalOnly_) took the late wait in session 57, with its half last
  // tiles and one tile loop and without exp turns (see kExpTurns): causal S512 0.989x the time.
  // (core/tile_config.h's sm90_late_pv_wait states this rule for the dispatch and --show-config.)
  static constexpr bool kLateWait = kHeadDim == 128 || kLateWaitD64_ || kCausalOnly_;
  static_assert(!kLateWaitD64_ || (kHeadDim == 64 && kConsumers == 2 && !kCompensated),
                "the late-wait instantiation is the 2-consumer head-dim-64 one");
  // Q in registers for S = Q K^T (wgmma with A from registers): each consumer loads its 64 rows
  // of Q once an item (ldmatrix, D / 8 registers a thread), so the S GEMM reads only K from
  // shared memory (a third less of its operand traffic). 2-consumer dense / causal kernels at head
  // dims 64 and 128, whose consumers have registers to spare (setmaxnreg 232). H200, same-run A/B
  // (5 rounds): B1 H16 S1024 D64 0.977x the time, S4096 D128 0.975-0.992x; sustained at the 700 W
  // cap +3.4-3.6% TFLOP/s (less energy a tile). Not with 3 consumers (96 bytes of spill at 160
  // registers) nor in the masked kernel (window + globals 1.26x the time).
  static constexpr bool kQInRegs = !kCompensated && kConsumers <= 2 && kHeadDim <= 128;
  // Half last tiles (the dense / causal consumer, 128-key tiles): when a warpgroup's rows see no
  // key of its item's last tile's second 64 (a causal item's diagonal tile for the warpgroup of
  // the first 64 rows, and for 192-row items the other warpgroups' part of the second diagonal
  // tile; a sequence ending in the first half of its last tile), that tile's S GEMM runs at
  // N = 64, its softmax and pack on 64 keys and its P V on 4 k-steps instead of 8. The step is a
  // copy of its own, run once an item. H200, gpuattn bench a shape a process, A B B A against
  // the kernels without it (2026-11-30-h200-s56, calls 2 and 3):
  // - 3 consumers (sm90_ws_192x128): B2 H16 S1088 D64 0.971-0.972x the time (twice), causal
  //   S8192 0.981-0.987x, causal S4000 0.995-1.003x, B4 H32 S4096 (no half tile) 1.00x;
  // - the 4-stage causal kernel (sm90_ws_128x128_s4) with one tile loop (kWholeLoop below):
  //   causal B32 H32 S512 0.983x, B16 H32 S1024 0.970-0.989x, small grids 0.99-1.00x;
  // - the 3-stage head-dim-128 kernel's causal twin (sm90_ws_128x128_s3's causal calls), also
  //   with one tile loop (2026-11-30-h200-s57, call 3, 2 rounds of A B C D D C B A): causal
  //   B32 H16 S512 0.982x, B16 S1024 0.970x, B8 S2048 0.983x, bf16 S512 0.984x, GQA B4 Hq32 Hkv8
  //   S1000 0.986x; half tiles alone there 1.04x at S512, one loop alone 0.97-1.04x. Non-causal
  //   calls lost with both (S512-S2048 1.01-1.04x), so they keep the 3-stage kernel as it was;
  // - lost with the whole-tile loop kept: s4 causal S512 1.09x, S1024 1.02x (6296 -> 6752
  //   instructions), the 2-CTA kernel's one-wave calls 1.00x (their longest item, odd, has no
  //   half tile). So the 2-CTA kernel (and every 2-stage one) keeps whole last tiles.
  static constexpr bool kHalfLast =
      kBlockN == 128 && !kCompensated && (kConsumers == 3 || kCausalOnly_);
  // The whole-tile loop (see consume()): all but the causal-only kernels, where its second copy
  // of the tile step cost more than the mask checks it saves. H200, same run as kHalfLast's call 3:
  // one loop alone 1.013-1.034x the time at causal D64 S512-S1024, one loop with half last tiles
  // 0.970-0.996x (the same instruction count as the two loops without them: 6296).
  static constexpr bool kWholeLoop = kHeadDim <= 128 && !kCausalOnly_;
  static constexpr int kSlabs = kHeadDim / 64;  // 128-byte-wide column slabs (swizzle atoms)
  static constexpr int kQBytes = kBlockM * kHeadDim * 2;
  static constexpr int kKVBytes = kBlockN * kHeadDim * 2;
  // mbarriers, a schedule word per stage, 2 item slots, the look-ahead record, the varlen
  // sequence end (see Barriers)
  static constexpr int kBarrierBytes =
      (8 * (4 + 4 * kStages + 4 + 2) + 4 * (kStages + 2 * kItemInts + kLookaheadInts + 1) + 7) / 8 *
      8;
  // Q buffers of the persistent kernel: with two, the next item's Q loads while this item runs
  // (with one, its load starts once this item's last S GEMM is done, and O is staged through the
  // last tile's stage: see kEarlyQ in consume()). Two where they fit the 227 KB: head dims 64 and
  // 128; 256 keeps one.
  static constexpr int kQBuffers =
      2 * kQBytes + 2 * kStages * kKVBytes + kBarrierBytes + 1024 <= 227 * 1024 / kCtasPerSm ? 2
                                                                                             : 1;
  static constexpr int kSmemBytes =
      kQBuffers * kQBytes + 2 * kStages * kKVBytes + kBarrierBytes + 1024;
  // Registers: 65536 / 384 threads = 168 at launch; the producer drops to 40 and the consumers
  // rise to 232 (128 * 40 + 256 * 232 = 64512; D256: 24 and 240): S, P and O (64 + 32 + D/2;
  // 32 + 16 + 128 at D = 256) plus the overlap. The producer thread works out each item's shape
  // for the item ring: at 32 registers ptxas spilled 8 bytes there, at 40 none (D256's 24 spill
  // 48, 44 before the ring carried the shape).
  // With 3 consumers (512 threads, 128 registers each at launch): 32 and 160 (128 * 32 + 384 *
  // 160 = 65536), S, P and O of D64 (64 + 32 + 32) plus the overlap. ptxas (nvcc 13.0): 8 bytes
  // of spill stores, the producer's (as at 32 with 2 consumers); 24/160 spilled 56, 40/152 48.
  // One consumer, two CTAs an SM (256 threads, 128 registers each at launch): 40 and 216.
  static constexpr int kProducerRegs = kConsumers == 3 ? 32 : kHeadDim == 256 ? 24 : 40;
  static constexpr int kConsumerRegs = kConsumers == 3   ? 160
                                       : kConsumers == 1 ? 216
                                       : kHeadDim == 256 ? 240
                                                         : 232;
  // The masked kernel's producer warp runs the tile search (MaskPolicy's range and tile tests,
  // block layout reads): at 56 registers ptxas spilled 8 bytes, at 72 none when this was set; it
  // has grown since, and its producer and searcher warps spill (ptxas -v, nvcc 13.0, bf16 D128:
  // 432 / 524 bytes of spill stores / loads; 96 / 200 would take that to 176 / 240, not yet timed:
  // bench/results/2026-11-30-h200-s46/masked-regs-96-200.patch). Its consumers hold the same S,
  // P and O plus the per-element mask in 203 of the remaining 216 (128 * 72 + 256 * 216 = 64512).
  static constexpr int kMaskedProducerRegs = 72;
  static constexpr int kMaskedConsumerRegs = 216;

  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head dims 64, 128 and 256");
  static_assert(!kCompensated || kHeadDim <= 128,
                "compensated at head dim 256: O and its Kahan terms alone would take 256 registers "
                "per consumer thread (that call runs on the sm_80 path)");
  // Every slab of Q, K and V (kBlockM or kBlockN rows of 128 bytes) and every stage starts on a
  // 1024-byte swizzle atom; the masked consumers build their key masks 64 keys at a time.
  static_assert((kBlockN % 64 == 0 || kBlockN_ != 0) && kBlockN % 16 == 0 && kBlockN <= 256 &&
                    kBlockM % 8 == 0,
                "swizzle atoms (8 rows), wgmma k-steps (16 keys), masks (64 keys)");
  static_assert(kSmemBytes <= 227 * 1024 / kCtasPerSm - (kCtasPerSm - 1) * 1024,
                "shared memory per block");
  // The CTA holds what launch gave it, 65536 / kThreads registers a thread rounded down to 8 (168
  // x 384 = 64512 with 2 consumers; all 65536 with 3): a setmaxnreg.inc past it would wait for
  // registers that never come.
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <=
                        65536 / (kThreads * kCtasPerSm) / 8 * 8 * kThreads &&
                    (kConsumers != 2 ||
                     128 * kMaskedProducerRegs + 256 * kMaskedConsumerRegs <= 168 * kThreads),
                "setmaxnreg moves registers between the warpgroups; it adds none");
};

// The traits of the dense / causal instantiation on 3 consumer warpgroups (head dim 64, standard
// precision; see FwdTraits::kConsumers): the configuration sm90_ws_192x128.
template <typename T>
using FwdThreeConsumerTraits = FwdTraits<T, 64, false, 3>;
// The traits of the dense / causal instantiation at head dim 64 on one consumer warpgroup, two
// CTAs an SM (see FwdTraits::kCtasPerSm): the configuration sm90_ws_64x128_2cta.
template <typename T>
using FwdD64TwoCtaTraits = FwdTraits<T, 64, false, 1>;
// The traits of the dense / causal instantiation at head dim 256 in standard precision: 80-key
// tiles (see FwdTraits::kBlockN): the configuration sm90_ws_128x80_d256.
template <typename T>
using FwdD256Traits = FwdTraits<T, 256, false, 2, 80>;
// The traits of the dense non-causal instantiation at head dim 64 on 2 consumers: the P V wait
// after the softmax (see FwdTraits::kLateWait); the configuration sm90_ws_128x128.
template <typename T>
using FwdD64LateWaitTraits = FwdTraits<T, 64, false, 2, 0, true>;
// The traits of the dense / causal instantiation at head dim 128 for short keys: 3 K/V stages and
// one Q buffer (see FwdTraits::kStages); the configuration sm90_ws_128x128_s3.
template <typename T>
using FwdD128ShortTraits = FwdTraits<T, 128, false, 2, 0, false, 3>;
// The traits of the causal instantiation at head dim 64 on 2 consumers: 4 K/V stages (see
// FwdTraits::kStages); the configuration sm90_ws_128x128_s4.
template <typename T>
using FwdD64CausalTraits = FwdTraits<T, 64, false, 2, 0, false, 4, true>;
// The causal twin of FwdD128ShortTraits (half last tiles on one tile loop, see
// FwdTraits::kHalfLast): what sm90_ws_128x128_s3 runs for causal calls.
template <typename T>
using FwdD128ShortCausalTraits = FwdTraits<T, 128, false, 2, 0, false, 3, true>;
// The ALiBi calls' instantiations at head dim 64 (see FwdTraits::kAlibi), for dense and causal
// calls, with the bias: the 3-consumer kernel (sm90_ws_192x128) where three_consumers_pay, the
// 2-consumer one (sm90_ws_128x128) on the grids it does not.
template <typename T>
using FwdD64AlibiTraits = FwdTraits<T, 64, false, 2, 0, false, 0, false, true>;
template <typename T>
using FwdD64ThreeAlibiTraits = FwdTraits<T, 64, false, 3, 0, false, 0, false, true>;
// And at head dim 128 for short keys: the 3-stage kernel (sm90_ws_128x128_s3) and its causal
// twin with the bias, as the plain calls take them (up to kD128ThreeStageMaxKeys keys).
template <typename T>
using FwdD128ShortAlibiTraits = FwdTraits<T, 128, false, 2, 0, false, 3, false, true>;
template <typename T>
using FwdD128ShortCausalAlibiTraits = FwdTraits<T, 128, false, 2, 0, false, 3, true, true>;

using ptx::quad_max;
using ptx::quad_sum;

// Kahan step: sum += y with compensation c. The _rn intrinsics are never contracted into an FMA
// with the multiply before them (the rescale of sum by alpha): t would then add the unrounded
// product while t - sum subtracts the rounded one, and c would take that difference for an error
// of the sum.
__device__ __forceinline__ void kahan_add(float& sum, float& c, float y) {
  const float yc = __fsub_rn(y, c);
  const float t = __fadd_rn(sum, yc);
  c = __fsub_rn(__fsub_rn(t, sum), yc);
  sum = t;
}

// Stale running max slack in log2 units, as in the sm_80 kernel: O is rescaled only when a row's
// max grows by more than 2^8.
constexpr float kRescaleSlack = 8.f;

// A diagnostic build (-DGPUATTN_SM90_TRACE=1, never the default) stamps clock64 at the work-item
// events of CTA 0, role 0 the producer (lane 0) and role 1 + cw consumer warpgroup cw (its first
// thread), which the host prints after each launch (scripts/sm90-trace.sh reads them): producer
// 0 item taken, 1 first tile found, 2 first tile's K and V issued, 3 last tile's issued; consumer
// 0 item taken, 1 set up, 2 Q there (masked), 3 first S issued, 4 first S done, 5 last P V done,
// 6 O in smem, 7 warpgroup barrier passed, 8 O stored, 9 epilogue done; finer ones (SM90_TRACE_X
// lines) 10 Q there (dense), 11 Q's registers loaded, 12 the turn taken for the first S, 13 the
// epilogue started, 14 the row totals done, 15 the loop top before the ring's wait. The CTA's own
// span goes in role 0's row kTraceCta (SM90_TRACE_X): 10 kernel entry, 11 barriers set up
// (__syncthreads passed), 12 / 13 / 14 consumer 0 / 1 / 2 past its last store's completion. The
// host prints them (print_sm90_trace), not the kernel: a printf in the kernel made ptxas serialize
// every wgmma of the traced kernel (C7510, "wgmma pipeline crossing function boundary at a function
// call"), so trace builds before the eleventh session timed serialized GEMMs.
#if defined(GPUATTN_SM90_TRACE) && GPUATTN_SM90_TRACE
static __device__ long long g_sm90_trace[4][48][16];  // the producer and up to 3 consumers
constexpr int kTraceCta = 47;  // role 0's last row: the CTA's span (10-14), no work item
#define SM90_TRACE(role, item, event)                               \
  do {                                                              \
    if (blockIdx.x == 0 && (threadIdx.x & 127) == 0 && (item) < 48) \
      g_sm90_trace[role][item][event] = clock64();                  \
  } while (0)
// Per key tile of CTA 0's first item, consumer cw's step (consume()): 0 the step entered, 1 its
// turn taken, 2 its GEMMs (S_{j+1}, P_j V_j) issued, 3 S_{j+1} waited for (where ptxas hoists the
// P V wait above the softmax, P_j V_j too), 4 the softmax done, 5 P packed (O rescaled); inside
// the issue, 6 K_{j+1} there (its full barrier passed), 7 S_{j+1} issued, 8 V_j there. Row 3 is
// the producer's load_kv of the CTA's tile j: 0 entered, 1 K's stage free, 2 V's stage free, 3 V
// issued.
constexpr int kTraceTiles = 64;
static __device__ long long g_sm90_tiles[4][kTraceTiles][9];
#define SM90_TRACE_TILE(cw, item, tile, event)                                              \
  do {                                                                                      \
    if (blockIdx.x == 0 && (threadIdx.x & 127) == 0 && (item) == 0 && (tile) < kTraceTiles) \
      g_sm90_tiles[cw][tile][event] = clock64();                                            \
  } while (0)
// Every CTA's (first 1024) entry (slot 0, thread 0) and each consumer's last store drained (slot
// 1 + cw), on the GPU-wide nanosecond timer: how the launch spreads the CTAs' starts and ends.
static __device__ unsigned long long g_sm90_ctas[1024][4];
__device__ __forceinline__ unsigned long long sm90_trace_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define SM90_TRACE_CTA(slot)                                                \
  do {                                                                      \
    if (blockIdx.x < 1024) g_sm90_ctas[blockIdx.x][slot] = sm90_trace_ns(); \
  } while (0)
// Every CTA's (first 1024) SM and warp slot (%smid, and %warpid of consumer 0's first warp) and
// the SM's clock64 where consumer 0 enters each of its first item's first kTraceSteps steps: which
// CTAs share an SM (sm90_ws_64x128_2cta runs two an SM) and whether the two run their tiles in step
// (the same SM's clock, so their stamps compare directly).
constexpr int kTraceSteps = 8;
static __device__ long long g_sm90_cta_steps[1024][2 + kTraceSteps];
#define SM90_TRACE_WHERE(cw)                                          \
  do {                                                                \
    if ((cw) == 0 && (threadIdx.x & 127) == 0 && blockIdx.x < 1024) { \
      unsigned sm, wid;                                               \
      asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));                 \
      asm volatile("mov.u32 %0, %%warpid;" : "=r"(wid));              \
      g_sm90_cta_steps[blockIdx.x][0] = sm;                           \
      g_sm90_cta_steps[blockIdx.x][1] = wid;                          \
    }                                                                 \
  } while (0)
#define SM90_TRACE_STEP(cw, item, tile)                                                 \
  do {                                                                                  \
    if ((cw) == 0 && (item) == 0 && (tile) < kTraceSteps && (threadIdx.x & 127) == 0 && \
        blockIdx.x < 1024)                                                              \
      g_sm90_cta_steps[blockIdx.x][2 + (tile)] = clock64();                             \
  } while (0)
// The stamps of the launch just made on `stream`, one line per (role, item), as the kernel's own
// printf wrote them before (bench/sm90_trace_summary.py reads them): roles 0 .. `consumers`.
// static, not inline: each .cu file has its own g_sm90_trace, and an inline function is one weak
// symbol for the whole library, so every kernel's stamps were read from one file's array (all
// zeros for the kernels of the other files: "no consumer stamps", 2026-11-22 call 3).
static void print_sm90_trace(cudaStream_t stream, int consumers, int ctas) {
  static long long h[4][48][16];
  static unsigned long long c[1024][4];
  static long long tiles[4][kTraceTiles][9];
  static long long steps[1024][2 + kTraceSteps];
  GPUATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  GPUATTN_CUDA_CHECK(cudaMemcpyFromSymbol(h, g_sm90_trace, sizeof(h)));
  GPUATTN_CUDA_CHECK(cudaMemcpyFromSymbol(c, g_sm90_ctas, sizeof(c)));
  GPUATTN_CUDA_CHECK(cudaMemcpyFromSymbol(tiles, g_sm90_tiles, sizeof(tiles)));
  GPUATTN_CUDA_CHECK(cudaMemcpyFromSymbol(steps, g_sm90_cta_steps, sizeof(steps)));
  // Zeroed for the next launch: a CTA that takes fewer steps there leaves no stale stamps.
  static const long long zero_steps[1024][2 + kTraceSteps] = {};
  GPUATTN_CUDA_CHECK(cudaMemcpyToSymbol(g_sm90_cta_steps, zero_steps, sizeof(zero_steps)));
  // SM90_TILE cw tile e0 .. e8: the steps of CTA 0's first item (zeros: no such step); the
  // producer's loads of the CTA's tiles, SM90_PTILE tile e0 .. e3
  for (int cw = 0; cw < consumers; ++cw) {
    for (int t = 0; t < kTraceTiles; ++t) {
      const long long* e = tiles[cw][t];
      if (e[0] != 0) {
        std::printf("SM90_TILE %d %d %lld %lld %lld %lld %lld %lld %lld %lld %lld\n", cw, t, e[0],
                    e[1], e[2], e[3], e[4], e[5], e[6], e[7], e[8]);
      }
    }
  }
  for (int t = 0; t < kTraceTiles; ++t) {
    const long long* e = tiles[3][t];
    if (e[0] != 0) std::printf("SM90_PTILE %d %lld %lld %lld %lld\n", t, e[0], e[1], e[2], e[3]);
  }
  // SM90_CTAS n first_entry last_entry first_done last_done cta0_entry cta0_done (ns; done: the
  // CTA's last consumer past its stores)
  unsigned long long e0 = ~0ull, e1 = 0, d0 = ~0ull, d1 = 0;
  unsigned long long done0 = 0;  // CTA 0's (its clock64 span over this gives the SM clock)
  const int n = ctas < 1024 ? ctas : 1024;
  for (int b = 0; b < n; ++b) {
    unsigned long long done = 0;
    for (int cw = 0; cw < consumers; ++cw) done = c[b][1 + cw] > done ? c[b][1 + cw] : done;
    if (b == 0) done0 = done;
    e0 = c[b][0] < e0 ? c[b][0] : e0;
    e1 = c[b][0] > e1 ? c[b][0] : e1;
    d0 = done < d0 ? done : d0;
    d1 = done > d1 ? done : d1;
  }
  std::printf("SM90_CTAS %d %llu %llu %llu %llu %llu %llu\n", n, e0, e1, d0, d1, c[0][0], done0);
  // SM90_CTA b smid warpid entry done step0 .. step7 (ns on the GPU timer; steps: the SM's
  // clock64 at consumer 0's step entries of the CTA's first item, 0 where it took no such step)
  for (int b = 0; b < n; ++b) {
    unsigned long long done = 0;
    for (int cw = 0; cw < consumers; ++cw) done = c[b][1 + cw] > done ? c[b][1 + cw] : done;
    const long long* e = steps[b];
    std::printf("SM90_CTA %d %lld %lld %llu %llu", b, e[0], e[1], c[b][0], done);
    for (int t = 0; t < kTraceSteps; ++t) std::printf(" %lld", e[2 + t]);
    std::printf("\n");
  }
  for (int role = 0; role <= consumers; ++role) {
    for (int i = 0; i < 48; ++i) {
      const long long* e = h[role][i];
      std::printf("SM90_TRACE %d %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld\n", role, i,
                  e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7], e[8], e[9]);
      if (role > 0 || i == kTraceCta) {
        std::printf("SM90_TRACE_X %d %d %lld %lld %lld %lld %lld %lld\n", role, i, e[10], e[11],
                    e[12], e[13], e[14], e[15]);
      }
    }
  }
  std::fflush(stdout);
}
#else
#define SM90_TRACE(role, item, event) \
  do {                                \
  } while (0)
#define SM90_TRACE_CTA(slot) \
  do {                       \
  } while (0)
#define SM90_TRACE_TILE(cw, item, tile, event) \
  do {                                         \
  } while (0)
#define SM90_TRACE_WHERE(cw) \
  do {                       \
  } while (0)
#define SM90_TRACE_STEP(cw, item, tile) \
  do {                                  \
  } while (0)
#endif

// mbarriers after the tiles, 8 bytes each: Q full and Q empty (the consumers are done with a work
// item's Q) of each Q buffer; K full, V full, K empty and V empty of each of the `stages` stages;
// the work-item ring's item full and item empty of its 2 slots; the masked kernel's look-ahead
// record full and empty. Then ints: the masked kernel's schedule word of each stage (see
// kEndOfTiles), the ring's 2 slots, in which the producer tells the consumers which item comes
// next and its shape (kItemInts), and the masked kernel's look-ahead record.
struct Barriers {
  std::uint32_t q_full, q_empty;                   // Q buffer b: + 8 * b
  std::uint32_t k_full, v_full, k_empty, v_empty;  // stage s: + 8 * s
  std::uint32_t item_full, item_empty;             // slot s: + 8 * s
  std::uint32_t look_full, look_empty;
  std::uint32_t sched;      // stage s: + 4 * s
  std::uint32_t item_slot;  // slot s: + 4 * kItemInts * s
  std::uint32_t lookahead;  // int i: + 4 * i
  std::uint32_t seq_end;    // varlen: the row past the producer's item's last key (see load_kv)
  static constexpr int bytes(int stages) {
    return 8 * (4 + 4 * stages + 4 + 2) + 4 * (stages + 2 * kItemInts + kLookaheadInts + 1);
  }
  __device__ Barriers(std::uint32_t base, int stages)
      : q_full(base),
        q_empty(base + 16),
        k_full(base + 32),
        v_full(k_full + 8 * stages),
        k_empty(v_full + 8 * stages),
        v_empty(k_empty + 8 * stages),
        item_full(v_empty + 8 * stages),
        item_empty(item_full + 16),
        look_full(item_empty + 16),
        look_empty(look_full + 8),
        sched(look_empty + 8),
        item_slot(sched + 4 * stages),
        lookahead(item_slot + 8 * kItemInts),
        seq_end(lookahead + 4 * kLookaheadInts) {}
  // Q buffer b (0 or 1).
  __device__ std::uint32_t q_full_of(int b) const { return q_full + 8 * b; }
  __device__ std::uint32_t q_empty_of(int b) const { return q_empty + 8 * b; }
};

// ---- masks beyond causal (the kMasked instantiation) --------------------------------------------

// The schedule word the producer stores for a stage before the stage's K "full" arrival: the key
// tile the stage holds (bits kWordTileShift and up); kLastTile set when it is the work item's last
// tile; and, for consumer warpgroup cw, bit cw set when the position mask (causal, window, global
// tokens, the sequence end) hides some key of the tile from some of the warpgroup's rows, bit
// 2 + cw set unless every block of the layout that the tile and the warpgroup's rows touch is on
// (or when the producer did not look: more than 8 blocks). kEndOfTiles: the item has no tile at
// all, and the stage holds none.
constexpr int kEndOfTiles = -1;
constexpr int kLastTile = 1 << 4;
constexpr int kWordTileShift = 5;

__device__ __forceinline__ void st_shared_s32(std::uint32_t addr, int v) {
  asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_shared_s32(std::uint32_t addr) {
  int v;
  asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

GPUATTN_HD int min_int(int a, int b) {
  return a < b ? a : b;
}
GPUATTN_HD int max_int(int a, int b) {
  return a > b ? a : b;
}

// The bits [0, n) of a 64-bit mask (n may lie outside [0, 64]).
GPUATTN_HD std::uint64_t bits_below(int n) {
  return n <= 0 ? 0ull : (n >= 64 ? ~0ull : (1ull << n) - 1);
}

// Bit x set: key `base + x` (0 <= x < 64) is a global key.
GPUATTN_HD std::uint64_t global_key_bits(const FwdParams& p, int base) {
  std::uint64_t bits = bits_below(p.global_tokens - base);
  const int stride = p.global_stride;
  if (stride > 0) {
    const int rem = base % stride;
    const int x0 = rem == 0 ? 0 : stride - rem;  // the first strided key at or after base
    if (x0 < 64) {
      bits |= 1ull << x0;
      if (stride < 64) {
        for (int x = x0 + stride; x < 64; x += stride) bits |= 1ull << x;
      }
    }
  }
  return bits;
}

// Where the keys that rows [i_first, i_last] see under the position mask `m` (no block layout) can
// lie: keys [0, prefix) (the global tokens, and every key up to the causal limit of a global query
// row; the whole key range without a window), the window band [band_begin, band_end), and the
// strided global keys below causal_end. The producer passes over the tiles that hold none of them
// without a look and tests every other tile of the key range exactly, layout included
// (MaskPolicy::tile_any_visible, a tile per lane). The layout stays out of the range on purpose:
// MaskPolicy::key_range would scan it block by block in one thread.
template <int kBlockN>
struct TileCandidates {
  int first = 0, end = 0;  // the tiles of m.key_range
  int prefix = 0;
  int band_begin = 0, band_end = 0;
  int causal_end = 0;
  int stride = 0;

  GPUATTN_HD TileCandidates() {}
  GPUATTN_HD TileCandidates(const MaskPolicy& m, int i_first, int i_last, int lq, int lk) {
    const KeyRange r = m.key_range(i_first, i_last, lq, lk);
    if (r.empty()) return;
    first = r.begin / kBlockN;
    end = r.end / kBlockN + (r.end % kBlockN != 0);
    if (!m.has_window()) {
      prefix = r.end;
      return;
    }
    MaskPolicy band = m;  // the window band alone, clipped to the causal limit
    band.global_tokens = 0;
    band.global_stride = 0;
    band.blocks = nullptr;
    const KeyRange w = band.key_range(i_first, i_last, lq, lk);
    band_begin = w.begin;
    band_end = w.end;
    causal_end = m.causal_end(i_last, lq, lk);
    prefix = min_int(m.global_tokens, causal_end);
    // The last row at a global position sees every key below its causal limit.
    const int d = lk - lq;
    const int lo = max_int(i_first + d, 0), hi = i_last + d;  // key positions of the rows
    if (lo <= hi && m.has_global()) {
      int gp = min_int(hi, m.global_tokens - 1);
      if (m.global_stride > 0) gp = max_int(gp, hi / m.global_stride * m.global_stride);
      if (gp >= lo) prefix = max_int(prefix, m.causal_end(gp - d, lq, lk));
    }
    stride = m.global_stride;
  }

  // The first tile at or after t (>= first) that may hold a visible key; end: none.
  GPUATTN_HD int next(int t) const {
    if (t >= end) return end;
    const long long k = static_cast<long long>(t) * kBlockN;
    if (k < prefix) return t;
    int n = end;
    if (band_begin < band_end && k < band_end) {
      if (k + kBlockN > band_begin) return t;
      n = band_begin / kBlockN;
    }
    if (stride > 0) {  // the first strided key at or after k (k < lk: no 32-bit unsigned wrap)
      const unsigned g = (static_cast<unsigned>(k) + stride - 1) / stride * stride;
      if (g < static_cast<unsigned>(causal_end)) n = min_int(n, static_cast<int>(g / kBlockN));
    }
    return n;
  }
};

// Every layout block that rows [i0, i1] and keys [j0, j1] touch is on. Gives up (false) past 8
// blocks, so that small blocks cost the producer lane at most 8 reads per warpgroup and tile; the
// consumers then read their rows' layout bytes themselves.
GPUATTN_HD bool layout_all_on(const MaskPolicy& m, int i0, int i1, int j0, int j1) {
  const int r0 = i0 / m.block_q, r1 = i1 / m.block_q, c0 = j0 / m.block_k, c1 = j1 / m.block_k;
  if ((r1 - r0 + 1) * (c1 - c0 + 1) > 8) return false;
  for (int r = r0; r <= r1; ++r) {
    for (int c = c0; c <= c1; ++c) {
      if (!m.block_on(r, c)) return false;
    }
  }
  return true;
}

// The schedule word of key tile t (t < TileCandidates::end) for the CTA rows [m0, i_last] (see
// kEndOfTiles), or -1 when none of these rows sees a key of the tile. `position`: `mask` without
// its block layout.
template <int kBlockN, int kConsumers>
GPUATTN_HD int tile_word(const MaskPolicy& mask, const MaskPolicy& position, int t, int m0,
                         int i_last, int lq, int lk) {
  const int n0 = t * kBlockN;  // t < end: n0 < lk
  const int n_last = n0 > 0x7fffffff - (kBlockN - 1) ? 0x7fffffff : n0 + (kBlockN - 1);
  static_assert(kConsumers <= 2, "the word holds 2 flag bits per consumer below kWordTileShift");
  if (!mask.tile_any_visible(m0, i_last, n0, n_last, lq, lk)) return -1;
  int word = t << kWordTileShift;
  for (int cw = 0; cw < kConsumers; ++cw) {
    const int r0 = m0 + 64 * cw;
    if (r0 >= lq) continue;
    const int r1 = min_int(r0 + 63, lq - 1);
    if (!position.tile_fully_visible(r0, r1, n0, n_last, lq, lk)) word |= 1 << cw;
    if (mask.has_blocks() && !layout_all_on(mask, r0, r1, n0, min_int(n_last, lk - 1))) {
      word |= 4 << cw;
    }
  }
  return word;
}

// Bit x set: the row of `k` sees key c0 + x (x < 64) under the position mask; `gkeys`: bit x set
// for a global key c0 + x (0 without a window: then [lo, hi) holds every key below ce).
GPUATTN_HD std::uint64_t visible_bits(const RowKeys& k, int c0, std::uint64_t gkeys) {
  return (bits_below(k.hi - c0) & ~bits_below(k.lo - c0)) | (gkeys & bits_below(k.ce - c0));
}

// Bit kk set: keys [n0 + 16 kk, n0 + 16 kk + 16) of the tile at n0 lie in an off block of the
// layout row `row` (16 keys never straddle a block: block_k is a multiple of 16) or past the
// sequence end (not read: the layout ends with the sequence).
template <int kBlockN>
GPUATTN_HD std::uint32_t block_groups_off(const unsigned char* row, int n0, int lk, int block_k,
                                          std::int64_t col_stride) {
  const int c = n0 / block_k;
  const unsigned char* ptr = row + c * col_stride;
  int rem = n0 - c * block_k;  // keys of block c before key n0 + 16 kk
  std::uint32_t off = 0;
#if defined(__CUDA_ARCH__)  // (the host pass, for tests, warns on the pragma)
#pragma unroll
#endif
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
#if defined(__CUDA_ARCH__)
    const bool on = n0 + 16 * kk < lk && __ldg(ptr) != 0;
#else
    const bool on = n0 + 16 * kk < lk && *ptr != 0;
#endif
    off |= (on ? 0u : 1u) << kk;
    rem += 16;
    if (rem == block_k) {
      rem = 0;
      ptr += col_stride;
    }
  }
  return off;
}

// Clears the 16-bit groups q (bits [16 q, 16 q + 16)) of a 64-bit mask whose bit q of `off4` is
// set.
GPUATTN_HD std::uint64_t groups_kept(std::uint32_t off4) {
  std::uint64_t keep = ~0ull;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int q = 0; q < 4; ++q) {
    if ((off4 >> q) & 1) keep &= ~(0xffffull << (16 * q));
  }
  return keep;
}

// The masked kernel's search of a work item's key tiles, 32 candidates at a time, a lane each
// (see produce_masked). `position`: `mask` without its block layout.
template <class Tr>
struct TileSearch {
  MaskPolicy mask, position;
  int m0, i_last, lq, lk;
  TileCandidates<Tr::kBlockN> cand;
  __device__ TileSearch(const FwdParams& p, int h, int m0_, int lq_, int lk_)
      : mask(p.mask(h)),
        position(mask),
        m0(m0_),
        i_last(min_int(m0_ + Tr::kBlockM, lq_) - 1),
        lq(lq_),
        lk(lk_) {
    position.blocks = nullptr;
  }
  // The lane's candidate of the batch at t: its word, or -1 (none, or no visible key).
  __device__ int word_at(int t) const {
    const int mine = t + static_cast<int>(threadIdx.x & 31);
    return mine < cand.end
               ? tile_word<Tr::kBlockN, Tr::kConsumers>(mask, position, mine, m0, i_last, lq, lk)
               : -1;
  }
  // From the batch at t to the next one with a visible tile (todo == 0 on return: none is left).
  __device__ void advance(int& t, int& word, unsigned& todo) const {
    while (todo == 0 && t < cand.end) {
      t = cand.next(t + 32);
      word = word_at(t);
      todo = __ballot_sync(0xffffffffu, word >= 0);
    }
  }
};

// Producer: loads the K and V tiles of key row `row` (in the tensor maps) into the stage of the
// CTA's j-th loaded tile once the consumers have released that stage's previous use. The masked
// kernel stores the stage's schedule word `word` before the K "full" arrival (whose release
// makes it visible to the consumers that wait for that phase).
//
// Varlen: a tile that runs past its sequence's end (bar.seq_end, stored by the same thread for
// the item, see set_seq_end) takes its V through maps.v_tail, which reads the sequence's rows and
// zeros in place of the next sequence's. Masked scores give those keys P = 0, but 0 x NaN (an Inf
// or NaN in the next sequence's V) would be NaN in P V. K's rows there need nothing: their scores
// are overwritten with -inf. kVarlen false leaves the branch out (the dense kernel's copy of the
// producer loop for other calls, see fwd_kernel). The end comes from shared memory rather than an
// argument, one value fewer live through the producer's loops (32 registers at head dim 64 with 3
// consumers): with it as an argument and one copy of the loop, ptxas spilled in the masked and
// head-dim-256 kernels, and a prologue value of the D64 3-consumer kernel that its consumers
// reload; its one-wave call (B1 H16 S1024) ran 4% slower (H200, bench/results/2026-11-30-h200-s45,
// call 3; call 4: as before, within 0.5%).
template <class Tr, bool kMasked, bool kVarlen>
__device__ __forceinline__ void load_kv(const FwdParams& p, const QkvTensorMaps& maps,
                                        std::uint32_t sk0, std::uint32_t sv0, const Barriers& bar,
                                        int j, int row, int hk, int bc, int word = 0) {
  const int stage = j % Tr::kStages;
  const std::uint32_t use = j / Tr::kStages;
  SM90_TRACE_TILE(3, 0, j, 0);
  if (j >= Tr::kStages) ptx::mbarrier_wait(bar.k_empty + 8 * stage, (use & 1) ^ 1);
  SM90_TRACE_TILE(3, 0, j, 1);
  if constexpr (kMasked) st_shared_s32(bar.sched + 4 * stage, word);
  ptx::mbarrier_arrive_expect_tx(bar.k_full + 8 * stage, Tr::kKVBytes);
#pragma unroll
  for (int s = 0; s < Tr::kSlabs; ++s) {
    ptx::tma_load_4d(sk0 + stage * Tr::kKVBytes + s * Tr::kBlockN * 128, &maps.k,
                     bar.k_full + 8 * stage, s * 64, hk, row, bc);
  }
  if (j >= Tr::kStages) ptx::mbarrier_wait(bar.v_empty + 8 * stage, (use & 1) ^ 1);
  SM90_TRACE_TILE(3, 0, j, 2);
  ptx::mbarrier_arrive_expect_tx(bar.v_full + 8 * stage, Tr::kKVBytes);
  if (kVarlen && p.is_varlen()) {
    const int end = ld_shared_s32(bar.seq_end);
    if (end - row < Tr::kBlockN) {  // box at (c, hk, kBlockN - r, end): r rows, then zeros
#pragma unroll
      for (int s = 0; s < Tr::kSlabs; ++s) {
        ptx::tma_load_4d(sv0 + stage * Tr::kKVBytes + s * Tr::kBlockN * 128, &maps.v_tail,
                         bar.v_full + 8 * stage, s * 64, hk, Tr::kBlockN - (end - row), end);
      }
      SM90_TRACE_TILE(3, 0, j, 3);
      return;
    }
  }
#pragma unroll
  for (int s = 0; s < Tr::kSlabs; ++s) {
    ptx::tma_load_4d(sv0 + stage * Tr::kKVBytes + s * Tr::kBlockN * 128, &maps.v,
                     bar.v_full + 8 * stage, s * 64, hk, row, bc);
  }
  SM90_TRACE_TILE(3, 0, j, 3);
}

// Varlen: the producer thread's record of its item's key end for load_kv (sequence b, lk keys).
__device__ __forceinline__ void set_seq_end(const FwdParams& p, const Barriers& bar, int b,
                                            int lk) {
  if (p.is_varlen()) st_shared_s32(bar.seq_end, static_cast<int>(p.row0_k(b)) + lk);
}

// The masked kernel's producer for one work item: warp 0 of the producer warpgroup. Lane 0 loads
// the item's Q into buffer q_buf once the consumers are done with its previous use (the q_use-th
// use of the buffer), then the visible key tiles in key order, each with its schedule word
// (kLastTile on the item's last). The lanes find them 32 candidates at a time (tile_any_visible
// of the whole mask: exact, so no tile without a visible key is loaded; tile_fully_visible of the
// position mask per consumer warpgroup for the word). The first batch of an item comes from the
// searcher warp (warp 1, see fwd_kernel), which searched it while this warp loaded the item
// before: searched here, it held the item's first K back by ~2 us a work item (H200,
// scripts/sm90-trace.sh at 2706011: the consumers waited 0.75 us at W1024, 1.5 us at
// block-sparse 90%, for each item's first tile). Later batches are searched here, before lane 0
// loads the last visible tile of a batch, so every word is known when its tile loads: the search
// runs while the producer is ahead, not between a consumer's release of a stage and its wait for
// the next K (c8043b5 published every word one tile late, behind the V "empty" wait of the tile
// before, which cost the masked calls 6-10%). The next item's tiles load into the stages right
// behind this item's (an end-of-item stage instead kept the next item's first K from loading
// before this item's last P V was done). An item without a visible tile takes one stage use of
// the CTA's count j, with the word kEndOfTiles (released by the consumers like a tile's), and
// still loads Q (its consumers wait for it and store zeros), so nothing is in flight when the CTA
// exits.
template <class Tr>
__device__ __forceinline__ void produce_masked(
    const FwdParams& p, const QkvTensorMaps& maps, std::uint32_t sq, std::uint32_t sk0,
    std::uint32_t sv0, const Barriers& bar, int m0, int lq, int lk, int b, int h, int hk, int& j,
    int q_buf, int q_use, const TileCandidates<Tr::kBlockN>& cand, int t, int word, int trace_u) {
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN;
  const int lane = threadIdx.x & 31;
  const int bc = p.is_varlen() ? 0 : b;
  if (lane == 0) {
    if (q_use > 0) ptx::mbarrier_wait(bar.q_empty_of(q_buf), (q_use - 1) & 1);
    const int q_row = static_cast<int>(p.row0_q(b)) + m0;
    const std::uint32_t q_full = bar.q_full_of(q_buf), q_dst = sq + q_buf * Tr::kQBytes;
    ptx::mbarrier_arrive_expect_tx(q_full, Tr::kQBytes);
#pragma unroll
    for (int s = 0; s < Tr::kSlabs; ++s) {
      ptx::tma_load_4d(q_dst + s * kBlockM * 128, &maps.q, q_full, s * 64, h, q_row, bc);
    }
  }
  TileSearch<Tr> search(p, h, m0, lq, lk);
  search.cand = cand;
  const int k_row0 = static_cast<int>(p.row0_k(b));
  if (lane == 0) set_seq_end(p, bar, b, lk);
  const int j_first = j;
  // The batch at t and its visible tiles not loaded yet (none: the searcher found none at all).
  unsigned todo = __ballot_sync(0xffffffffu, word >= 0);
  SM90_TRACE(0, trace_u, 1);
  while (todo != 0) {
    const int w = __shfl_sync(0xffffffffu, word, __ffs(todo) - 1);
    todo &= todo - 1;
    if (todo == 0) search.advance(t, word, todo);  // before this tile's loads wait for a stage
    if (lane == 0) {
      load_kv<Tr, true, true>(p, maps, sk0, sv0, bar, j, k_row0 + (w >> kWordTileShift) * kBlockN,
                              hk, bc, todo != 0 ? w : w | kLastTile);
      if (j == j_first) SM90_TRACE(0, trace_u, 2);
      if (todo == 0) SM90_TRACE(0, trace_u, 3);
    }
    ++j;
  }
  if (j > j_first) return;
  if (lane == 0) {
    const int stage = j % Tr::kStages;
    if (j >= Tr::kStages) {
      const std::uint32_t parity = ((j / Tr::kStages) & 1) ^ 1;
      ptx::mbarrier_wait(bar.k_empty + 8 * stage, parity);
      ptx::mbarrier_wait(bar.v_empty + 8 * stage, parity);
    }
    st_shared_s32(bar.sched + 4 * stage, kEndOfTiles);
    ptx::mbarrier_arrive(bar.k_full + 8 * stage);
    // V full completes a phase too, though no consumer waits for it here: the consumers take the
    // parity of every stage use from its index j, markers included.
    ptx::mbarrier_arrive(bar.v_full + 8 * stage);
  }
  ++j;
}

// A listed item's on tiles among its key tiles [0, n) (see FwdParams::whole_tile_layout), by the
// producer warp, 32 tiles a ballot and four ballots a round trip of layout reads: how many, and
// the last one (-1: none). Every lane gets both.
__device__ __forceinline__ void count_listed(const LayoutTiles& tiles, int n, int& count,
                                             int& last) {
  const int lane = threadIdx.x & 31;
  count = 0;
  last = -1;
  for (int t0 = 0; t0 < n; t0 += 128) {
    bool on[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int t = t0 + 32 * i + lane;
      on[i] = t < n && tiles.on(t);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned bits = __ballot_sync(0xffffffffu, on[i]);
      count += __popc(bits);
      if (bits != 0) last = t0 + 32 * i + 31 - __clz(static_cast<int>(bits));
    }
  }
}

// Returns the stage uses the item took: its tiles (the masked kernel: 1, the kEndOfTiles stage,
// when it has none).
template <class Tr, bool kMasked>
__device__ __forceinline__ int consume(const FwdParams& p, const QkvTensorMaps& maps,
                                       std::uint32_t sq, std::uint32_t sk0, std::uint32_t sv0,
                                       const Barriers& bar, int m0, int n_tiles, int t_first,
                                       int lq, int lk, int b, int h, int cw, int j0, int q_buf,
                                       int q_phase, bool& o_in_flight, std::uint32_t& o_free,
                                       int trace_u);

template <class Tr, bool kMasked>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kCtasPerSm)
    fwd_kernel(const __grid_constant__ FwdParams p, const __grid_constant__ QkvTensorMaps maps,
               int* item_counter) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN;
  SM90_TRACE(0, kTraceCta, 10);
  if (threadIdx.x == 0) SM90_TRACE_CTA(0);

  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (ptx::smem_addr(smem_raw) + 1023u) & ~1023u;  // swizzle atoms
  const std::uint32_t sq = base;  // Q buffer b at sq + b * kQBytes
  const std::uint32_t sk0 = sq + Tr::kQBuffers * Tr::kQBytes;
  const std::uint32_t sv0 = sk0 + Tr::kStages * Tr::kKVBytes;
  const Barriers bar(sv0 + Tr::kStages * Tr::kKVBytes, Tr::kStages);
  static_assert(Barriers::bytes(Tr::kStages) <= Tr::kBarrierBytes, "barrier space");

  // The warpgroup, broadcast from lane 0 so that the compiler knows it is warp-uniform: what
  // derives from it (a consumer's rows of Q, so its wgmma descriptors) then lives in uniform
  // registers instead of being copied into them (R2UR) before every wgmma.
  const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const WorkSchedule sched(p, kBlockM, kMasked);
  // A block layout of whole tiles on the dense instantiation (see Tr::kListed): the producer warp
  // lists each item's on tiles, and the consumers run them as a dense item's, the last one's key
  // positions exact (ItemShape).
  const bool listed = !kMasked && Tr::kListed && p.whole_tile_layout(kBlockM, kBlockN);
  // The item after w (see core/work_schedule.h): static for dense non-causal calls, from the
  // counter for the others when the launch passed one, else none (a CTA per item).
  const bool static_schedule = !kMasked && !p.causal && !listed;
  // The counter hands out 0, 1, ..., items - 1: a CTA takes items until it is handed one past the
  // last (gridDim.x + v >= items), so each of the gridDim.x CTAs takes exactly one value past the
  // items and there are items values in all. The one handed items - 1 is thus the call's last use
  // of the counter, and its thread zeroes it for the next launch (sm80::LaunchCounters). A value
  // of items or more means the counter was not zero at the start (items were skipped): the kernel
  // stops with an error (a trap) rather than leave rows unwritten.
  auto next_item = [&](int w) {
    if (static_schedule) return w + static_cast<int>(gridDim.x);
    if (item_counter != nullptr) {
      const int v = atomicAdd(item_counter, 1);
      if (v >= sched.items) __trap();
      if (v == sched.items - 1) atomicExch(item_counter, 0);
      return static_cast<int>(gridDim.x) + v;
    }
    return sched.items;
  };
  // The rows, lengths and dense / causal key tiles of item w (n_tiles: every tile up to the
  // diagonal of the block's last row; 0 when the block holds no row of its sequence: varlen).
  // A sliding window without global tokens or a block layout (p.banded()) runs on the dense
  // kernel too at head dim 128 (Tr::kBanded): its tiles are the n_tiles from t_first that hold the
  // keys some row of the block sees (MaskPolicy::key_range, tight for a window), the edge ones
  // masked per element. A listed item's n_tiles are its on tiles (count_listed), and the lk the
  // consumers get is the true one less (last on tile - (n_tiles - 1)) tiles of keys: they take
  // tile j's keys from j (t_first 0) and mask only keys at or past lk (non-causal), which is
  // then exact for the last tile (the only one that can cross the sequence end) and leaves the
  // others, whole, unmasked (tests/core/test_mask.cpp, WholeTileLayout). The consumers' dense
  // loop stays as it is for the other calls.
  struct ItemShape {
    WorkItem it;
    int m0, lq, lk, n_tiles, t_first;
  };
  auto shape_of = [&](int w) {
    ItemShape x;
    // (the static schedule's rounds rotated among the CTAs: static_item, core/work_schedule.h)
    x.it =
        sched.item(static_schedule ? static_item(w, static_cast<int>(gridDim.x), sched.items) : w);
    x.lq = p.len_q(x.it.b);
    x.lk = p.len_k(x.it.b);
    x.m0 = x.it.m_block * kBlockM;
    int n_end = x.lk;
    if (p.causal) n_end = max(0, min(x.lk, x.m0 + kBlockM + x.lk - x.lq));
    x.n_tiles = x.m0 < x.lq ? (n_end + kBlockN - 1) / kBlockN : 0;
    x.t_first = 0;
    if (!kMasked && Tr::kBanded && p.banded() && x.m0 < x.lq) {
      const BandTiles t = band_tiles(p, x.m0, kBlockM, kBlockN, x.lq, x.lk);
      x.t_first = t.t_first;
      x.n_tiles = t.n_tiles;
    }
    return x;
  };
  // Item x's Q into buffer qb (the producer thread; the buffer is free).
  auto load_q = [&](int qb, const ItemShape& x) {
    const int q_row = static_cast<int>(p.row0_q(x.it.b)) + x.m0;
    const int bc = (Tr::kTakesVarlen && p.is_varlen()) ? 0 : x.it.b;
    const std::uint32_t q_full = bar.q_full_of(qb), q_dst = sq + qb * Tr::kQBytes;
    ptx::mbarrier_arrive_expect_tx(q_full, Tr::kQBytes);
#pragma unroll
    for (int s = 0; s < Tr::kSlabs; ++s) {
      ptx::tma_load_4d(q_dst + s * kBlockM * 128, &maps.q, q_full, s * 64, x.it.h, q_row, bc);
    }
  };

  // The dense kernel's producer thread (thread 0; not with a block layout, whose producer is a
  // warp) loads the CTA's first item's Q and first K/V tile right after the barrier setup, before
  // __syncthreads and its own setup. H200, diagnostic builds that only load (B1 H16 S1024 D64,
  // bench/results/2026-11-22-h200-d64-free, call 7): the first Q landed 0.7 us sooner (6.5 against
  // 7.2 us a call; an empty launch takes 3.5, the prologue 0.7, and a first load ~2.3 after a
  // flushed L2, against 18.8 us for the whole call). The producer loop skips those two loads.
  bool early = false;
  if (tid == 0) {
#pragma unroll
    for (int b = 0; b < Tr::kQBuffers; ++b) {
      ptx::mbarrier_init(bar.q_full_of(b), 1);
      ptx::mbarrier_init(bar.q_empty_of(b), Tr::kConsumers * 128);
    }
#pragma unroll
    for (int s = 0; s < Tr::kStages; ++s) {
      ptx::mbarrier_init(bar.k_full + 8 * s, 1);
      ptx::mbarrier_init(bar.v_full + 8 * s, 1);
      ptx::mbarrier_init(bar.k_empty + 8 * s, Tr::kConsumers * 128);
      ptx::mbarrier_init(bar.v_empty + 8 * s, Tr::kConsumers * 128);
    }
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      ptx::mbarrier_init(bar.item_full + 8 * s, 1);
      ptx::mbarrier_init(bar.item_empty + 8 * s, Tr::kConsumers * 128);
    }
    ptx::mbarrier_init(bar.look_full, 32);   // the searcher warp's lanes
    ptx::mbarrier_init(bar.look_empty, 32);  // producer warp 0's lanes
    ptx::fence_mbarrier_init();
    if (!kMasked && !listed && static_cast<int>(blockIdx.x) < sched.items) {
      const ItemShape x = shape_of(static_cast<int>(blockIdx.x));
      // Not a tile that ends past its varlen sequence: the early load has no tail map branch
      // (kVarlen false keeps the prologue's code as it was); the loop loads that tile.
      if (x.n_tiles > 0 &&
          (!(Tr::kTakesVarlen && p.is_varlen()) || (x.t_first + 1) * kBlockN <= x.lk)) {
        early = true;
        load_q(0, x);
        load_kv<Tr, false, false>(
            p, maps, sk0, sv0, bar, 0, static_cast<int>(p.row0_k(x.it.b)) + x.t_first * kBlockN,
            p.kv_head(x.it.h), (Tr::kTakesVarlen && p.is_varlen()) ? 0 : x.it.b);
      }
    }
  }
  __syncthreads();
  SM90_TRACE(0, kTraceCta, 11);

  if (wg == 0) {
    ptx::setmaxnreg_dec<kMasked ? Tr::kMaskedProducerRegs : Tr::kProducerRegs>();
    // The producer: one thread (the masked kernel: warp 0, whose lanes search tiles together, and
    // the searcher warp 1 below). Lane 0 passes each item to the consumers through the 2-slot
    // item ring (item_count: the sched.items that ends it) before loading it, and fetches the
    // next one meanwhile (the masked kernel: the searcher does, one item ahead). The j-th
    // K/V stage use of the CTA (over all its items) is stage j % kStages's (j / kStages)-th; the
    // i-th Q goes to buffer i % kQBuffers once the consumers are done with the Q that buffer held
    // before.
    if (kMasked || listed ? tid < 32 : tid == 0) {
      // Two copies of the loop in the dense kernel, one for varlen calls (the V tail map, see
      // load_kv) and one for the others, so that the dense calls' producer is the code it was
      // before varlen's tiles took their sequence ends into account: in one copy, their branch
      // made ptxas spill a value of the prologue that the consumers reload (B1 H16 S1024 D64:
      // 4% slower, H200, s45 call 3). The masked kernel keeps one copy (load_kv tests
      // is_varlen per tile): two spilled ~110 more instructions' worth there.
      auto produce = [&](auto varlen) {
        constexpr bool kVarlen = decltype(varlen)::value;
        [[maybe_unused]] const int lane = tid & 31;  // the masked and listed producers' warp
        int j = 0, q_loads = 0;
        for (int w = static_cast<int>(blockIdx.x), u = 0;; ++u) {
          int next = 0;
          // The masked kernel: item u and its first batch of tiles from the searcher's record (read
          // whole before the record is handed back).
          TileCandidates<kBlockN> cand;
          [[maybe_unused]] int first_t = 0, first_word = -1;
          if constexpr (kMasked) {
            ptx::mbarrier_wait(bar.look_full, u & 1);
            w = ld_shared_s32(bar.lookahead);
            first_t = ld_shared_s32(bar.lookahead + 4);
            cand.first = ld_shared_s32(bar.lookahead + 8);
            cand.end = ld_shared_s32(bar.lookahead + 12);
            cand.prefix = ld_shared_s32(bar.lookahead + 16);
            cand.band_begin = ld_shared_s32(bar.lookahead + 20);
            cand.band_end = ld_shared_s32(bar.lookahead + 24);
            cand.causal_end = ld_shared_s32(bar.lookahead + 28);
            cand.stride = ld_shared_s32(bar.lookahead + 32);
            first_word = ld_shared_s32(bar.lookahead + 36 + 4 * (tid & 31));
            if (w < sched.items) ptx::mbarrier_arrive(bar.look_empty);
          }
          ItemShape x{};
          if (w < sched.items) x = shape_of(w);
          // Lane 0 alone: it reads the end in load_kv (with the listed producer's 32 lanes all
          // writing it, racecheck saw the next item's write race this item's read, s46 call 3).
          if (kVarlen && !kMasked && lane == 0 && w < sched.items) {
            if constexpr (Tr::kTakesVarlen) set_seq_end(p, bar, x.it.b, x.lk);
          }
          int listed_last = -1;  // a listed item's last on tile
          if (listed && x.n_tiles > 0) {
            int count = 0;
            count_listed(LayoutTiles(p, x.it.h, x.m0, kBlockN), x.n_tiles, count, listed_last);
            x.n_tiles = count;
            if (count > 0) x.lk -= (listed_last - (count - 1)) * kBlockN;  // for the consumers
          }
          if (tid == 0) {
            const int slot = u & 1;
            if (u >= 2) ptx::mbarrier_wait(bar.item_empty + 8 * slot, ((u >> 1) & 1) ^ 1);
            const std::uint32_t a = bar.item_slot + 4 * kItemInts * slot;
            st_shared_s32(a, w);
            st_shared_s32(a + 4, x.m0);
            st_shared_s32(a + 8, x.lq);
            st_shared_s32(a + 12, x.lk);
            st_shared_s32(a + 16, x.n_tiles);
            st_shared_s32(a + 20, x.it.b);
            st_shared_s32(a + 24, x.it.h);
            st_shared_s32(a + 28, x.t_first);
            ptx::mbarrier_arrive(bar.item_full + 8 * slot);
            if (!kMasked && w < sched.items) next = next_item(w);
          }
          if (w >= sched.items) break;
          SM90_TRACE(0, u, 0);
          const int qb = q_loads % Tr::kQBuffers, q_use = q_loads / Tr::kQBuffers;
          const int hk = p.kv_head(x.it.h);
          if constexpr (kMasked) {
            if (x.m0 < x.lq) {
              produce_masked<Tr>(p, maps, sq, sk0, sv0, bar, x.m0, x.lq, x.lk, x.it.b, x.it.h, hk,
                                 j, qb, q_use, cand, first_t, first_word, u);
              ++q_loads;
            }
          } else {
            if (x.n_tiles > 0) {  // without a key tile the consumers write zeros without Q
              const int k_row0 = static_cast<int>(p.row0_k(x.it.b));
              const int bc = (Tr::kTakesVarlen && p.is_varlen()) ? 0 : x.it.b;
              ++q_loads;
              if (lane == 0) {
                if (q_use > 0) ptx::mbarrier_wait(bar.q_empty_of(qb), (q_use - 1) & 1);
                if (u > 0 || !early) load_q(qb, x);
              }
              if (listed) {  // the on tiles, 32 a ballot (lane 0 loads, the others read ahead)
                const LayoutTiles tiles(p, x.it.h, x.m0, kBlockN);
                for (int t0 = 0; t0 <= listed_last; t0 += 32) {
                  unsigned bits =
                      __ballot_sync(0xffffffffu, t0 + lane <= listed_last && tiles.on(t0 + lane));
                  while (bits != 0) {
                    const int t = t0 + __ffs(static_cast<int>(bits)) - 1;
                    bits &= bits - 1;
                    if (lane == 0)
                      load_kv<Tr, false, kVarlen>(p, maps, sk0, sv0, bar, j, k_row0 + t * kBlockN,
                                                  hk, bc);
                    ++j;
                  }
                }
              } else {
                for (int t = 0; t < x.n_tiles; ++t, ++j) {
                  if (j > 0 || !early) {
                    load_kv<Tr, false, kVarlen>(p, maps, sk0, sv0, bar, j,
                                                k_row0 + (x.t_first + t) * kBlockN, hk, bc);
                  }
                  if (t == 0) SM90_TRACE(0, u, 2);
                }
              }
              SM90_TRACE(0, u, 3);
            }
            if (listed) next = __shfl_sync(0xffffffffu, next, 0);
            w = next;
          }
        }
      };
      if (kMasked || (Tr::kTakesVarlen && p.is_varlen())) {
        produce(std::true_type{});
      } else {
        produce(std::false_type{});
      }
    } else if constexpr (kMasked) {
      if (tid < 64) {
        // The searcher (warp 1): takes each next item when warp 0 starts loading the item before
        // (as warp 0 took it before the searcher existed) and searches its first batch of key tiles
        // meanwhile (see produce_masked); one record, handed over through the mbarriers look_full
        // and look_empty (named barriers, bar.arrive / bar.sync, passed every test but racecheck
        // reported hazards). The record of the end (w >= items) is the last.
        const int lane = tid & 31;
        for (int w = static_cast<int>(blockIdx.x), u = 0;; ++u) {
          if (u > 0) {
            ptx::mbarrier_wait(bar.look_empty, (u - 1) & 1);  // warp 0 read record u - 1
            int next = 0;
            if (lane == 0) next = next_item(w);
            w = __shfl_sync(0xffffffffu, next, 0);
          }
          TileCandidates<kBlockN> cand;
          int t = 0, word = -1;
          if (w < sched.items) {
            const ItemShape x = shape_of(w);
            if (x.m0 < x.lq) {
              TileSearch<Tr> search(p, x.it.h, x.m0, x.lq, x.lk);
              search.cand =
                  TileCandidates<kBlockN>(search.position, x.m0, search.i_last, x.lq, x.lk);
              cand = search.cand;
              t = cand.first - 32;
              unsigned todo = 0;
              search.advance(t, word, todo);
            }
          }
          if (lane == 0) {
            st_shared_s32(bar.lookahead, w);
            st_shared_s32(bar.lookahead + 4, t);
            st_shared_s32(bar.lookahead + 8, cand.first);
            st_shared_s32(bar.lookahead + 12, cand.end);
            st_shared_s32(bar.lookahead + 16, cand.prefix);
            st_shared_s32(bar.lookahead + 20, cand.band_begin);
            st_shared_s32(bar.lookahead + 24, cand.band_end);
            st_shared_s32(bar.lookahead + 28, cand.causal_end);
            st_shared_s32(bar.lookahead + 32, cand.stride);
          }
          st_shared_s32(bar.lookahead + 36 + 4 * lane, word);
          ptx::mbarrier_arrive(bar.look_full);
          if (w >= sched.items) break;
        }
      }
    }
  } else {
    ptx::setmaxnreg_inc<kMasked ? Tr::kMaskedConsumerRegs : Tr::kConsumerRegs>();
    const int cw = wg - 1;
    SM90_TRACE_WHERE(cw);
    // Ping-pong (see consume()): the last consumer opens with a spare "go" for consumer 0, and
    // consumer 0 takes the last consumer's last "go" at the end, once per CTA, so every phase of
    // every turn barrier completes before the CTA exits. Per work item instead, the last
    // consumer's opening "go" of the next item could land in the same phase as its last "go" of
    // this one before consumer 0 took that, and the CTA would hang.
    if (Tr::kPingPong && cw == Tr::kConsumers - 1) ptx::named_barrier_arrive(1, 2 * 128);
    // The exponentials' turns (Tr::kExpTurns) open and close the same way.
    constexpr bool kExpTurns = Tr::kExpTurns && !kMasked;
    if (kExpTurns && cw == 1) ptx::named_barrier_arrive(Tr::kExpBarrier, 2 * 128);
    int j0 = 0, q_uses = 0;
    // This thread's TMA store of O may still read its smem; o_free is the mbarrier that gives
    // that smem back to the producer once it has (see consume()).
    bool o_in_flight = false;
    std::uint32_t o_free = 0;
    for (int u = 0;; ++u) {
      const int slot = u & 1;
      SM90_TRACE(1 + cw, u, 15);
      ptx::mbarrier_wait(bar.item_full + 8 * slot, (u >> 1) & 1);
      // The item and its shape as the producer worked it out (shape_of's divisions stay off the
      // consumers, whose exp2 shares the MUFU pipe with a division's reciprocal).
      const std::uint32_t a = bar.item_slot + 4 * kItemInts * slot;
      const int w = ld_shared_s32(a);
      ItemShape x;
      x.m0 = ld_shared_s32(a + 4);
      x.lq = ld_shared_s32(a + 8);
      x.lk = ld_shared_s32(a + 12);
      x.n_tiles = ld_shared_s32(a + 16);
      x.it.b = ld_shared_s32(a + 20);
      x.it.h = ld_shared_s32(a + 24);
      x.t_first = ld_shared_s32(a + 28);
      ptx::mbarrier_arrive(bar.item_empty + 8 * slot);
      if (w >= sched.items) break;
      SM90_TRACE(1 + cw, u, 0);
      if (x.m0 >= x.lq) continue;  // varlen: a shorter sequence (uniform over the CTA)
      const int qb = q_uses % Tr::kQBuffers;
      j0 += consume<Tr, kMasked>(p, maps, sq + qb * Tr::kQBytes, sk0, sv0, bar, x.m0, x.n_tiles,
                                 x.t_first, x.lq, x.lk, x.it.b, x.it.h, cw, j0, qb,
                                 (q_uses / Tr::kQBuffers) & 1, o_in_flight, o_free, u);
      SM90_TRACE(1 + cw, u, 9);
      if (kMasked || x.n_tiles > 0) ++q_uses;
    }
    if (Tr::kPingPong && cw == 0) ptx::named_barrier_sync(1, 2 * 128);
    if (kExpTurns && cw == 0) ptx::named_barrier_sync(Tr::kExpBarrier, 2 * 128);
    ptx::bulk_wait_group<0>();  // this thread's O stores are written before the CTA ends
    SM90_TRACE(0, kTraceCta, 12 + cw);
    if ((tid & 127) == 0) SM90_TRACE_CTA(1 + cw);
  }
#endif
}

// The consumer warpgroup `cw`: rows [64 cw, 64 cw + 64) of the block. The dense kernel's key
// tiles are t_first, t_first + 1, ... (t_first > 0: a sliding window, see ItemShape).
template <class Tr, bool kMasked>
__device__ __forceinline__ int consume(const FwdParams& p, const QkvTensorMaps& maps,
                                       std::uint32_t sq, std::uint32_t sk0, std::uint32_t sv0,
                                       const Barriers& bar, int m0, int n_tiles, int t_first,
                                       int lq, int lk, int b, int h, int cw, int j0, int q_buf,
                                       int q_phase, bool& o_in_flight, std::uint32_t& o_free,
                                       int trace_u) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Tr::T;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, D = Tr::kHeadDim;
  constexpr int kNS = kBlockN / 8, kNO = D / 8;  // n8 column groups of S and O
  static_assert(!kMasked || kBlockN % 64 == 0,
                "the masked kernel builds its key masks 64 keys at a time (mask_tile)");
  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = (tid >> 5) & 3;
  const int g = lane >> 2, t4 = lane & 3;

  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  // Compensated precision: the Kahan terms of O and of the row sums.
  float oc[Tr::kCompensated ? D / 2 : 1];
  float sum_c[2] = {0.f, 0.f};
  if constexpr (Tr::kCompensated) {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) oc[i] = 0.f;
  }

  const int row_base = cw * 64 + warp * 16 + g;  // this thread's first row inside the block
  const int diag = lk - lq;
  // A window on the dense kernel (see ItemShape): every row of this warpgroup sees every key of
  // [band_lo, band_hi) (a row's first and end key grow with the row: the last row's first key,
  // the first row's end), so only tiles that leave it are masked per element.
  const bool banded = !kMasked && Tr::kBanded && p.banded();
  int band_lo = 0, band_hi = lk;
  if (banded) {
    const KeyRange band = common_keys(p, m0 + cw * 64, min(m0 + cw * 64 + 63, lq - 1), lq, lk);
    band_lo = band.begin;
    band_hi = band.end;
  }
  const std::uint32_t q_wg = sq + cw * 64 * 128;  // this warpgroup's 64 rows of Q
  // The wgmma descriptors of Q (K-major), of stage 0's K (K-major) and V (MN-major), each step of
  // a GEMM one desc_advance from them.
  const std::uint64_t q_desc = ptx::smem_desc_sw128(q_wg, 16, 1024);
  const std::uint64_t k_desc = ptx::smem_desc_sw128(sk0, 16, 1024);
  const std::uint64_t v_desc = ptx::smem_desc_sw128(sv0, kBlockN * 128, 1024);

  // Q's A fragments (Tr::kQInRegs; the dense kernel only): k-step ks's 64 x 16 block as wgmma's
  // register A operand, the mma.sync m16n8k16 A fragment of each warp's 16 rows. ldmatrix x4 of
  // matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15); lane
  // l addresses row l % 8 of matrix l / 8 in the 128-byte swizzle TMA wrote.
  constexpr bool kQRegs = !kMasked && Tr::kQInRegs;
  // With one Q buffer (head dim 256) the dense kernel hands it back as soon as the item's last S
  // GEMM is done, so the next item's Q loads under this item's last tile and epilogue (staging O
  // through the Q buffer made the next Q load wait for the TMA store to read it: ~2.2 us an item
  // at causal S512, H200 trace, 2026-11-22-h200-short-items call 2). O goes through the last
  // tile's stage instead: warpgroup 0's 64 rows into its K (free once both warpgroups' last S
  // GEMMs are done: named barrier kStageBarrier), warpgroup 1's into its V (free once warpgroup
  // 0's last P V is done: kStageBarrier + 1); each stage half goes back to the producer once the
  // TMA store has read it (the first thread of the warpgroup holds back its arrival on that
  // half's empty barrier until then). From the registers instead, the epilogue took ~2.7 us an
  // item (call 3). H200, same-run A/B against the Q-buffer staging (call 5, 2 rounds): D256 S512
  // and S1024 0.95-0.97x the time, causal too; S2048-S8192 0.98-1.00x; the next Q's wait at an
  // item's start 1.8 -> 0.3 us.
  constexpr bool kEarlyQ = !kMasked && !Tr::kCompensated && Tr::kQBuffers == 1;
  static_assert(!kEarlyQ || (Tr::kConsumers == 2 && Tr::kKVBytes >= 64 * D * 2),
                "a warpgroup's 64 rows of O fit one stage half");
  // The first thread of each warpgroup keeps its arrival on the last tile's stage half that its
  // O goes through (K for warpgroup 0, V for warpgroup 1) until the TMA store has read it.
  const bool holds_half = kEarlyQ && (tid & 127) == 0;
  constexpr int kStageBarrier = 2 + 2 * Tr::kConsumers;  // after the turn and epilogue barriers
  std::uint32_t qa[kQRegs ? D / 16 : 1][4];
  auto load_q_regs = [&] {
    if constexpr (kQRegs) {
      const int mi = lane >> 3;
      const int rs = warp * 16 + 8 * (mi & 1) + (lane & 7);  // the row inside the warpgroup's 64
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        // this lane's 16-byte chunk: chunk nn % 8 of slab nn / 8
        const int nn = 2 * ks + (mi >> 1);
        ptx::ldmatrix_x4(
            qa[ks], q_wg + (nn >> 3) * (kBlockM * 128) + rs * 128 + (((nn & 7) ^ (rs & 7)) << 4));
      }
    }
  };
  // S = Q K^T of tile t: D / 16 k-steps, each 32 bytes into a 128-byte slab row.
  // half (Tr::kHalfLast; a constant at each inlined call): the tile's first 64 keys only, into
  // s_half, which step copies into the first half of S once the GEMM is done (the rest of S keeps
  // what it held and is never read). Into S's own first half, ptxas serialized the wgmmas of the
  // D64 kernels (C7511, insufficient registers for the wgmma pipeline).
  float s_half[Tr::kHalfLast ? kBlockN / 4 : 1];
  auto issue_qk = [&](float(&s)[kBlockN / 2], int t, bool half) {
    const int stage = (j0 + t) % Tr::kStages;
    ptx::mbarrier_wait(bar.k_full + 8 * stage, ((j0 + t) / Tr::kStages) & 1);
    if (t > 0) SM90_TRACE_TILE(cw, trace_u, t - 1, 6);
    const std::uint32_t sk = stage * Tr::kKVBytes;  // from stage 0's K
    ptx::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      const std::uint32_t koff = (ks & 3) * 32;
      const std::uint64_t b_desc = ptx::desc_advance(k_desc, sk + (ks >> 2) * kBlockN * 128 + koff);
      if constexpr (Tr::kHalfLast) {
        if (half) {
          float(&sh)[kBlockN / 4] = s_half;
          if constexpr (kQRegs) {
            ptx::wgmma_rs_kmajor<T, kBlockN / 2>(sh, qa[ks], b_desc, ks > 0 ? 1 : 0);
          } else {
            const std::uint64_t a_desc =
                ptx::desc_advance(q_desc, (ks >> 2) * kBlockM * 128 + koff);
            ptx::wgmma_ss<T, kBlockN / 2>(sh, a_desc, b_desc, ks > 0 ? 1 : 0);
          }
          continue;
        }
      }
      if constexpr (kQRegs) {
        ptx::wgmma_rs_kmajor<T, kBlockN>(s, qa[ks], b_desc, ks > 0 ? 1 : 0);
      } else {
        const std::uint64_t a_desc = ptx::desc_advance(q_desc, (ks >> 2) * kBlockM * 128 + koff);
        ptx::wgmma_ss<T, kBlockN>(s, a_desc, b_desc, ks > 0 ? 1 : 0);
      }
    }
    ptx::wgmma_commit();
    if (t > 0) SM90_TRACE_TILE(cw, trace_u, t - 1, 7);
  };
  // O += P V of tile t (P in `pa`): kBlockN / 16 k-steps of 16 keys = 2048 bytes of V each.
  // half: the tile's first 64 keys (kBlockN / 32 k-steps).
  auto issue_pv = [&](std::uint32_t(&pa)[kBlockN / 16][4], int t, bool half) {
    const int stage = (j0 + t) % Tr::kStages;
    ptx::mbarrier_wait(bar.v_full + 8 * stage, ((j0 + t) / Tr::kStages) & 1);
    SM90_TRACE_TILE(cw, trace_u, t, 8);
    const std::uint32_t sv = stage * Tr::kKVBytes;  // from stage 0's V
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      if (Tr::kHalfLast && half && kk >= kBlockN / 32) break;
      const std::uint64_t b_desc = ptx::desc_advance(v_desc, sv + kk * 2048);
      ptx::wgmma_rs<T, D>(o, pa[kk], b_desc, 1);
    }
    ptx::wgmma_commit();
  };
  // Compensated: acc = P V of tile t for O's columns [64 c, 64 c + 64) (V's slab c), into a fresh
  // accumulator (scale_d = 0 on the first k-step replaces whatever acc held).
  auto issue_pv_slab = [&](float(&acc)[32], std::uint32_t(&pa)[kBlockN / 16][4], int t, int c) {
    const int stage = (j0 + t) % Tr::kStages;
    if (c == 0) ptx::mbarrier_wait(bar.v_full + 8 * stage, ((j0 + t) / Tr::kStages) & 1);
    const std::uint32_t sv = stage * Tr::kKVBytes + c * kBlockN * 128;  // from stage 0's V
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const std::uint64_t b_desc = ptx::desc_advance(v_desc, sv + kk * 2048);
      ptx::wgmma_rs<T, 64>(acc, pa[kk], b_desc, kk > 0 ? 1 : 0);
    }
    ptx::wgmma_commit();
  };

  // ---- the masked kernel's per-tile decisions (unused by the dense / causal kernel) ----
  // The schedule word of the CTA's t-th loaded tile (waits until the stage is full).
  auto read_word = [&](int t) {
    const int stage = (j0 + t) % Tr::kStages;
    ptx::mbarrier_wait(bar.k_full + 8 * stage, ((j0 + t) / Tr::kStages) & 1);
    return ld_shared_s32(bar.sched + 4 * stage);
  };
  // This warp's 16 rows lie in one row block of the layout (block_q is a multiple of 16); nullptr
  // without a layout, and for a warp whose rows all lie past the sequence end (never stored).
  const unsigned char* block_row = nullptr;
  if constexpr (kMasked) {
    const int warp_row = m0 + cw * 64 + warp * 16;
    if (p.block_layout != nullptr && warp_row < lq) {
      block_row = p.block_layout + h * p.block_head_stride +
                  static_cast<std::int64_t>(warp_row / p.block_q) * p.block_row_stride;
    }
  }
  // Bit kk set: keys [n0 + 16 kk, n0 + 16 kk + 16) of the tile of `word` are hidden from this
  // warp's rows by the block layout (16 keys never straddle a block: block_k is a multiple of 16)
  // or lie past the sequence end. Issued before the wgmma wait, so the reads overlap the GEMMs.
  // None when the producer found every layout block of the tile on for this warpgroup's rows
  // (keys past the sequence end are then the position mask's: such a tile is flagged for it).
  auto blocks_off = [&](int word) {
    return block_row != nullptr && ((word >> (2 + cw)) & 1)
               ? block_groups_off<kBlockN>(block_row, (word >> kWordTileShift) * kBlockN, lk,
                                           p.block_k, p.block_col_stride)
               : 0u;
  };
  // Masks S of the tile of `word` per element: the position mask when the producer flagged the tile
  // for this warpgroup, ANDed with the layout's 16-key groups `off`; only those groups when the
  // position mask hides nothing.
  auto mask_tile = [&](float(&s)[kBlockN / 2], int word, std::uint32_t off) {
    if ((word >> cw) & 1) {
      const int n0 = (word >> kWordTileShift) * kBlockN;
      const bool window = p.window_left >= 0 || p.window_right >= 0;
      const bool global = p.global_tokens > 0 || p.global_stride > 0;
      const RowKeys keys[2] = {row_keys(p, m0 + row_base + diag, lk),
                               row_keys(p, m0 + row_base + 8 + diag, lk)};
#pragma unroll
      for (int hh = 0; hh < kBlockN / 64; ++hh) {  // keys [n0 + 64 hh, n0 + 64 hh + 64)
        // This thread's first key there; bit x of the masks below: key c0 + x.
        const int c0 = n0 + 64 * hh + 2 * t4;
        const std::uint64_t gkeys =
            window && global ? global_key_bits(p, n0 + 64 * hh) >> (2 * t4) : 0ull;
        const std::uint64_t keep = groups_kept(off >> (4 * hh));
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const std::uint64_t visible = visible_bits(keys[r], c0, gkeys) & keep;
#pragma unroll
          for (int n = 0; n < 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (((visible >> (8 * n + e)) & 1) == 0) s[4 * (8 * hh + n) + 2 * r + e] = -INFINITY;
        }
      }
    } else if (off != 0) {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        if ((off >> kk) & 1) {
#pragma unroll
          for (int i = 0; i < 8; ++i) s[8 * kk + i] = -INFINITY;
        }
      }
    }
  };

  // The exponentials' turn (Tr::kExpTurns, the dense kernel): consumer cw waits for it before a
  // tile's exponentials and hands it to the next consumer after its row sums.
  constexpr bool kExpTurns = Tr::kExpTurns && !kMasked;
  auto my_exp_turn = [&] {
    if constexpr (kExpTurns) ptx::named_barrier_sync(Tr::kExpBarrier + cw, 2 * 128);
  };
  auto their_exp_turn = [&] {
    if constexpr (kExpTurns) ptx::named_barrier_arrive(Tr::kExpBarrier + 1 - cw, 2 * 128);
  };
  // Masks and softmaxes S of tile j in place (S becomes P), updates the row statistics and returns
  // whether O needs the rescale by `alpha`. A row with no visible key so far keeps max -inf and
  // sum 0 (its exponentials are taken against 0, never -inf - -inf). Standard precision keeps a
  // stale max until the true one exceeds it by kRescaleSlack; compensated precision rescales on
  // every increase (P <= 1) and Kahan-sums the row sum across tiles.
  // `whole` (a tile every row of the warpgroup sees whole, see the dense loop below; a constant at
  // each inlined call) leaves the mask code out.
  // `half` (the dense kernel's last tile, see kHalfLast; a constant too): only S's first 64 keys
  // hold the tile, and the mask, the max, the exponentials and the sums take those alone.
  auto softmax = [&](float(&s)[kBlockN / 2], int j, float(&alpha)[2], int word, std::uint32_t off,
                     bool whole, bool half) {
    const bool half64 = Tr::kHalfLast && half;
    // Soft-capping (AttentionArgs::softcap): each score becomes tanh(q.k * scale / softcap), which
    // scale_log2 = softcap * log2(e) then carries into the exp2 domain; before the mask, so that a
    // masked score stays -inf. A branch uniform over the call: other calls skip it.
    if (p.has_softcap()) {
      // Head dim 64's softmax is MUFU-bound: the reciprocal goes to the FMA pipe (ptx.cuh). The
      // fast tanh only: calls capped above FwdParams::kFastTanhMaxCap run the sm_80 kernel
      // (launch_kernel refuses them here). A second, exact copy of this unrolled loop (s65,
      // ffe3724) cost every call, capped or not: the 3-consumer head-dim-64 kernel kept its row
      // sums in local memory (ptxas, nvcc 13.0: 0 -> 616 bytes of spill stores), and H200 A/B
      // against this loop alone (2026-12-03-h200-s69, call 2, 3 rounds a b1 b2 b2 b1 a): fp16
      // B4 H32 S4096 D64 1.024x the time, causal B2 S8192 1.034x, B1 H16 S1024 1.014x, causal
      // B32 S512 (the 4-stage kernel, no spill) 1.055x. One loop with both forms and a uniform
      // threshold select instead: uncapped 1.00-1.02x, but capped at 50 1.46x.
      constexpr bool kFma = Tr::kHeadDim == 64;
      const float k = ptx::tanh_log2_factor(p.softcap_pre);
#pragma unroll
      for (int i = 0; i < kBlockN / 2; ++i)
        if (!(half64 && i / 4 >= kNS / 2)) s[i] = ptx::tanh_of_log2<kFma>(s[i] * k);
    }
    // ALiBi (AttentionArgs::alibi_slopes; dense and causal calls, and at head dim 128 sliding
    // windows alone (Tr::kBanded): the dispatch keeps the others on sm_80, so tile j holds keys
    // [(t_first + j) kBlockN, (t_first + j + 1) kBlockN)): -slope x |row position - key| on each
    // score in the raw units scale_log2 multiplies later, after the soft-cap and before the mask.
    // A branch uniform over the call, the slope read in it (no register held across the loop for
    // the calls without).
    if constexpr (!kMasked && Tr::kAlibi) {
      if (p.has_alibi()) {
        const float slope = p.alibi_slope(b, h) * p.alibi_raw;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          // The row's key position less this thread's first key of the tile (exact below 2^24).
          const float d0 =
              static_cast<float>(m0 + row_base + 8 * r + diag - ((t_first + j) * kBlockN + 2 * t4));
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              if (half64 && n >= kNS / 2) continue;
              float& x = s[4 * n + 2 * r + e];
              x = fmaf(-slope, fabsf(d0 - static_cast<float>(8 * n + e)), x);
            }
        }
      }
    }
    if (whole) {
    } else if constexpr (kMasked) {
      mask_tile(s, word, off);
    } else if (banded) {
      // A window: only the tiles that cross an edge of this warpgroup's rows' key ranges.
      const int n0 = (t_first + j) * kBlockN;
      if (n0 < band_lo || n0 + kBlockN > band_hi) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const RowKeys keys = row_keys(p, m0 + row_base + 8 * r + diag, lk);
          const int lo = keys.lo - (n0 + 2 * t4), hi = keys.hi - (n0 + 2 * t4);
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (n * 8 + e < lo || n * 8 + e >= hi) s[4 * n + 2 * r + e] = -INFINITY;
        }
      }
    } else {
      const int n0 = j * kBlockN;  // (a listed item's lk is shifted instead, see ItemShape)
      // Per warpgroup: its first row's diagonal (with 3 consumers a 192-row item spans 1.5 key
      // tiles of diagonal; the per-block test masked every warpgroup on all of them).
      const bool need_mask =
          (n0 + kBlockN > lk) || (p.causal && n0 + kBlockN - 1 > m0 + cw * 64 + diag);
      if (need_mask) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = m0 + row_base + 8 * r;
          const int limit = (p.causal ? min(lk, row + diag + 1) : lk) - (n0 + 2 * t4);
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (!(half64 && n >= kNS / 2) && n * 8 + e >= limit) s[4 * n + 2 * r + e] = -INFINITY;
        }
      }
    }
    bool any_rescale = false;
    if constexpr (kExpTurns) {
      // Both rows' max first, then both rows' exponentials and sums in the turn. The loop below
      // does the same per row, each row's exponentials right after its max (ptxas overlaps row
      // 0's with row 1's max). It stays as it was, not shared with this one through a helper:
      // that rescheduled the other instantiations' SASS (45fda7a), which then needed A/Bs of
      // their own.
      float m_use[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < kNS; ++n)
          if (!(half64 && n >= kNS / 2))
            mx = fmaxf(mx, fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]));
        mx = quad_max(mx) * p.scale_log2;
        const bool grow = mx > row_max[r] + kRescaleSlack;
        const float m_new = grow ? mx : row_max[r];
        m_use[r] = m_new == -INFINITY ? 0.f : m_new;
        alpha[r] = ptx::fast_exp2(row_max[r] - m_use[r]);
        any_rescale |= grow;
        row_max[r] = m_new;
      }
      my_exp_turn();
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < kNS; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (half64 && n >= kNS / 2) continue;
            float& x = s[4 * n + 2 * r + e];
            x = ptx::fast_exp2(fmaf(x, p.scale_log2, -m_use[r]));
            sum += x;
          }
        row_sum[r] = row_sum[r] * alpha[r] + sum;
      }
      their_exp_turn();
    } else {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < kNS; ++n)
          if (!(half64 && n >= kNS / 2))
            mx = fmaxf(mx, fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]));
        mx = quad_max(mx) * p.scale_log2;
        const bool grow = Tr::kCompensated ? mx > row_max[r] : mx > row_max[r] + kRescaleSlack;
        const float m_new = grow ? mx : row_max[r];
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        alpha[r] = ptx::fast_exp2(row_max[r] - m_use);
        any_rescale |= grow;
        row_max[r] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < kNS; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (half64 && n >= kNS / 2) continue;
            float& x = s[4 * n + 2 * r + e];
            x = ptx::fast_exp2(fmaf(x, p.scale_log2, -m_use));
            sum += x;
          }
        if constexpr (Tr::kCompensated) {
          row_sum[r] *= alpha[r];
          sum_c[r] *= alpha[r];
          kahan_add(row_sum[r], sum_c[r], sum);
        } else {
          row_sum[r] = row_sum[r] * alpha[r] + sum;
        }
      }
    }
    return __any_sync(0xffffffffu, any_rescale);
  };
  // P (in S's registers) -> the register-A fragments of P V.
  auto pack = [&](const float(&s)[kBlockN / 2], std::uint32_t(&pa)[kBlockN / 16][4], bool half) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      if (Tr::kHalfLast && half && kk >= kBlockN / 32) break;
      pa[kk][0] = ptx::pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = ptx::pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = ptx::pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = ptx::pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };

  // Tile j + 1's S GEMM and tile j's P V GEMM go to the tensor cores back to back; the softmax
  // of S_{j+1} runs while P_j V_j is in flight (intra-warpgroup overlap), and only once P_j V_j
  // is done are O rescaled and S_{j+1} packed into P's registers, so no register of an in-flight
  // wgmma is touched and one S and one P suffice (the registers fit the 168 of 384 threads, and
  // the 160 of 3 consumers at head dim 64).
  // Across warpgroups, the consumers take turns issuing (below). K and V stages go back to
  // the producer as soon as their GEMMs are done. j counts loaded tiles: in the masked kernel the
  // schedule word of each stage says which key tile it holds and when there are no more.
  //
  // Ping-pong between the consumers: each issues its GEMMs only when the one before it (in the
  // ring 0, 1, ..., kConsumers - 1, 0) has issued its own (named barrier 1 + cw: "consumer cw
  // may issue"), so the tensor cores take one warpgroup's GEMMs while the others run their
  // softmax, instead of all issuing at once and then all waiting on the exp2 units. Every
  // consumer issues the same number of GEMM groups (tiles + 1: the first S, then S_{j+1} with
  // P_j V_j, then the last P V), the last consumer opens with a spare "go" for consumer 0, and
  // consumer 0 takes the last consumer's last "go" at the end, so every phase of every turn
  // barrier completes before the CTA exits. Named barriers kEpilogueBarrier + cw are each
  // consumer's own in the epilogue.
  constexpr int kTurnThreads = 2 * 128;
  constexpr int kEpilogueBarrier = 1 + Tr::kConsumers;
  auto my_turn = [&] {
    if (Tr::kPingPong) ptx::named_barrier_sync(1 + cw, kTurnThreads);
  };
  auto their_turn = [&] {
    // The next consumer's barrier: 2 - cw with 2 consumers (the same SASS as before the ring).
    const int next = Tr::kConsumers == 2 ? 2 - cw : (cw + 1 < Tr::kConsumers ? cw + 2 : 1);
    if (Tr::kPingPong) ptx::named_barrier_arrive(next, kTurnThreads);
  };
  // The previous item's TMA store of O (issued by this thread, see the epilogue) reads a Q buffer
  // (or with kEarlyQ a stage half); it goes back to the producer (an arrival on o_free) once the
  // read is done: after this item's first S GEMM (by then it is), before this item's epilogue (an
  // item without tiles), or, with a single Q buffer staging O, before this item's Q, which loads
  // into it.
  auto release_o = [&] {
    if (o_in_flight) {
      ptx::bulk_wait_group_read<0>();
      ptx::mbarrier_arrive(o_free);
      o_in_flight = false;
    }
  };
  if constexpr (Tr::kQBuffers == 1 && !kEarlyQ) release_o();
  float s[kBlockN / 2];
  std::uint32_t pa[kBlockN / 16][4];
  // The masked kernel loads every item's Q, with or without tiles (see produce_masked).
  SM90_TRACE(1 + cw, trace_u, 1);
  if constexpr (kMasked) ptx::mbarrier_wait(bar.q_full_of(q_buf), q_phase);
  SM90_TRACE(1 + cw, trace_u, 2);
  const int word0 = kMasked ? read_word(0) : 0;
  int used = 0;  // the item's key tiles
  if constexpr (Tr::kCompensated) {
    // Compensated: tile by tile, S_j = Q K_j^T; the softmax (exact max; O and its Kahan terms
    // rescaled on every increase); then P_j V_j one 64-column slab of O at a time, each into the
    // fresh accumulator `tacc`, Kahan-added into O as soon as it lands. Nothing of this warpgroup
    // overlaps its own GEMMs (S of tile j + 1 would need its 32 registers while P V runs), so at
    // the peak (a P V slab in flight) a thread holds O and its Kahan terms (D), tacc (32) and P
    // (16): 176 at D = 128, plus the addresses and mask state: R213 of the masked consumer's
    // 216. The other warpgroup's softmax and Kahan
    // steps overlap this one's GEMMs; at D = 64 the consumers also take turns for every GEMM they
    // issue (1 + D / 64 per tile each; the same tiles, so the same count, closed as below), at
    // D = 128 they run free (Tr::kPingPong). ptxas itself moves the Kahan steps of a slab past
    // the next slab's issue once tacc is read (yc = tacc - c first).
    static_assert(kMasked, "the compensated kernel runs the masked code path (dense included)");
    if (word0 != kEndOfTiles) {
      int j = 0;
      for (int word = word0;; word = read_word(++j)) {
        const int stage = (j0 + j) % Tr::kStages;
        my_turn();
        issue_qk(s, j, false);
        their_turn();
        const std::uint32_t off = blocks_off(word);
        ptx::wgmma_wait<0>();
        ptx::mbarrier_arrive(bar.k_empty + 8 * stage);
        float alpha[2];
        if (softmax(s, j, alpha, word, off, false, false)) {
#pragma unroll
          for (int i = 0; i < D / 2; ++i) {
            o[i] *= alpha[(i >> 1) & 1];
            oc[i] *= alpha[(i >> 1) & 1];
          }
        }
        pack(s, pa, false);
#pragma unroll
        for (int c = 0; c < D / 64; ++c) {
          float tacc[32];
          my_turn();
          issue_pv_slab(tacc, pa, j, c);
          their_turn();
          ptx::wgmma_wait<0>();
#pragma unroll
          for (int i = 0; i < 32; ++i) kahan_add(o[32 * c + i], oc[32 * c + i], tacc[i]);
        }
        ptx::mbarrier_arrive(bar.v_empty + 8 * stage);
        if (word & kLastTile) break;
      }
      used = j + 1;
    }
  } else if (!kMasked && !kEarlyQ && n_tiles > 0 && m0 + cw * 64 >= lq) {
    // Rows all past the sequence end (the last row block's last warpgroups: with 3 consumers a
    // 192-row block at S512 or S1024 keeps 128 or 64 rows): the warpgroup's part of every barrier
    // the item's tiles take (its turns, each stage's full wait before its empty arrival, so that
    // no arrival counts toward an earlier phase), without the GEMMs and exponentials, which left
    // the other consumers less of the tensor cores and exp2 units. O stays 0, and the epilogue's
    // store of these rows is clipped by the tensor map as before. (Non-causal calls pay only
    // with the static schedule's rotation, see fwd_kernel.)
    ptx::mbarrier_wait(bar.q_full_of(q_buf), q_phase);  // O is staged through this Q buffer
    auto full_wait = [&](std::uint32_t full, int t) {
      ptx::mbarrier_wait(full + 8 * ((j0 + t) % Tr::kStages), ((j0 + t) / Tr::kStages) & 1);
    };
    auto empty_arrive = [&](std::uint32_t empty, int t) {
      ptx::mbarrier_arrive(empty + 8 * ((j0 + t) % Tr::kStages));
    };
    my_turn();
    full_wait(bar.k_full, 0);
    their_turn();
    release_o();
    empty_arrive(bar.k_empty, 0);
    my_exp_turn();  // and the exponentials' turns (Tr::kExpTurns) of each tile's softmax
    their_exp_turn();
    for (int j = 0; j + 1 < n_tiles; ++j) {
      my_turn();
      full_wait(bar.k_full, j + 1);
      full_wait(bar.v_full, j);
      their_turn();
      empty_arrive(bar.k_empty, j + 1);
      my_exp_turn();
      their_exp_turn();
      empty_arrive(bar.v_empty, j);
    }
    my_turn();
    full_wait(bar.v_full, n_tiles - 1);
    their_turn();
    empty_arrive(bar.v_empty, n_tiles - 1);
    used = n_tiles;
  } else if (kMasked ? word0 != kEndOfTiles : n_tiles > 0) {
    if constexpr (!kMasked) ptx::mbarrier_wait(bar.q_full_of(q_buf), q_phase);
    SM90_TRACE(1 + cw, trace_u, 10);
    load_q_regs();
    SM90_TRACE(1 + cw, trace_u, 11);
    my_turn();
    SM90_TRACE(1 + cw, trace_u, 12);
    issue_qk(s, 0, false);
    SM90_TRACE(1 + cw, trace_u, 3);
    their_turn();
    const std::uint32_t off0 = kMasked ? blocks_off(word0) : 0u;
    ptx::wgmma_wait<0>();
    SM90_TRACE(1 + cw, trace_u, 4);
    release_o();
    if (!(holds_half && cw == 0 && n_tiles == 1))
      ptx::mbarrier_arrive(bar.k_empty + 8 * (j0 % Tr::kStages));
    if (kEarlyQ && n_tiles == 1) {
      ptx::mbarrier_arrive(bar.q_empty_of(q_buf));
      if (cw == 1) ptx::named_barrier_arrive(kStageBarrier, 256);
    }
    float alpha[2];
    softmax(s, 0, alpha, word0, off0, false, false);  // O is still zero: nothing to rescale
    pack(s, pa, false);
    // word: tile j + 1's; whole, half (tile j + 1 a half last tile): see softmax
    auto step = [&](int j, int word, bool whole, bool half) {
      SM90_TRACE_TILE(cw, trace_u, j, 0);
      SM90_TRACE_STEP(cw, trace_u, j);
      my_turn();
      SM90_TRACE_TILE(cw, trace_u, j, 1);
      issue_qk(s, j + 1, half);
      issue_pv(pa, j, false);
      their_turn();
      SM90_TRACE_TILE(cw, trace_u, j, 2);
      const std::uint32_t off = kMasked ? blocks_off(word) : 0u;
      ptx::wgmma_wait<1>();  // S_{j+1} is done; P_j V_j may still run
#if defined(GPUATTN_SM90_TRACE) && GPUATTN_SM90_TRACE
      // Without kLateWait ptxas hoists the P V wait below to the softmax's start (after the mask);
      // the trace build's stamps end that hoist, so it waits here, where the kernel does.
      if constexpr (!Tr::kLateWait) ptx::wgmma_wait<0>();
#endif
      SM90_TRACE_TILE(cw, trace_u, j, 3);
      if constexpr (Tr::kHalfLast) {
        if (half) {
#pragma unroll
          for (int i = 0; i < kBlockN / 4; ++i) s[i] = s_half[i];
        }
      }
      if (!(holds_half && cw == 0 && j + 2 == n_tiles))
        ptx::mbarrier_arrive(bar.k_empty + 8 * ((j0 + j + 1) % Tr::kStages));
      if (kEarlyQ && j + 2 == n_tiles) {
        ptx::mbarrier_arrive(bar.q_empty_of(q_buf));
        if (cw == 1) ptx::named_barrier_arrive(kStageBarrier, 256);
      }
      const bool rescale = softmax(s, j + 1, alpha, word, off, whole, half);
      SM90_TRACE_TILE(cw, trace_u, j, 4);
      // ptxas hoists a wgmma wait to the top of its basic block: here, above the whole softmax
      // (SASS: WARPGROUP.DEPBAR.LE gsb0, 0x0 right after the mask's branch), so the softmax of
      // S_{j+1} waited for P_j V_j instead of overlapping it. A branch on the row sum, the
      // softmax's last value, starts a new block after it. A row sum is never negative (a sum of
      // exp2 values, each >= +0, or NaN, which compares false), so the trap never fires.
      // (Tr::kLateWait: where this pays.)
      if (Tr::kLateWait && row_sum[1] < 0.f) __trap();
      ptx::wgmma_wait<0>();
      ptx::mbarrier_arrive(bar.v_empty + 8 * ((j0 + j) % Tr::kStages));
      if (rescale) {
#pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i >> 1) & 1];
      }
      pack(s, pa, half);
      SM90_TRACE_TILE(cw, trace_u, j, 5);
    };
    int last = 0;
    bool half_last = false;  // see Tr::kHalfLast
    if constexpr (kMasked) {
      for (int word = word0; (word & kLastTile) == 0; ++last) {
        word = read_word(last + 1);
        step(last, word, false, false);
      }
    } else {
      // Whole tiles (head dims 64 and 128): the leading tiles that every row of this warpgroup
      // sees whole (keys below the sequence end and, causal, on or below its first row's
      // diagonal) run a step without the mask code, in a loop of their own. That loop holds 460
      // instructions instead of 629 at D64 (3 consumers) and 501 instead of 976 at D128 (with the
      // window's mask code too). H200, same-run A/B against the one loop (twenty-second session,
      // call 7): D128 non-causal 0.94-0.97x the time (the sweep's geometric means 0.967 / 0.958
      // at S <= 2048 / above), causal 0.98-1.00x, D64 0.98-1.00x; D256 lost (up to 1.06x at
      // S16384) and keeps the one loop. (Call 6's dead tails, 287 more instructions in the D64
      // loop that never ran on non-causal calls, had cost 4-10%.) ncu (call 11): instruction
      // fetch is part of it, the no-instruction stall 0.131 -> 0.075 warps per issue at D64.
      // Not on the causal-only kernels (Tr::kWholeLoop).
      if constexpr (Tr::kWholeLoop) {
        int n_whole = banded ? 0 : lk / kBlockN;
        if (p.causal) n_whole = min(n_whole, max(0, m0 + cw * 64 + diag + 1) / kBlockN);
        for (; last + 1 < min(n_whole, n_tiles); ++last) step(last, 0, true, false);
      }
      // The last tile is half when none of this warpgroup's rows sees a key of its second 64 (the
      // softmax's mask below: keys from min(lk, the last row's diagonal + 1) on are hidden). The
      // item's first tile stays whole (one-tile items: the first block of a causal head).
      if constexpr (Tr::kHalfLast) {
        const int key_end = p.causal ? min(lk, m0 + cw * 64 + 64 + diag) : lk;
        half_last = !banded && n_tiles >= 2 && (n_tiles - 1) * kBlockN + kBlockN / 2 >= key_end;
      }
      for (; last + 1 < n_tiles - (half_last ? 1 : 0); ++last) step(last, 0, false, false);
      if (half_last) step(last++, 0, false, true);
    }
    my_turn();
    if (half_last) {
      issue_pv(pa, last, true);
    } else {
      issue_pv(pa, last, false);
    }
    their_turn();
    ptx::wgmma_wait<0>();
    SM90_TRACE(1 + cw, trace_u, 5);
    // The producer may load the last tile's stage (the Q buffer goes back after the epilogue, or
    // once its TMA store has read it; with kEarlyQ, see there).
    if (!(holds_half && cw == 1))
      ptx::mbarrier_arrive(bar.v_empty + 8 * ((j0 + last) % Tr::kStages));
    if (kEarlyQ && cw == 0) ptx::named_barrier_arrive(kStageBarrier + 1, 256);
    used = last + 1;
  }
  if (kMasked && used == 0) {  // the kEndOfTiles stage goes back like a tile's
    const int stage = j0 % Tr::kStages;
    ptx::mbarrier_arrive(bar.k_empty + 8 * stage);
    ptx::mbarrier_arrive(bar.v_empty + 8 * stage);
  }

  // Epilogue: normalize, store O (rows past the sequence end are skipped) and the LSE; a row that
  // saw no key (sum 0) stores 0 and LSE -inf. After tiles, O goes through this warpgroup's rows
  // of its Q buffer (every GEMM that read them is done; kEarlyQ: a half of the last tile's
  // stage): stmatrix writes each warp's fragments
  // there, 16 bytes a lane (128-byte swizzle, as TMA wrote Q: conflict-free). Then, but for varlen
  // calls, one thread stores the 64 rows with TMA (a box of 64 rows per 64-column slab; rows past
  // the sequence end lie outside the tensor map and are not written) and the warpgroup goes on:
  // the thread gives the Q buffer back to the producer once the store has read it, in the next
  // item (release_o). Varlen calls (a box would spill into the next sequence's rows)
  // copy the rows out 16 bytes a thread, a row's D * 2 bytes by D / 8 consecutive threads. H200
  // (scripts/sm90-trace.sh, 6640e35): that copy took 0.7-0.8 us a work item, the 4-byte stores
  // it replaced more. Without tiles (the Q buffer may then be the next item's, in flight) the
  // zeros are stored straight from the registers, and so is the compensated consumer's O: its
  // registers are at the limit (nvcc 13.0: 48 bytes of spill stores at D = 128 already, 60 with
  // the staging).
  release_o();
  SM90_TRACE(1 + cw, trace_u, 13);
  const bool staged = Tr::kCompensated || (kMasked && D == 256) ? false
                      : kMasked                                 ? word0 != kEndOfTiles
                                                                : n_tiles > 0;
  // The row totals: both rows' quad sums, then their reciprocals and log2s, each one MUFU
  // instruction (a row sum is >= 1 when positive: the row's max term is exp2(0)). IEEE 1 / l
  // and log2f took a 20-FMA polynomial and a slow-path branch a row, rows one after the other:
  // ~0.26-0.31 us an item in the trace (causal D64 S512, 2026-11-22-h200-pipes call 8). H200,
  // same-run A/B against them (call 9, 2 rounds): the D64 sweep 0.90-1.05, geometric mean 0.964
  // at S <= 2048 and 0.982 above; D128 and D256 1.00 within the noise; ptxas: spills D64 10 -> 0,
  // D128 14 -> 4, D256 68 -> 28 bytes. The compensated kernel keeps them exact.
  float l[2], inv[2], lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] = quad_sum(row_sum[r]);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if constexpr (Tr::kCompensated) {
      inv[r] = l[r] > 0.f ? 1.f / l[r] : 0.f;
      lse[r] = l[r] > 0.f ? (row_max[r] + log2f(l[r])) * 0.69314718055994531f : -INFINITY;
    } else {
      inv[r] = l[r] > 0.f ? ptx::fast_rcp(l[r]) : 0.f;
      lse[r] = l[r] > 0.f ? (row_max[r] + ptx::fast_log2(l[r])) * 0.69314718055994531f : -INFINITY;
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = m0 + row_base + 8 * r;
    if (row < lq && p.lse != nullptr && t4 == 0) p.lse[p.lse_offset(b, row, h)] = lse[r];
  }
  SM90_TRACE(1 + cw, trace_u, 14);
  if (staged) {
    // Where O goes: this warpgroup's rows of its Q buffer (slabs kBlockM rows apart), or with
    // kEarlyQ a half of the last tile's stage (slabs 64 rows apart), once the other warpgroup's
    // GEMMs that read it are done. o_free_bar: the mbarrier that gives it back to the producer.
    std::uint32_t o_smem = q_wg, o_free_bar = bar.q_empty_of(q_buf);
    int o_slab = kBlockM * 128;
    if constexpr (kEarlyQ) {
      const int stage = (j0 + used - 1) % Tr::kStages;
      o_smem = (cw == 0 ? sk0 : sv0) + stage * Tr::kKVBytes;
      o_free_bar = (cw == 0 ? bar.k_empty : bar.v_empty) + 8 * stage;
      o_slab = 64 * 128;
      ptx::named_barrier_sync(kStageBarrier + cw, 256);
    }
    // stmatrix x4 of columns [8 n, 8 n + 16): matrices (rows 0-7, n), (rows 8-15, n),
    // (rows 0-7, n + 1), (rows 8-15, n + 1) of the warp's 16 rows; lane l addresses row l % 8 of
    // matrix l / 8.
    const int mi = lane >> 3;
    const int rs = warp * 16 + 8 * (mi & 1) + (lane & 7);  // the row inside the warpgroup's 64
#pragma unroll
    for (int n = 0; n < kNO; n += 2) {
      const int nn = n + (mi >> 1);  // this lane's 16-byte chunk: chunk nn % 8 of slab nn / 8
      const std::uint32_t addr =
          o_smem + (nn >> 3) * o_slab + rs * 128 + (((nn & 7) ^ (rs & 7)) << 4);
      ptx::stmatrix_x4(addr, ptx::pack2<T>(o[4 * n] * inv[0], o[4 * n + 1] * inv[0]),
                       ptx::pack2<T>(o[4 * n + 2] * inv[1], o[4 * n + 3] * inv[1]),
                       ptx::pack2<T>(o[4 * n + 4] * inv[0], o[4 * n + 5] * inv[0]),
                       ptx::pack2<T>(o[4 * n + 6] * inv[1], o[4 * n + 7] * inv[1]));
    }
    SM90_TRACE(1 + cw, trace_u, 6);
    if (!(Tr::kTakesVarlen && p.is_varlen())) {
      ptx::fence_proxy_async_shared();  // the stmatrix writes, before the TMA store reads them
      ptx::named_barrier_sync(kEpilogueBarrier + cw, 128);
      SM90_TRACE(1 + cw, trace_u, 7);
      if ((tid & 127) == 0) {
#pragma unroll
        for (int sl = 0; sl < Tr::kSlabs; ++sl) {
          ptx::tma_store_4d(&maps.o, o_smem + sl * o_slab, sl * 64, h, m0 + cw * 64, b);
        }
        ptx::bulk_commit_group();
        o_in_flight = true;  // the smem goes back in the next item (release_o)
        o_free = o_free_bar;
      } else if (!kEarlyQ) {
        ptx::mbarrier_arrive(o_free_bar);
      }
      SM90_TRACE(1 + cw, trace_u, 8);
    } else {
      ptx::named_barrier_sync(kEpilogueBarrier + cw, 128);
      SM90_TRACE(1 + cw, trace_u, 7);
      constexpr int kChunks = D / 8;  // 16-byte chunks per row
      T* const out = static_cast<T*>(p.o);
#pragma unroll
      for (int c = tid & 127; c < 64 * kChunks; c += 128) {
        const int rw = c / kChunks, ch = c % kChunks;
        const uint4 v = ptx::ld_shared_v4(o_smem + (ch >> 3) * o_slab + rw * 128 +
                                          (((ch & 7) ^ (rw & 7)) << 4));
        const int row = m0 + cw * 64 + rw;
        if (row < lq) ptx::st_global_v4(out + p.o_offset(b, row, h) + 8 * ch, v);
      }
      SM90_TRACE(1 + cw, trace_u, 8);
      ptx::fence_proxy_async_shared();
      if constexpr (kEarlyQ) {
        // Every thread's reads are done before the one held arrival gives the half back.
        ptx::named_barrier_sync(kEpilogueBarrier + cw, 128);
        if (holds_half) ptx::mbarrier_arrive(o_free_bar);
      } else {
        ptx::mbarrier_arrive(o_free_bar);
      }
    }
  } else {
    if (kMasked) ptx::mbarrier_arrive(bar.q_empty_of(q_buf));  // Q came; its GEMMs are done
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = m0 + row_base + 8 * r;
      if (row < lq) {
        T* out = static_cast<T*>(p.o) + p.o_offset(b, row, h) + 2 * t4;
#pragma unroll
        for (int n = 0; n < kNO; ++n) {
          *reinterpret_cast<std::uint32_t*>(out + n * 8) =
              ptx::pack2<T>(o[4 * n + 2 * r] * inv[r], o[4 * n + 2 * r + 1] * inv[r]);
        }
      }
    }
  }
  return kMasked && used == 0 ? 1 : used;
#else
  return 0;
#endif
}

template <class Tr>
constexpr FwdKernel kernel_of();

// The dense and causal calls' own instantiations (sm90_ws_192x128, sm90_ws_128x80_d256,
// sm90_ws_128x128_s3, sm90_ws_128x128_s4, sm90_ws_64x128_2cta) run nothing else: a clear error for
// any other call that names one (the causal-only instantiations, Tr::kCausalOnly: causal calls
// only).
inline void require_dense_standard(const char* config, const FwdParams& p, bool causal_only) {
  if (p.precision != Precision::standard || !p.dense_or_causal() || (causal_only && !p.causal)) {
    throw Error(ErrorCode::not_supported,
                std::string("gpuattn: ") + config + " runs " +
                    (causal_only ? "causal" : "dense and causal") +
                    " calls in standard precision only, not " +
                    (p.precision != Precision::standard ? to_string(p.precision)
                     : p.banded()                       ? "a sliding window"
                     : !p.dense_or_causal()             ? "global tokens or a block layout"
                                                        : "a non-causal call"));
  }
}

template <class Tr, bool kMasked>
void launch_kernel(const FwdParams& p, cudaStream_t stream) {
  // The one-consumer kernel compiles no varlen code (FwdTraits::kTakesVarlen), and the own
  // dense / causal instantiations no window or block-layout code (FwdTraits::kOwnDenseCausal):
  // such a call would run as if dense. The dispatch never sends one there (two_ctas_pay and the
  // 2cta force skip varlen; launch_own, sm90_late_pv_wait); this keeps it so.
  if constexpr (!Tr::kTakesVarlen || (!kMasked && Tr::kOwnDenseCausal)) {
    const char* name = kFwdTileConfigs[static_cast<int>(kernel_of<Tr>())].name;
    if (!kMasked && Tr::kOwnDenseCausal) require_dense_standard(name, p, Tr::kCausalOnly);
    if (!Tr::kTakesVarlen && p.is_varlen()) {
      throw Error(ErrorCode::not_supported,
                  std::string("gpuattn: ") + name + " runs no varlen calls (cu_seqlens)");
    }
  }
  if (p.has_alibi() && (kMasked || !Tr::kAlibi)) {  // see FwdTraits::kAlibi, select_fwd_config
    throw Error(ErrorCode::not_supported,
                std::string("gpuattn: this instantiation of ") +
                    kFwdTileConfigs[static_cast<int>(kernel_of<Tr>())].name +
                    " adds no ALiBi (the dispatch sends such calls to the one that does, and "
                    "global tokens, block layouts, windows at head dims 64 and 256 and "
                    "compensated precision to sm_80)");
  }
  // The fast tanh only (see consume()'s softmax): the dispatch sends larger caps to sm_80.
  if (p.exact_tanh()) {
    throw Error(ErrorCode::not_supported,
                "gpuattn: the sm_90a kernels take caps up to " +
                    std::to_string(static_cast<int>(FwdParams::kFastTanhMaxCap)) + ", not softcap " +
                    std::to_string(p.softcap) + " (the sm_80 kernel's exact tanh runs those)");
  }
  static PerDeviceFlags configured{};
  set_max_dynamic_smem(reinterpret_cast<const void*>(fwd_kernel<Tr, kMasked>), Tr::kSmemBytes,
                       configured);
  const QkvTensorMaps maps = make_qkv_tensor_maps(p, Tr::kBlockM, Tr::kBlockN, 64);
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  // See core/work_schedule.h: persistent, one CTA per SM (Tr::kCtasPerSm of them), when there
  // are more items than such CTAs (dynamic, from a zeroed counter, for masked and causal calls;
  // static for dense non-causal ones), else a CTA per item. (Validation keeps the items below
  // 2^30.)
  const long long items = static_cast<long long>(m_blocks) * p.hq * p.batch;
  if constexpr (Tr::kCtasPerSm > 1) {  // the grid below counts on them sharing each SM
    static PerDeviceFlags checked{};
    once_per_device(checked, [] {
      int resident = 0;
      GPUATTN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &resident, fwd_kernel<Tr, kMasked>, Tr::kThreads, Tr::kSmemBytes));
      if (resident < Tr::kCtasPerSm) {
        throw Error(ErrorCode::cuda_error,
                    std::string("gpuattn: ") +
                        kFwdTileConfigs[static_cast<int>(kernel_of<Tr>())].name + " needs " +
                        std::to_string(Tr::kCtasPerSm) +
                        " CTAs resident on an SM; this device holds " + std::to_string(resident));
      }
    });
  }
  const int sms = sm80::num_sms() * Tr::kCtasPerSm;
  const bool listed = !kMasked && Tr::kListed && p.whole_tile_layout(Tr::kBlockM, Tr::kBlockN);
  const bool dynamic = (kMasked || p.causal || listed) && items > sms;
  std::optional<sm80::LaunchCounters> counter;
  if (dynamic) counter.emplace(stream, 1, p);
  const dim3 grid(static_cast<unsigned>(std::min<long long>(items, sms)));
  fwd_kernel<Tr, kMasked>
      <<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p, maps, dynamic ? counter->get() : nullptr);
  GPUATTN_CUDA_CHECK(cudaGetLastError());
#if defined(GPUATTN_SM90_TRACE) && GPUATTN_SM90_TRACE
  print_sm90_trace(stream, Tr::kConsumers, static_cast<int>(grid.x));
#endif
}

// The table entry (core/tile_config.h) of the traits Tr.
template <class Tr>
constexpr FwdKernel kernel_of() {
  return Tr::kCompensated      ? FwdKernel::sm90_ws_128x64_compensated
         : Tr::kConsumers == 3 ? FwdKernel::sm90_ws_192x128
         : Tr::kConsumers == 1 ? FwdKernel::sm90_ws_64x128_2cta
         : Tr::kHeadDim == 256
             ? (Tr::kBlockN == 80 ? FwdKernel::sm90_ws_128x80_d256 : FwdKernel::sm90_ws_128x64_d256)
         : Tr::kStages == 3 ? FwdKernel::sm90_ws_128x128_s3
         : Tr::kStages == 4 ? FwdKernel::sm90_ws_128x128_s4
                            : FwdKernel::sm90_ws_128x128;
}

// Dense and causal calls run the kernel without the masked kernel's tile search and schedule
// words, and so do sliding windows alone at head dim 128 (Tr::kBanded; p.banded(): the tiles of
// the window's key range, the edge ones masked per element) and block layouts of whole tiles at
// head dims 64 and 128 (Tr::kListed); global-token and other block-sparse calls (with or without a
// window or causal) and, at head dims 64 and 256, windows the masked one; the compensated kernel
// has only the masked instantiation, for every call. sm90_dense_instantiation (core/tile_config.h)
// decides, so that the GPU tests can ask it which one a call takes.
template <class Tr>
void launch_fwd(const FwdParams& p, cudaStream_t stream) {
  constexpr FwdKernel kKernel = kernel_of<Tr>();
  static_assert(Tr::kCompensated || (Tr::kListed == (kKernel == FwdKernel::sm90_ws_128x128) &&
                                     Tr::kBanded == (kKernel == FwdKernel::sm90_ws_128x128 &&
                                                     Tr::kHeadDim == 128) &&
                                     (!Tr::kListed || (Tr::kBlockM == 128 && Tr::kBlockN == 128))),
                "sm90_dense_instantiation's rule and the traits agree");
  if constexpr (Tr::kCompensated) {
    launch_kernel<Tr, true>(p, stream);
  } else if (sm90_dense_instantiation(kKernel, p)) {
    launch_kernel<Tr, false>(p, stream);
  } else {
    launch_kernel<Tr, true>(p, stream);
  }
}

// True when fwd_kernel<Tr, *> was compiled to sm_90a machine code that this device runs (both
// instantiations come from the same compilation).
template <class Tr>
bool kernel_is_sm90a() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, fwd_kernel<Tr, true>) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.binaryVersion == 90;
}

// The entry of core/tile_config.h's table that describes the traits Tr.
template <class Tr>
constexpr bool matches_table() {
  const TileConfig& c = kFwdTileConfigs[static_cast<int>(kernel_of<Tr>())];
  return c.block_m == Tr::kBlockM && c.block_n == Tr::kBlockN && c.warps == Tr::kThreads / 32 &&
         c.stages == Tr::kStages;
}

// Launches the instantiation Tr, the configuration of its own that the dispatch picked for a
// dense or causal call, where it exists at head dim D (its traits' head dim).
template <class Tr, int D>
void launch_own(const FwdParams& p, cudaStream_t stream) {
  constexpr FwdKernel kKernel = kernel_of<Tr>();
  const char* name = kFwdTileConfigs[static_cast<int>(kKernel)].name;
  if constexpr (D == Tr::kHeadDim) {
    static_assert(matches_table<Tr>(), "FwdTraits and the tile configuration table agree");
    launch_kernel<Tr, false>(p, stream);  // which refuses what Tr does not run
  } else {
    throw Error(ErrorCode::not_supported, std::string("gpuattn: ") + name + " exists at head dim " +
                                              std::to_string(Tr::kHeadDim) + " only, not " +
                                              std::to_string(D));
  }
}

// `kernel` is select_fwd_config's pick. sm90_ws_192x128 (head dim 64, dense and causal calls)
// runs the 3-consumer instantiation, sm90_ws_128x80_d256 (head dim 256, dense and causal, from
// 1024 keys) the 80-key one, sm90_ws_128x128_s3 (head dim 128, dense and causal, up to 2048
// keys or any under GPUATTN_KERNEL=sm90_ws_128x128_s3) the 3-stage one (causal calls its causal
// twin), sm90_ws_128x128_s4 (head dim 64, causal, under 2048 rows) the 4-stage one,
// sm90_ws_64x128_2cta (head dim 64, dense and causal, not varlen, small grids) the one-consumer
// one; ALiBi calls the instantiations with the bias (sm90_ws_192x128 and sm90_ws_128x128_s3 their
// own, sm90_ws_128x128 at head dim 64 FwdD64AlibiTraits; see FwdTraits::kAlibi);
// otherwise p.precision picks: standard (2 consumers; the dense or the masked instantiation, see
// launch_fwd), or (head dims 64 and 128) compensated. A compensated call at head dim 256 belongs
// to the sm_80 path (select_fwd_config never sends it here).
template <typename T, int D>
void run_fwd(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  static_assert(matches_table<FwdTraits<T, D>>(),
                "FwdTraits and the tile configuration table agree");
  switch (kernel) {
    case FwdKernel::sm90_ws_192x128:
      if (p.has_alibi()) return launch_own<FwdD64ThreeAlibiTraits<T>, D>(p, stream);  // kAlibi
      return launch_own<FwdThreeConsumerTraits<T>, D>(p, stream);
    case FwdKernel::sm90_ws_64x128_2cta: return launch_own<FwdD64TwoCtaTraits<T>, D>(p, stream);
    case FwdKernel::sm90_ws_128x80_d256: return launch_own<FwdD256Traits<T>, D>(p, stream);
    case FwdKernel::sm90_ws_128x128_s3:
      if (p.has_alibi()) {  // see kAlibi
        if (p.causal) return launch_own<FwdD128ShortCausalAlibiTraits<T>, D>(p, stream);
        return launch_own<FwdD128ShortAlibiTraits<T>, D>(p, stream);
      }
      if (p.causal) return launch_own<FwdD128ShortCausalTraits<T>, D>(p, stream);
      return launch_own<FwdD128ShortTraits<T>, D>(p, stream);
    case FwdKernel::sm90_ws_128x128_s4: return launch_own<FwdD64CausalTraits<T>, D>(p, stream);
    default: break;
  }
  if (p.precision == Precision::compensated) {
    if constexpr (D <= 128) {
      static_assert(matches_table<FwdTraits<T, D, true>>(),
                    "FwdTraits and the tile configuration table agree");
      launch_fwd<FwdTraits<T, D, true>>(p, stream);
      return;
    } else {
      throw Error(ErrorCode::not_supported,
                  "gpuattn: the sm_90a kernel has no compensated precision at head dim " +
                      std::to_string(D));
    }
  }
  if constexpr (D == 64) {
    if (p.has_alibi()) return launch_own<FwdD64AlibiTraits<T>, D>(p, stream);  // see kAlibi
    if (sm90_late_pv_wait(kernel, D, p.causal, p.dense_or_causal())) {  // see kLateWait
      static_assert(matches_table<FwdD64LateWaitTraits<T>>(),
                    "FwdTraits and the tile configuration table agree");
      launch_kernel<FwdD64LateWaitTraits<T>, false>(p, stream);
      return;
    }
  }
  launch_fwd<FwdTraits<T, D>>(p, stream);
}

template <typename T, int D>
bool usable() {
  return kernel_is_sm90a<FwdTraits<T, D>>();
}

}  // namespace gpuattn::sm90
