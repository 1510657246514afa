#!/usr/bin/env bash
# Session 72, call 6: the review's mends. The 8-bit decode kernel's row factor computed in double
# before the clamp (a tiny k_scale's product could underflow float before a q row's positive
# shift brought it back); AlibiCallsTakeTheirPlainKernel's window cases (they had gone into the
# soft-cap test by mistake); two D64 ALiBi cases where the 3-consumer kernel pays by default.
# Expectation: every 8-bit, ALiBi and soft-cap dispatch test passes, under the default dispatch
# and the sm90_192. / sm90_2stage. / sm90_s3. forces; memcheck clean; 8-bit kernels' spills as
# before (paged E4M3 D256 16-24 bytes, dense E4M3 D256 up to 16).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s72-call6}
start=$(date +%s)
mkdir -p /tmp/logs
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
T=build-gpu/tests/gpuattn_cuda_tests
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 200 $T --gtest_filter='QuantizedKvCuda.*:*Alibi*:*Softcapped*' > /tmp/logs/shard$i.log 2>&1 &
done
GPUATTN_KERNEL=sm90_ws_192x128 timeout 200 $T --gtest_filter='*Alibi*D64*' > /tmp/logs/sm90_192.log 2>&1 &
GPUATTN_KERNEL=sm90_ws_128x128 timeout 200 $T --gtest_filter='*Alibi*D64*:*Alibi*D128*' > /tmp/logs/sm90_2stage.log 2>&1 &
GPUATTN_KERNEL=sm90_ws_128x128_s3 timeout 200 $T --gtest_filter='*Alibi*D128*' > /tmp/logs/sm90_s3.log 2>&1 &
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='QuantizedKvCuda.ScoresThatVanish*' > /tmp/logs/memcheck.log 2>&1 &
wait
echo "tests done after $(( $(date +%s) - start )) s"
for f in shard0 shard1 shard2 sm90_192 sm90_2stage sm90_s3; do
  echo "$f: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/$f.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/*.log | sort -u | head -20
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log) $(grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -2 | tr '\n' ' ')"
build-gpu/tests/gpuattn_tests --gtest_filter='TileConfig.*' 2>&1 | tail -1
cuobjdump -res-usage build-gpu/libgpuattn.a 2>/dev/null | grep -A1 decode_q8 > /tmp/logs/res-q8.txt
echo "decode_q8 kernels: $(grep -c Function /tmp/logs/res-q8.txt), with stack or local: $(grep -cE 'STACK:[1-9]|LOCAL:[1-9]' /tmp/logs/res-q8.txt)"
grep -B1 -E 'STACK:[1-9]' /tmp/logs/res-q8.txt | grep -oE 'decode_q8_kernelILi[0-9]+ELb[01]ELb[01]ELb[01]E|STACK:[0-9]+' | paste - - | sort | uniq -c
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
