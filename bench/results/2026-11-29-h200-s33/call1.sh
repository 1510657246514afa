#!/usr/bin/env bash
# s33 call 1: session 32's next-call.sh, made cheaper: one build tree, the two variants rebuilt in
# place (the CLI is static, so main's binary is copied aside first).
#  1. the GPU suites c500058 / 3a9d9c4 / b3fe0a2 / 3891f17 touch (never run on a GPU), and the
#     kvcache / tokenizer pytest;
#  2. the engine with the k/v scatter skipped in decode-only steps (s32 skip-scatter.patch: wrong
#     tokens, real step time) against main, B1, 3 rounds in turn: the floor of a fused scatter;
#  3. the PDL test against a build whose decode kernel lacks griddepcontrol.wait (must fail).
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests _C > $OUT/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
F='AttentionCudaTest.*:Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Gpt2EngineCuda.*:AppendKv*'
timeout 200 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/cuda-tests.log 2>&1; ts "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  |SKIPPED" $OUT/cuda-tests.log | tail -8
timeout 60 $T --gtest_filter='AttentionCudaTest.DecodeCallsWait*' > $OUT/pdl-test.log 2>&1; ts "pdl test rc $?"
grep -E "OK|FAILED|SKIPPED" $OUT/pdl-test.log | head -3
(cd tests/python && PYTHONPATH=../../build-gpu/python:.:../../bench timeout 200 python3 -m pytest -q \
  test_fast_path.py test_flash_api.py test_tokenizer.py -k "kvcache or tokeniz or pretokeniz" \
  > $OUT/pytest.log 2>&1); ts "pytest rc $?"; tail -2 $OUT/pytest.log
cp build-gpu/tools/gpuattn /tmp/gpuattn-main
patch -p1 -s < bench/results/2026-11-29-h200-s32/skip-scatter.patch &&
  cmake --build build-gpu -j16 --target gpuattn_cli > $OUT/build-skip.log 2>&1; ts "skip build rc $?"
cp build-gpu/tools/gpuattn /tmp/gpuattn-skip
patch -p1 -R -s < bench/results/2026-11-29-h200-s32/skip-scatter.patch
for i in 1 2 3; do
  for side in main skip; do
    env=""; [ $side = skip ] && env="GPUATTN_EXP_SKIP_SCATTER=1"
    env $env timeout 30 /tmp/gpuattn-$side generate --random 124m --batch 1 --prompt-len 16 --max-new 128 > $OUT/gen.tmp 2>&1
    echo "B1 $side: $(tail -1 $OUT/gen.tmp)"
  done
done | tee $OUT/skip-ab.txt
rm -f $OUT/gen.tmp; ts "skip A/B done"
python3 - <<'PY'
p = "src/cuda/fwd_decode.cuh"
s = open(p).read()
anchor = "decode_kernel(const __grid_constant__ FwdParams p, const DecodeWork work) {"
i = s.index(anchor)
j = s.index("  ptx::griddep_wait();\n", i)
open(p, "w").write(s[:j] + s[j + len("  ptx::griddep_wait();\n"):])
PY
git diff --stat
cmake --build build-gpu -j16 --target gpuattn_cuda_tests > $OUT/build-nowait.log 2>&1; ts "no-wait build rc $?"
for i in 1 2 3; do
  timeout 60 $T --gtest_filter='AttentionCudaTest.DecodeCallsWait*' > $OUT/nowait-$i.log 2>&1
  ts "no-wait copy, try $i: test rc $? (must be nonzero)"; grep -E "^\[ +(OK|FAILED|SKIPPED)" $OUT/nowait-$i.log | head -2
done
git checkout src/cuda/fwd_decode.cuh; ts done
