#!/usr/bin/env bash
# Written in s37 (not run yet), for main: the decode kernel at head dim 64 with 3 K/V stages
# instead of 4 (b: DecodePlan::stages(64) edited on the device copy), against main (a).
# Why: s37 call 4's ncu of decode_kernel at 124M B128 (prompt 512; 67% of the step) had 2.68 TB/s
# (56% of peak), 3 CTAs an SM (shared memory: 67.6 KB each), 2.8 warps a scheduler, 0.5 issued an
# SM sub-partition a cycle and 50% of cycles with no eligible warp. 3 stages are 51 KB: 4 CTAs an
# SM (registers allow 4), a third more warps to hide latency, with 2 tiles ahead each instead of 3
# (128 KB in flight an SM against 144). Expect B128 +5-10% if latency hiding is the limit; B1/B8
# (split CTAs, 2 an SM a wave) within +-2%. The core test that pins smem_bytes(64) is edited too.
# Also the page layout probe: if head-major pages (a head's 16 rows of a page in one 2 KB run)
# read faster than the engine's token-major ones (128 bytes at a 1,536-byte pitch), DRAM locality
# is part of the 3.3 TB/s, and the engine's cache layout is the change to make (s17's
# bench/decode_layout_probe.py found bshd and bhsd alike for dense decode: expect no difference).
# And pages of 64 keys (--page-size 64): with 16, each row of a tile finds its page by an integer
# division and a table load (the D64 paged kernel's SASS has a MUFU.RCP sequence per division).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/next-call-decode-stages.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for d in a b; do rm -rf /tmp/$d && mkdir /tmp/$d && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/$d; done
sed -i 's/return head_dim == 64 ? 4 : 2;/return head_dim == 64 ? 3 : 2;/' /tmp/b/src/core/decode_split.h
sed -i 's/EXPECT_EQ(DecodePlan::smem_bytes(64), 67584);   \/\/ 4 stages/EXPECT_EQ(DecodePlan::smem_bytes(64), 51200);/' /tmp/b/tests/core/test_tile_config.cpp
diff -r /tmp/a/src /tmp/b/src | head -5
for d in a b; do
  t="gpuattn_cli gpuattn_decode_layout_probe"; [ $d = b ] && t="$t gpuattn_cuda_tests"
  (cd /tmp/$d && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target $t > $OUT/build-$d.log 2>&1; echo "build $d rc $?") &
done; wait; ts "builds done"
timeout 200 /tmp/b/build/tests/gpuattn_cuda_tests --gtest_filter='*Decode*:*Paged*:Gpt2EngineCuda.BatchedGeneration*' > $OUT/tests-b.log 2>&1
ts "b decode tests rc $?"; grep -E "PASSED|FAILED" $OUT/tests-b.log | tail -5
# The page layout (tools/decode_layout_probe.cu): token-major (the engine's) against head-major,
# the pool's pages in order and shuffled, with 4 stages (a) and 3 (b).
for d in a b; do for sh in 0 1; do
  echo "== $d shuffle $sh"; timeout 60 /tmp/$d/build/tools/gpuattn_decode_layout_probe 128 12 64 576 16 3 $sh
done; done 2>&1 | tee $OUT/layout.txt
ts "layout probe done"
for round in 1 2 3; do
  for d in a b; do
    timeout 100 /tmp/$d/build/tools/gpuattn generate --random 124m --batch 128 --prompt-len 512 --max-new 128 2>&1 | tail -1 | sed "s/^/B128 $d /"
    # Pages of 64 keys (one table entry a 64-key tile: the kernel's whole_tiles path, no
    # division a row) against the engine's default 16.
    timeout 100 /tmp/$d/build/tools/gpuattn generate --random 124m --batch 128 --prompt-len 512 --max-new 128 --page-size 64 2>&1 | tail -1 | sed "s/^/B128-ps64 $d /"
    [ $round = 1 ] && for bs in 1 8 32; do
      timeout 60 /tmp/$d/build/tools/gpuattn generate --random 124m --batch $bs --prompt-len 512 --max-new 128 2>&1 | tail -1 | sed "s/^/B$bs-p512 $d /"; done
  done
done 2>&1 | tee $OUT/gen-ab.txt
# Then next-call-decode-ncu.sh's profile on a's build (main): the executed instructions per SASS
# line at page sizes 16 and 64 (skip it if the call is near its 600 s).
NCU_GPUATTN=/tmp/a/build/tools/gpuattn bash bench/results/2026-11-29-h200-s37/next-call-decode-ncu.sh
ts done
