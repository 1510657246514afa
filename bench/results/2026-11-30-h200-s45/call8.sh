#!/usr/bin/env bash
# Session 45, call 8: branch wip/fp8-varlen at a58db19 (the FP8 kernel instantiated for varlen or
# not; the dense one takes the call's lengths as launch constants, as main's kernel does; V tail
# map for varlen). The FP8 suite, memcheck of the kernel cases (racecheck was clean in call 7 with
# the same barriers), dense speed against main's kernel (bench/ab_probe.py, 2 rounds), and the
# Python FP8 tests built from the branch. Carry: s45x (the branch's gpuattn_cuda_tests and
# gpuattn_fp8_probe, built as call 7's), main-probe.xz, fp8-varlen-src.tar.gz.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call8.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
R=$(pwd)
rm -rf /tmp/v && mkdir -p /tmp/v /tmp/s45x && tar xzf carry/fp8-varlen-src.tar.gz -C /tmp/v || exit 1
tar xJf carry/s45x.tar.xz -C /tmp/s45x --strip-components 1
xz -dc carry/main-probe.xz > /tmp/main-probe && chmod +x /tmp/main-probe
T=/tmp/s45x/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S /tmp/v/src -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "lens|Failure" -A2 $OUT/fp8.txt | head -12
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 150 $SAN --tool memcheck --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
timeout 150 python3 $R/bench/ab_probe.py --rounds 2 /tmp/main-probe /tmp/s45x/gpuattn_fp8_probe -- 30
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
cd /tmp/v/src && PYTHONPATH=$B/python timeout 120 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -2 $OUT/pytest.txt
