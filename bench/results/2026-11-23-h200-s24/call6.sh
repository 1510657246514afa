#!/usr/bin/env bash
# Device call 6: 4 K/V stages for the 2-consumer head-dim-64 dense kernel (.x; the one causal
# calls under 2048 rows run), after call 4's ncu had a third stage take D128 S512's load waits
# (long_scoreboard) from 1.34 to 0.64 warps per issue; D64 causal S512 waits 0.61 against
# cuDNN's 0.52 (s23 call 9). The D64 and causal GPU tests of .x, then an A/B of the D64 causal
# sweep points against main (.snap = c77930f), 5 rounds (S2048 and up: 3 consumers, unchanged:
# the control).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S .x -B build-x -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-x -j16 --target gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 100 build-x/tests/gpuattn_cuda_tests --gtest_filter='*D64*:*Causal*:*causal*' > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
mkdir -p $OUT/s1
left=$((585 - $(date +%s) + t0))
AB_B_DIRS=".x" AB_SHAPES=sweep AB_ONLY="D64 causal" AB_SPARSE=0 OUT=$OUT/s1 timeout $left scripts/ab.sh .snap 5 > $OUT/s1/ab.log 2>&1; ts "ab D64 causal rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -16
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1
