#!/usr/bin/env bash
# s33 call 2: the engine's skinny linears (engine/cuda/skinny.cu, layernorm fused into c_attn /
# c_fc at up to 8 rows). Build; the engine GPU tests and the new kernel test; memcheck and
# racecheck on the kernel test; then generate with GPUATTN_SKINNY_GEMM=0 (cuBLASLt and the
# layernorm kernel, as before) and on, in turn: 124M B1 / B4 / B8 / B32, 1.5B B1.
# Expected: B1 124M 2,400 -> >= 2,700 tok/s (48 linears at 6-7 us -> 2-3 us, 24 layernorms gone);
# 1.5B B1 473 -> 700-900 (its linears from ~30% to >= 70% of the HBM bandwidth); B32 unchanged.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
grep -E "error|warning" $OUT/build.log | head -5
T=build-gpu/tests/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|Failure|fp64" $OUT/engine-tests.log | head -20
G=build-gpu/tools/gpuattn
run() {  # label skinny args...
  local label=$1 sk=$2; shift 2
  GPUATTN_SKINNY_GEMM=$sk timeout 90 $G generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label skinny=$sk: $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2 3; do
  for sk in 0 1; do
    run B1 $sk 124m --batch 1 --prompt-len 16 --max-new 128
    run B4 $sk 124m --batch 4 --prompt-len 16 --max-new 128
    run B8 $sk 124m --batch 8 --prompt-len 16 --max-new 128
    [ $round -le 2 ] && run B32 $sk 124m --batch 32 --prompt-len 512 --max-new 128
    run 1558m-B1 $sk 1558m --batch 1 --prompt-len 16 --max-new 64
  done
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.Skinny*:Gpt2EngineCuda.Batched*' --gtest_brief=1 > $OUT/memcheck.log 2>&1; ts "memcheck rc $?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -2
timeout 150 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.Skinny*' --gtest_brief=1 > $OUT/racecheck.log 2>&1; ts "racecheck rc $?"
grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
