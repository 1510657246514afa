#!/usr/bin/env bash
# Pipe activity and stall reasons of one launch of ours and of torch SDPA's cuDNN backend on the
# same inputs, for each named case of bench/profile_cases.py: ncu's SpeedOfLight,
# ComputeWorkloadAnalysis and WarpStateStats, exported as raw CSV (CASE-ours-raw.csv,
# CASE-cudnn-raw.csv) and tabled side by side by bench/ncu_pipes.py (CASE-pipes.md, also printed).
# ncu locks the clocks to base unless NCU_CLOCKS=none: read ratios between columns, not absolute
# times.
#
#   OUT=/some/dir scripts/ncu-pipes.sh short-d64 causal-d64-512
#   env: NCU_BUILD_DIR=DIR  build directory with the python module (default build-gpu)
#        NCU_CLOCKS=base|none  ncu's --clock-control (default base)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${NCU_BUILD_DIR:-build-gpu}
OUT_DIR=${OUT:-$BUILD/ncu}
mkdir -p "$OUT_DIR"
[ $# -gt 0 ] || { echo "usage: scripts/ncu-pipes.sh CASE..." >&2; exit 2; }
metrics=sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
metrics+=,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
metrics+=,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
metrics+=,sm__cycles_elapsed.avg.per_second
profile() {  # REPORT KERNEL_FILTER CASE [ARGS...]
  local rep=$1 filter=$2
  shift 2
  local base=(ncu -f -o "$rep" -k "$filter" --launch-skip 1 --launch-count 1
    --clock-control "${NCU_CLOCKS:-base}" --section SpeedOfLight
    --section ComputeWorkloadAnalysis --section WarpStateStats)
  # A metric this ncu does not know fails the whole run: then the sections alone.
  PYTHONPATH="$BUILD/python:bench" "${base[@]}" --metrics "$metrics" \
    python3 bench/profile_cases.py "$@" ||
    PYTHONPATH="$BUILD/python:bench" "${base[@]}" python3 bench/profile_cases.py "$@"
  ncu --import "$rep.ncu-rep" --page raw --csv > "$rep-raw.csv"
}
for c in "$@"; do
  profile "$OUT_DIR/$c-ours" regex:fwd_kernel "$c"
  profile "$OUT_DIR/$c-cudnn" 'regex:sdpa|fmha|flash|cudnn' "$c" --backend cudnn
  python3 bench/ncu_pipes.py --list "ours=$OUT_DIR/$c-ours-raw.csv" \
    "cudnn=$OUT_DIR/$c-cudnn-raw.csv" > "$OUT_DIR/$c-pipes.md"
  echo "== $c"
  grep '^|' "$OUT_DIR/$c-pipes.md"
done
