#!/usr/bin/env bash
# Session 46, call 1, on branch wip/fp8-varlen rebased on main 4a981b9: s45's
# next-call-fp8-varlen.sh (the FP8 suite with its varlen kernel cases, memcheck and racecheck of
# them, dense FP8 speed A B B A against main's probe over 3 rounds, the Python FP8 tests), plus
# main's VarlenNeighbours + Varlen suites (first run since 4a981b9's tail map through encode) and
# a first timing of `gpuattn bench --shapes varlen` (twice).
# Carry: s46v (gpuattn_cuda_tests, gpuattn_fp8_probe, gpuattn from build-s38 on the branch) and
# main-probe.xz (main's gpuattn_fp8_probe).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s46/call1.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s46v && tar xJf carry/s46v.tar.xz -C /tmp/s46v --strip-components 1 || exit 1
xz -dc carry/main-probe.xz > /tmp/main-probe && chmod +x /tmp/main-probe
T=/tmp/s46v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "lens|Failure" -A2 $OUT/fp8.txt | head -12
timeout 120 $T --gtest_filter='*VarlenNeighbours*:Varlen/*' > $OUT/neigh.txt 2>&1
echo "varlen rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/neigh.txt | tr '\n' ' ')"
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
timeout 200 python3 bench/ab_probe.py --rounds 3 /tmp/main-probe /tmp/s46v/gpuattn_fp8_probe -- 30
for r in 1 2; do
  timeout 120 /tmp/s46v/gpuattn bench --shapes varlen --json $OUT/varlen-$r.json 2>&1 | tail -8
done
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 120 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -2 $OUT/pytest.txt
