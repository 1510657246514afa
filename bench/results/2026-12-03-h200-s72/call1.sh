#!/usr/bin/env bash
# Session 72, call 1 (session 71's call 5, which the device refused then; run as it was): ALiBi calls of plain torch tensors take the
# Python fast path (_plain_slopes; before, the general path's 45-108 us of host time a call made
# the short ALiBi decode rows of calls 3-4 host-bound). pytest test_alibi.py on CUDA, and
# quantized_decode.py --alibi --quick: the ALiBi rows' host time should fall to the plain rows'
# (~20-35 us).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s72-call1}
start=$(date +%s)
mkdir -p /tmp/logs
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
PYTHONPATH=build-gpu/python timeout 100 python3 -m pytest -q tests/python/test_alibi.py > /tmp/logs/pytest.log 2>&1
echo "pytest test_alibi.py: $(tail -1 /tmp/logs/pytest.log) after $(( $(date +%s) - start )) s"
grep -E "^FAILED|Error" /tmp/logs/pytest.log | head -5
PYTHONPATH=build-gpu/python:bench timeout 80 python3 bench/quantized_decode.py --alibi --quick --repeats 2 \
  --json $OUT/quantized_decode_alibi.json > /tmp/logs/qd.log 2>&1
echo "quantized_decode --alibi rc $? after $(( $(date +%s) - start )) s"
grep -v "^$" /tmp/logs/qd.log | tail -24
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
