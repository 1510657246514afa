#!/usr/bin/env bash
# Written at the end of s32 for the next session's first device call (not run yet): the GPU suites
# that c500058 (AttentionArgs::pdl, opt-in), 3a9d9c4/b3fe0a2 (the PDL gate) and 3891f17 touch,
# which no GPU has run; the PDL test against a copy without the decode kernel's wait (it must
# fail); then the floor a k/v scatter fused into the decode kernel could reach (skip-scatter.patch applied to a
# copy: wrong tokens, real step time), against the tree as it is, B1 in turn.
#   git rev-parse --short=12 HEAD > .commit; run with carry [".commit"]:
#   OUT=$OUT bash bench/results/2026-11-29-h200-s32/next-call.sh
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests _C > $OUT/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
F='AttentionCudaTest.*:Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Gpt2EngineCuda.*:AppendKv*'
timeout 150 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/cuda-tests.log 2>&1; ts "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  " $OUT/cuda-tests.log | tail -5
grep -A3 "DecodeCallsWaitForTheKernelAhead" $OUT/cuda-tests.log | head -5  # must run, not skip
(cd tests/python && PYTHONPATH=../../build-gpu/python:.:../../bench timeout 200 python3 -m pytest -q \
  test_fast_path.py test_flash_api.py test_tokenizer.py -k "kvcache or tokeniz or pretokeniz" \
  > $OUT/pytest.log 2>&1); ts "pytest rc $?"; tail -2 $OUT/pytest.log
# Can the PDL test fail? A copy with the decode kernel's wait removed must fail it (if it passes,
# the pool operations between the two calls serialize them, and the test needs another design).
rm -rf /tmp/nowait && mkdir /tmp/nowait && git archive HEAD | tar x -C /tmp/nowait
(cd /tmp/nowait && python3 - <<'PY'
p = "src/cuda/fwd_decode.cuh"
s = open(p).read()
anchor = "decode_kernel(const __grid_constant__ FwdParams p, const DecodeWork work) {"
i = s.index(anchor)
j = s.index("  ptx::griddep_wait();\n", i)
open(p, "w").write(s[:j] + s[j + len("  ptx::griddep_wait();\n"):])
PY
 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
 cmake --build build -j16 --target gpuattn_cuda_tests > $OUT/build-nowait.log 2>&1 &&
 timeout 60 build/tests/gpuattn_cuda_tests --gtest_filter='AttentionCudaTest.DecodeCallsWait*' > $OUT/nowait.log 2>&1)
ts "no-wait copy: test rc $? (must be nonzero)"; grep -E "PASSED|FAILED|SKIPPED" $OUT/nowait.log | head -3
# The floor: a copy of the tree with the scatter skipped in decode-only steps.
rm -rf /tmp/skip && mkdir /tmp/skip && git archive HEAD | tar x -C /tmp/skip
(cd /tmp/skip && patch -p1 -s < bench/results/2026-11-29-h200-s32/skip-scatter.patch &&
 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
 cmake --build build -j16 --target gpuattn_cli > $OUT/build-skip.log 2>&1); ts "skip build rc $?"
for i in 1 2 3; do
  for side in main skip; do
    G=build-gpu/tools/gpuattn; env=""
    [ $side = skip ] && G=/tmp/skip/build/tools/gpuattn && env="GPUATTN_EXP_SKIP_SCATTER=1"
    env $env timeout 30 $G generate --random 124m --batch 1 --prompt-len 16 --max-new 128 > $OUT/gen.tmp 2>&1
    echo "B1 $side: $(tail -1 $OUT/gen.tmp)"
  done
done | tee $OUT/skip-ab.txt
rm -f $OUT/gen.tmp; ts done
