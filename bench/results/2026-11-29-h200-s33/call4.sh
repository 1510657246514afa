#!/usr/bin/env bash
# s33 call 4 (the session's last device time): the engine policy (the kernel at one row and at
# most 2.4 M weights: the configuration call 3 measured faster); the engine GPU tests with the
# kernel forced at 1-8 rows and the engine's own choice; one generate A/B round.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
timeout 100 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[ +(OK|FAILED) " $OUT/engine-tests.log; grep -A2 "Failure" $OUT/engine-tests.log | head -12
G=build-gpu/tools/gpuattn
for sk in 0 1; do
  for args in "124m --batch 1 --prompt-len 16 --max-new 128" "1558m --batch 1 --prompt-len 16 --max-new 64" "124m --batch 8 --prompt-len 16 --max-new 128"; do
    GPUATTN_SKINNY_GEMM=$sk timeout 40 $G generate --random $args > $OUT/gen.tmp 2>&1
    echo "skinny=$sk $args: $(tail -1 $OUT/gen.tmp)"
  done
done | tee $OUT/gen-ab.txt; rm -f $OUT/gen.tmp; ts done
