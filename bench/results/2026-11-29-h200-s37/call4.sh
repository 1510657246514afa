#!/usr/bin/env bash
# s37 call 4 (main c1f14a0): ncu of the two kernels the call-1/3 traces put first.
# 1. decode_kernel at 124M B128 prompt 512: 70 us a layer (822 us of a 1.22 ms step) for ~226 MB of
#    K/V, ~3.3 TB/s. Question: what holds it below ~4.3 TB/s (occupancy, DRAM efficiency of the
#    paged cache's 128-byte rows at a 1536-byte pitch, tails of 1536 CTAs over ~4 waves)?
# 2. skinny_kernel<half,1,true> (int8) at 1.5B B1: in the graph each linear adds ~5 us plus its
#    bytes at ~4.5 TB/s (attn proj, 2.6 MB: 5.6 us). Question: its time alone (ncu serializes),
#    so the fixed part's share inside the kernel against the PDL chain between kernels.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/call4.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
rm -rf /tmp/t && mkdir /tmp/t && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/t && cd /tmp/t
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build build -j16 --target gpuattn_cli > $OUT/build.log 2>&1; ts "build rc $?"
G=build/tools/gpuattn
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
timeout 150 ncu $S --kernel-name regex:decode_kernel --launch-skip 300 --launch-count 1 \
  $G generate --random 124m --batch 128 --prompt-len 512 --max-new 48 --warmup 0 > $OUT/ncu-decode.txt 2>&1
ts "ncu decode rc $?"
timeout 200 ncu $S --kernel-name regex:skinny_kernel --launch-skip 400 --launch-count 4 \
  $G generate --random 1558m --batch 1 --prompt-len 16 --max-new 8 --warmup 0 --linear-weights int8 > $OUT/ncu-q8.txt 2>&1
ts "ncu int8 rc $?"
grep -E "skinny_kernel|decode_kernel|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Waves Per SM|Grid Size|Cluster|Stall|One or More|No Eligible" $OUT/ncu-decode.txt $OUT/ncu-q8.txt | cut -c1-160 | head -90
