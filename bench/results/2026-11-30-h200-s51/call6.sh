#!/usr/bin/env bash
# Session 51, call 6: (1) the FP8 suite at main (the varlen padded-out cases on the register
# store; carried test binary), (2) ncu of our FP8 kernel against cuDNN's FP8 SDPA at the shapes
# where we trail it most (call 4: D128 B2 H16 S8192 dense 0.86x, D256 B4 H8 S4096 dense 0.89x):
# pipes, issue slots and stall reasons, to say where the FP8 main loop loses. Base clocks (ncu's
# default lock): read ratios between columns.
# carry ["carry/tests6.tar.xz", "carry/nvidia_cudnn_frontend-1.32.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"]
#   OUT=$OUT bash bench/results/2026-11-30-h200-s51/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/t6 && tar xJf carry/tests6.tar.xz -C /tmp/t6 --strip-components 1 || { echo "no carry"; exit 1; }
/tmp/t6/gpuattn_cuda_tests --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1 &
suite=$!
python3 -m pip install -q --no-deps --no-index --target /tmp/cfe carry/nvidia_cudnn_frontend-*.whl ||
  { echo "wheel install failed"; exit 1; }
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_GPU_TEST_SHARDS=16 -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 &&
  cmake --build $B --target _C -j16 >> /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
wait $suite
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'padded_out' $OUT/fp8-suite.txt | grep varlen | head -4
metrics=sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
metrics+=,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
metrics+=,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
metrics+=,sm__cycles_elapsed.avg.per_second
for shape in "128 2 8192" "256 4 4096"; do
  set -- $shape
  tag=d$1-s$3
  for be in ours cudnn-fp8; do
    PYTHONPATH=$B/python:bench:/tmp/cfe timeout 100 ncu -f --profile-from-start off -o $OUT/$tag-$be \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --metrics $metrics python3 bench/profile_fp8.py --backend $be --head-dim $1 --batch $2 \
      --seqlen $3 > $OUT/$tag-$be.log 2>&1
    echo "ncu $tag $be rc $?"; grep -E 'profile_fp8|ERR|rror' $OUT/$tag-$be.log | head -3
    ncu --import $OUT/$tag-$be.ncu-rep --page raw --csv > $OUT/$tag-$be-raw.csv 2>/dev/null
    ncu --import $OUT/$tag-$be.ncu-rep --print-summary per-kernel 2>/dev/null | grep -E '^  [a-zA-Z_]' | cut -c1-150 | head -4
  done
  python3 bench/ncu_pipes.py ours=$OUT/$tag-ours-raw.csv cudnn_fp8=$OUT/$tag-cudnn-fp8-raw.csv \
    > $OUT/$tag-pipes.md 2>&1
  echo "== $tag"; cat $OUT/$tag-pipes.md
done
