#!/usr/bin/env bash
# s44 call 3: V transposed inside the FP8 kernel (no V^T pass). The FP8 suite, memcheck and
# racecheck of its kernel cases (carried tests), an A/B of the FP8 row against s43's kernel (two
# Python modules built here: /tmp/old has fwd_sm90_fp8-s43.cu in place), then the full
# bench/fp8_attention.py on the new kernel.
# fwd_sm90_fp8-s43.cu was s43's kernel as committed (git show 12857df:src/cuda/fwd_sm90_fp8.cu);
# it is no longer kept in this folder.
set -u
cd "$(dirname "$0")/../../.." || exit 1
R=bench/results/2026-11-30-h200-s44
v=${V:-s44b}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
mkdir -p /tmp/old && cp -r $(ls -A | grep -v -E '^(carry|\.git)$') /tmp/old/ && cp $R/fwd_sm90_fp8-s43.cu /tmp/old/src/cuda/fwd_sm90_fp8.cu
build() {
  cmake -S $1 -B $2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $2.log 2>&1 && cmake --build $2 --target _C -j8 >> $2.log 2>&1
}
( build . /tmp/build-new ) & pn=$!
( build /tmp/old /tmp/build-old ) & po=$!
timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "fp8_.*D128 |Failure" -A3 $OUT/fp8.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
wait $pn || { echo new build failed; tail -20 /tmp/build-new.log; exit 1; }
wait $po || { echo old build failed; tail -20 /tmp/build-old.log; exit 1; }
for round in 1 2; do
  PYTHONPATH=/tmp/build-old/python timeout 100 python3 $R/ab_fp8.py old >> $OUT/ab.txt 2>&1
  PYTHONPATH=/tmp/build-new/python timeout 100 python3 $R/ab_fp8.py new >> $OUT/ab.txt 2>&1
done
grep -v Warn $OUT/ab.txt | sort -k2,5 -s | head -80
PYTHONPATH=/tmp/build-new/python timeout 220 python3 bench/fp8_attention.py --json $OUT/fp8.json > $OUT/bench.txt 2>&1
echo "bench rc $?"; grep -v -i warn $OUT/bench.txt | tail -20
