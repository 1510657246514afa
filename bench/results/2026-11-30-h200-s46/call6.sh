#!/usr/bin/env bash
# Session 46, call 6: the torch Python suites again (call 5: test_fast_path's recorder counted the
# general path's new check_only call), CPU and CUDA, this tree's module.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s46/call6.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
cmake -S . -B /tmp/build-B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/b.log 2>&1 && cmake --build /tmp/build-B --target _C -j16 >> /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
PYTHONPATH=/tmp/build-B/python timeout 200 python3 -m pytest -q -rs tests/python > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -3 $OUT/pytest.txt; grep -E "^FAILED" $OUT/pytest.txt | head
