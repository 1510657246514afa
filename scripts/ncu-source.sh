#!/usr/bin/env bash
# Per-instruction warp-state sampling of one fwd_kernel launch for each named case of
# bench/profile_cases.py: ncu's SourceCounters and WarpStateStats, exported as the SASS source page
# (CSV, one row per instruction with its source line: the build has -lineinfo) and the details page.
# bench/ncu_source_summary.py sums the samples over source-line ranges; CASE-stalls.txt has the
# launch's samples by stall reason (bench/ncu_stalls.py).
#
#   OUT=/some/dir scripts/ncu-source.sh window-1024 causal-short
#   env: NCU_BUILD_DIR=DIR  build directory with the python module (default build-gpu)
#        NCU_KERNEL=FILTER  ncu's -k (default regex:fwd_kernel)
#        NCU_CASE_ARGS=...  more arguments for profile_cases.py (e.g. "--backend cudnn" with
#                           NCU_KERNEL='regex:sdpa|fmha|flash|cudnn': the anchor's kernel)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${NCU_BUILD_DIR:-build-gpu}
OUT_DIR=${OUT:-$BUILD/ncu}
mkdir -p "$OUT_DIR"
[ $# -gt 0 ] || { echo "usage: scripts/ncu-source.sh CASE..." >&2; exit 2; }
for c in "$@"; do
  rep="$OUT_DIR/$c"
  # shellcheck disable=SC2086  # NCU_CASE_ARGS: several words
  PYTHONPATH="$BUILD/python:bench" ncu -f -o "$rep" -k "${NCU_KERNEL:-regex:fwd_kernel}" \
    --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --section InstructionStats --import-source yes \
    python3 bench/profile_cases.py "$c" ${NCU_CASE_ARGS:-}
  # SASS with its CUDA source lines where this ncu correlates them, else SASS alone (a kernel
  # without line info, such as cuDNN's, gives a warning and no rows for cuda,sass).
  ncu --import "$rep.ncu-rep" --page source --csv --print-source cuda,sass \
    > "$OUT_DIR/$c-sass.csv" || true
  if [ "$(wc -l < "$OUT_DIR/$c-sass.csv")" -lt 2 ]; then
    ncu --import "$rep.ncu-rep" --page source --csv --print-source sass > "$OUT_DIR/$c-sass.csv"
  fi
  ncu --import "$rep.ncu-rep" --page details > "$OUT_DIR/$c-details.txt"
  # The samples by stall reason (bench/ncu_stalls.py), from the raw page.
  ncu --import "$rep.ncu-rep" --page raw --csv > "$OUT_DIR/$c-raw.csv"
  python3 bench/ncu_stalls.py "$OUT_DIR/$c-raw.csv" > "$OUT_DIR/$c-stalls.txt" || true
done
