#!/usr/bin/env bash
# Which weight loads of the GPT-2 engine's skinny kernels are issued ahead of their PDL wait, from
# the sm_90a SASS of a build (no GPU needed). Under programmatic dependent launch a kernel starts
# while the one ahead still runs; the weights (which no kernel writes) should be in flight by
# then, and ptxas may sink loads below griddepcontrol.wait (ACQBULK) on its own: it left 0-1 of 8
# ahead in the int8 kernel at 8 rows (bench/results/2026-11-29-h200-s36/notes.md). Per
# instantiation: 16-byte global loads (LDG.E.128) and global-to-shared copies (LDGSTS) before and
# after the wait, and the L2 prefetches (CCTL.E.PF2) ahead of it. --check fails unless every int8
# instantiation has its 8 loads (and its biases' copy) ahead and none after, and the dense one-row
# kernel (the engine's policy at one row) its first pass's 8 ahead (its LDGs only: its biases'
# LDGSTS is not counted). Needs cuobjdump (the CUDA toolkit's, or the
# nvidia-cuda-cuobjdump wheel's, on PATH).
#
#   scripts/pdl-loads.sh [--check] [BUILD_DIR]   (default build; its skinny.cu object)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
BUILD=${1:-build}
command -v cuobjdump >/dev/null || { echo "pdl-loads: cuobjdump not on PATH" >&2; exit 2; }
obj=$(find "$BUILD" -name 'skinny.cu.o' | head -1)
[ -n "$obj" ] || { echo "pdl-loads: no skinny.cu.o under $BUILD" >&2; exit 2; }
cuobjdump -sass -arch sm_90a "$obj" | awk -v check=$check '
  function flush() {
    if (name == "") return
    printf "  %-22s %2d ahead, %2d after the wait; %2d L2 prefetches ahead\n", name, before, after, pf
    if (check && q8 && (before < 8 || after != 0)) bad++
    if (check && !q8 && rows == 1 && before < 8) bad++
    name = ""
  }
  /Function : / {
    flush()
    if ($3 !~ /skinny_kernel/) next
    q8 = $3 ~ /ELb1E/
    match($3, /Li[0-9]+E/); rows = substr($3, RSTART + 2, RLENGTH - 3)
    name = ($3 ~ /bfloat16/ ? "bf16" : "f16") " rows<=" rows (q8 ? " int8" : " dense")
    seen = 0; before = 0; after = 0; pf = 0; found++; next
  }
  /ACQBULK/ { seen = 1 }
  /CCTL\.E\.PF2/ { if (name != "" && !seen) pf++ }
  # The dense kernels count their LDGs only: the staged bias copy (LDGSTS) is no weight load.
  /LDG\.E\.128|LDGSTS/ {
    if (name != "" && (q8 || $0 ~ /LDG\.E\.128/)) { if (seen) after++; else before++ }
  }
  END {
    flush()
    if (!found) { print "pdl-loads: no skinny_kernel in the sm_90a SASS" > "/dev/stderr"; exit 2 }
    if (bad) { print "pdl-loads: " bad " instantiations with loads missing ahead of the wait"; exit 1 }
  }'
