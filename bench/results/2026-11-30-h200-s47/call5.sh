#!/usr/bin/env bash
# Session 47, call 5: Fp8AttentionCuda.KernelMatchesTheReference aborts with "stack smashing
# detected" in a device-built binary (call 4; gcc 13.3 protects stacks, the CPU machine's gcc 12
# does not, and a CPU-only build with -fstack-protector-all runs the same host paths clean). Which
# case (stdout unbuffered), then an AddressSanitizer build of the test binary for the faulting write.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s47/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
A="-fsanitize=address -fno-omit-frame-pointer -g"
(cmake -S . -B /tmp/basan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DCMAKE_CXX_FLAGS="$A" -DCMAKE_CUDA_FLAGS="-Xcompiler=-fsanitize=address,-fno-omit-frame-pointer -g" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" > /tmp/asan-cfg.log 2>&1 && \
  cmake --build /tmp/basan --target gpuattn_cuda_tests -j10 > /tmp/asan-b.log 2>&1; echo "asan build rc $?" >> /tmp/asan-b.log) & pa=$!
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/cfg.log 2>&1 && cmake --build build-gpu --target gpuattn_cuda_tests -j6 > /tmp/b.log 2>&1 \
  || { tail -20 /tmp/cfg.log /tmp/b.log; }
ts built
stdbuf -o0 -e0 timeout 120 build-gpu/tests/gpuattn_cuda_tests --gtest_filter=Fp8AttentionCuda.KernelMatchesTheReference > $OUT/fp8-protected.txt 2>&1
ts "protected rc $?"; tail -4 $OUT/fp8-protected.txt
wait $pa; tail -3 /tmp/asan-b.log; ts "asan built"
ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:replace_intrin=0 timeout 200 /tmp/basan/tests/gpuattn_cuda_tests \
  --gtest_filter=Fp8AttentionCuda.KernelMatchesTheReference > $OUT/fp8-asan.txt 2>&1
ts "asan rc $?"; grep -A30 'ERROR: AddressSanitizer' $OUT/fp8-asan.txt | head -50
