#!/usr/bin/env bash
# Session 43, call 5: ping-pong between the FP8 kernel's consumers. Its suite (2 stages), then
# bench/fp8_attention.py on the Python module built here with 2 K/V stages and with 3
# (GPUATTN_FP8_STAGES), in turn.
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s43e}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || exit 1
timeout 200 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Fp8*' > $OUT/tests.txt 2>&1
echo "tests rc $?"; grep -E "FAILED|Failure|PASSED" $OUT/tests.txt | head
for st in 2 3; do
  B=/tmp/build-py$st
  ( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DCMAKE_CUDA_FLAGS=-DGPUATTN_FP8_STAGES=$st > $OUT/build$st.txt 2>&1 && \
    cmake --build $B --target _C -j16 >> $OUT/build$st.txt 2>&1 ) || { echo build failed; tail -30 $OUT/build$st.txt; exit 1; }
done
echo "built at $(date +%T)"
cd bench
for st in 2 3; do
  echo "== stages $st"
  PYTHONPATH=/tmp/build-py$st/python timeout 200 python3 fp8_attention.py --repeats 2 --json $OUT/fp8-s$st.json 2>&1 | tee $OUT/fp8-s$st.txt
done
