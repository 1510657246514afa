#!/usr/bin/env bash
# Device call 1 (ninth session): wip/d64-split (.split, b481007) first run. Build with tests,
# ctest -R D64 under a per-test timeout, racecheck + memcheck of the forced split kernel, then a
# default-shape A/B against main 02eafd2 (.snap).
set -u
export GPUATTN_COMMIT=d64-split-b481007
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/t" "$OUT/s1"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
cmake -S .split -B /tmp/bs -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON >$OUT/t/cfg.log 2>&1 && cmake --build /tmp/bs -j16 >$OUT/t/build.log 2>&1; ts "build rc=$?"
ctest --test-dir /tmp/bs -R D64 --timeout 60 -j8 > $OUT/t/ctest-d64.log 2>&1; ts "ctest D64 rc=$?"
tail -4 $OUT/t/ctest-d64.log; grep -E "\*\*\*|Failed" $OUT/t/ctest-d64.log | head -20
export GPUATTN_KERNEL=sm90_ws_128x64_split
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/bs/tests/gpuattn_cuda_tests --gtest_filter='AwkwardLengths/*D64*' --gtest_brief=1 > $OUT/t/racecheck.log 2>&1; ts "racecheck rc=$?"; tail -3 $OUT/t/racecheck.log
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/bs/tests/gpuattn_cuda_tests --gtest_filter='AwkwardLengths/*D64*' --gtest_brief=1 > $OUT/t/memcheck.log 2>&1; ts "memcheck rc=$?"; tail -3 $OUT/t/memcheck.log
unset GPUATTN_KERNEL
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".split" OUT=$OUT/s1 timeout $((590-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s1/ab.log" 2>&1; ts "ab rc=$?"
cat "$OUT"/s1/ab/summary.md 2>/dev/null | grep -v "^$" || tail -20 "$OUT/s1/ab.log"
cd "$OUT" && tar czf all.tgz t s1 && rm -rf t s1
