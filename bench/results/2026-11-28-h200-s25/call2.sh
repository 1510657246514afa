#!/usr/bin/env bash
# Device call 2: python.pytest, then the sanitizer half of the GPU check (memcheck and racecheck on
# small shapes of every kernel: under auto the causal D64 ones now run sm90_ws_128x128_s4) and
# verify; then memcheck and racecheck once more on the small causal D64 shapes alone.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 240 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 200 ctest --test-dir build-gpu -R python.pytest --timeout 190 > $OUT/pytest.log 2>&1; ts "pytest rc=$?"
grep -E "tests passed|tests failed" $OUT/pytest.log | head -2
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 timeout 300 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; ts "gpu-check rc=$?"
mkdir -p /tmp/sl && tar xzf $OUT/logs.tar.gz -C /tmp/sl 2>/dev/null
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" /tmp/sl/memcheck-*.log /tmp/sl/racecheck-*.log | sort | uniq -c
grep -hE "all passed|FAILED|passed" /tmp/sl/verify.log | tail -2
T=build-gpu/tests/gpuattn_cuda_tests
small='AwkwardLengths/*D64*causal*:SeqlenMismatch/*D64*causal*:Varlen/*H8_D64*causal*:GroupedHeads/*D64*causal*'
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 $T --gtest_filter="$small" --gtest_brief=1 > $OUT/memcheck-s4.log 2>&1; ts "memcheck s4 rc=$?"; grep -E "ERROR SUMMARY|tests ran|PASSED|FAILED" $OUT/memcheck-s4.log | tail -3
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 1 $T --gtest_filter="AwkwardLengths/*D64*causal*:SeqlenMismatch/*D64*causal*" --gtest_brief=1 > $OUT/racecheck-s4.log 2>&1; ts "racecheck s4 rc=$?"; grep -E "RACECHECK SUMMARY|tests ran|PASSED|FAILED" $OUT/racecheck-s4.log | tail -3
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete
