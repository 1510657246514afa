#!/usr/bin/env bash
# Session 43, call 6: the FP8 kernel's epilogue through shared memory (stmatrix, 16-byte row
# stores) and O rescaled before the P V issue, against call 4's kernel (fwd_sm90_fp8-call4.cu):
# the FP8 suite, then both Python modules built here and bench/fp8_attention.py alternated.
# fwd_sm90_fp8-call4.cu was call 4's kernel, src/cuda/fwd_sm90_fp8.cu at 767daf4 (git show
# 767daf4:src/cuda/fwd_sm90_fp8.cu); it is no longer kept in this folder.
set -u
cd "$(dirname "$0")/../../.." || exit 1
R=bench/results/2026-11-29-h200-s43
v=${V:-s43f}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || exit 1
timeout 200 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Fp8*' > $OUT/tests.txt 2>&1
echo "tests rc $?"; grep -E "FAILED|Failure|PASSED|fp8 " $OUT/tests.txt | head -20
rm -rf /tmp/base && mkdir /tmp/base && cp -r CMakeLists.txt cmake src include python tools tests scripts bench /tmp/base/ 2>/dev/null
cp $R/fwd_sm90_fp8-call4.cu /tmp/base/src/cuda/fwd_sm90_fp8.cu
for x in base new; do
  S=$([ $x = base ] && echo /tmp/base || echo .)
  ( cmake -S $S -B /tmp/build-$x -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $OUT/build-$x.txt 2>&1 && \
    cmake --build /tmp/build-$x --target _C -j16 >> $OUT/build-$x.txt 2>&1 ) || { echo build $x failed; tail -30 $OUT/build-$x.txt; exit 1; }
done
echo "built at $(date +%T)"
cd bench
for round in 1 2; do
  for x in base new; do
    echo "== $x round $round"
    PYTHONPATH=/tmp/build-$x/python timeout 150 python3 fp8_attention.py --repeats 1 --json $OUT/fp8-$x-$round.json > $OUT/fp8-$x-$round.txt 2>&1
    cut -c1-60 $OUT/fp8-$x-$round.txt | paste - - | head -0; awk '{print $1,$2,$3,$4,$7}' $OUT/fp8-$x-$round.txt | tr '\n' ';'; echo
  done
done
