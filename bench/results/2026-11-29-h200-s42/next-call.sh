#!/usr/bin/env bash
# For the next session's first device call (not run in s42: its device time was spent): the engine's
# CUDA suite at s42's HEAD, where these have run only through the CPU machine's compiler: the f16
# bound of the e4m3 decode rows (0.1, from call 9's measured 5.0-6.2e-2), the shared
# expect_near_own_forward, the dequant kernels' shared write_unit (dequant_q8's SASS changed: its
# unit's group hoisted), and CudaOps' quantized uploads through one upload_quantized. The int8 /
# int4 linear tests at 33 rows run the dequantized path. Build here first:
#   CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh s43a gpuattn_cuda_tests
# then run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/next-call.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s43a}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
timeout 200 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
echo "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A10 "Failure" $OUT/tests.txt | head -60
