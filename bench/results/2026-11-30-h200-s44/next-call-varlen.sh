#!/usr/bin/env bash
# Branch wip/fp8-varlen (not on main): varlen FP8 calls on the FP8 kernel (s44's main runs them on
# a dequantized q). Nothing of it has run on a GPU. Checks, in one call (~4 min):
#   - the FP8 suite: six varlen kernel cases (two with a query-less sequence of NaN K / V rows
#     inside the previous sequence's last key tile: the transpose's zeroing and the score mask),
#     the D64 varlen case on the dequantized path, and
#     every dense case (s45: a sequence's partial last V tile loads through a tail map, zeros past
#     the sequence; s44's transposer zeroing cost dense calls 3-10%, s45 call 6);
#   - memcheck and racecheck of the kernel cases;
#   - the Python FP8 tests on CUDA (the varlen test now on the kernel: rel L2 < 0.06 only);
#   - dense speed against main's kernel in balanced order (bench/ab_probe.py), needs a probe
#     built at main: carry both.
# Build here (on the branch; main's probe from a main build):
#   rm -f carry/* && CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh s45v gpuattn_cuda_tests gpuattn_fp8_probe
#   (and a main build's gpuattn_fp8_probe as carry/main-probe)
# then run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-30-h200-s44/next-call-varlen.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s45v}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 200 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "varlen|lens|Failure" -A3 $OUT/fp8.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 240 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
[ -x carry/main-probe ] && timeout 200 python3 bench/ab_probe.py --rounds ${ROUNDS:-2} carry/main-probe /tmp/$v/gpuattn_fp8_probe -- 30
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 150 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -3 $OUT/pytest.txt
