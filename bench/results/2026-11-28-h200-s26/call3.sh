#!/usr/bin/env bash
# Device call 3: CTA pairs (2-CTA clusters) with K/V multicast for dense non-causal D128 / D256
# calls of an even number of row blocks a head (Tr::kClusterable, load_kv's relay). Build with
# the tests; the D128 and D256 non-causal GPU tests (pairs on by default) and memcheck/racecheck
# of a few of them; then an A/B in the same binary, GPUATTN_SM90_PAIRS=0 (a) against pairs (b),
# 5 rounds, on the sweep's non-causal D128 and D256 points and the named D128 shapes.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/cmake.log 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -2 $OUT/build.log
T=build-gpu/tests/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='*D128*:*D256*:-*causal*:*compensated*' --gtest_brief=1 > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran|Failure" $OUT/tests.log | head -12
F='*f16_B2_H4_Sq160_Sk1040_D256:*bf16_B1_H16kv1_S1000_D256:*f16_B2_H16kv4_S1500_D128:*f16_B1_H32_S1024_D128'
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/memcheck.log 2>&1; ts "memcheck rc=$?"; tail -2 $OUT/memcheck.log
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 1 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/racecheck.log 2>&1; ts "racecheck rc=$?"; tail -2 $OUT/racecheck.log
G=build-gpu/tools/gpuattn
mkdir -p $OUT/ab
for r in 1 2 3 4 5; do
  for side in a b; do
    pairs=1; [ $side = a ] && pairs=0
    left=$((570 - $(date +%s) + t0)); [ $left -lt 20 ] && break 2
    GPUATTN_SM90_PAIRS=$pairs timeout $left $G bench --device cuda --shapes sweep --only non-causal \
      --json $OUT/ab/bench-$side-$r.json > $OUT/ab/bench-$side-$r.log 2>&1
  done
  ts "round $r"
done
python3 bench/ab_summary.py $OUT/ab > $OUT/ab-summary.md 2>&1; grep -E "^\| " $OUT/ab-summary.md | head -30
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf ab
