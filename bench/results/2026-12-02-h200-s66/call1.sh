#!/usr/bin/env bash
# Session 66, call 1: the GPU suites at HEAD, first run of ffe3724 (soft caps above 256 take an
# exact tanh; the 8-bit decode kernel's cap factor in double; Python's refused softmax_scale
# values leave the cache untouched). gpu-check correctness half (ctest on the 16 shards with
# python.pytest on CUDA, fuzz); PtxMath and the large-cap Softcap cases by name; memcheck over
# the capped cases; then one timing of caps 50 and 1000 against uncapped (expectation: cap 1000
# costs more than cap 50 where the softmax binds, D64/D128, by the Taylor branch's ~10 FMAs).
#   OUT=$OUT bash bench/results/2026-12-02-h200-s66/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s66-call1}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
T=build-gpu/tests/gpuattn_cuda_tests
$T --gtest_filter='PtxMath.*:*Softcap*:*softcap*' > $OUT/softcap-tests.log 2>&1
echo "softcap tests rc $?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/softcap-tests.log | tr '\n' ' ')"
grep -E '^\[  FAILED' $OUT/softcap-tests.log | head
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 "$san" --tool memcheck --error-exitcode 9 $T \
  --gtest_filter='Softcap/AttentionCuda.*:*Softcapped*:PtxMath.*' > $OUT/memcheck-softcap.log 2>&1
echo "memcheck softcap rc $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck-softcap.log | tr '\n' ' ')"
echo "suites done after $(( $(date +%s) - start )) s"
left=$(( 580 - ($(date +%s) - start) ))
if [ $left -gt 40 ]; then
  SH="B1 H16 S1024 D64; B4 H16 S4096 D128; B4 H8 S4096 D256 causal; B32 Hq32 Hkv8 Sq1 Sk4096 D128"
  for cap in "" " softcap50" " softcap1000"; do
    s=$(echo "$SH" | sed "s/;/$cap;/g; s/\$/$cap/")
    timeout $(( left / 3 )) build-gpu/tools/gpuattn bench --device cuda --shape "$s" \
      --json "$OUT/bench-cap${cap# softcap}.json" > "$OUT/bench-cap${cap# softcap}.log" 2>&1 || echo "bench '$cap' rc $?"
    grep -E 'TFLOP|us' "$OUT/bench-cap${cap# softcap}.log" | head -8
  done
fi
echo "done after $(( $(date +%s) - start )) s"
