#!/usr/bin/env bash
# Session 53, call 6: FP8 head dim 256 at 2217fd3, after call 5's landing (sm90_fp8_128x128 under 2048
# keys: two Q buffers, a one-stage V ring): the FP8 suite (each head-dim-256 case on both
# instantiations), the dequantized path, memcheck and racecheck on the head-dim-256 test,
# gpuattn_fp8_probe at head dim 256 once (against call 5's B column), and
# bench/fp8_attention.py --cudnn-fp8 --quick at head dim 256 (call 4 the same before).
# carry ["carry/nvidia_cudnn_frontend-1.32.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"]
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
python3 -m pip install -q --no-deps --no-index --target /tmp/cfe carry/nvidia_cudnn_frontend-*.whl ||
  { echo "wheel install failed"; exit 1; }
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_GPU_TEST_SHARDS=16 -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 &&
  cmake --build $B --target _C gpuattn_cuda_tests gpuattn_tests gpuattn_fp8_probe -j16 >> /tmp/build.txt 2>&1 ||
  { tail -30 /tmp/build.txt; exit 1; }
T=$B/tests/gpuattn_cuda_tests
$B/tests/gpuattn_tests --gtest_brief=1 --gtest_filter='TileConfig.*:KernelEnv.*' 2>&1 | tail -1
$T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
grep -cE 'sm90_fp8_128x128_d256$' $OUT/fp8-suite.txt
GPUATTN_FP8_KERNEL=0 $T --gtest_brief=1 --gtest_filter='Fp8*' 2>&1 | tail -1
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim256' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
timeout 60 $B/tools/gpuattn_fp8_probe 20 --head-dim 256 > $OUT/probe-d256.txt 2>&1; echo "probe rc $?"; cat $OUT/probe-d256.txt | tail -16
PYTHONPATH=$B/python:/tmp/cfe timeout 90 python3 bench/fp8_attention.py --head-dim 256 --repeats 3 \
  --quick --cudnn-fp8 --json $OUT/fp8-cudnn-fp8-d256.json > $OUT/bench-d256.txt 2>&1
echo "bench d256 rc $?"; grep -v -i warn $OUT/bench-d256.txt | tail -8
