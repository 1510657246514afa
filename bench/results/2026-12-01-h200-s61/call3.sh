#!/usr/bin/env bash
# Session 61, call 3: call 1's GPU suites (build, ctest on the 16 shards with python.pytest, the
# fuzz step) at the session's last code: the engine's capture abort and check_shapes, the scale
# bounds, the quantizer's scale ends and the CPU backend's run_parts.
#   OUT=$OUT bash bench/results/2026-12-01-h200-s61/call3.sh
GPUATTN_COMMIT=${GPUATTN_COMMIT:-s61-call3} exec bash "$(dirname "$0")/call1.sh"
