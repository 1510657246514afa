#!/usr/bin/env bash
# Compiler launcher for the library's CUDA sources (CMake's CUDA_COMPILER_LAUNCHER, option
# GPUATTN_WGMMA_GUARD, default ON): runs the compile command it is given and fails it when ptxas
# reports that it serialized wgmma instructions ("Potential Performance Loss: wgmma.mma_async
# instructions are serialized", C7510-C7520). ptxas prints that as an info line and still
# succeeds, while the kernel then runs every GEMM one after the other. Branches around GEMMs with
# wgmmas in flight, guard predicates on wgmma, and an accumulator that shares registers with live
# values have each done it (bench/results/sm90-kernel-notes.md, eleventh session). Without a GPU,
# CI catches it at build time.
#
#   scripts/ptxas-guard.sh COMPILER ARGS...
set -uo pipefail
[ $# -gt 0 ] || { echo "ptxas-guard: usage: scripts/ptxas-guard.sh COMPILER ARGS..." >&2; exit 2; }
log=$(mktemp "${TMPDIR:-/tmp}/ptxas-guard.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
"$@" 2>"$log"
rc=$?
cat "$log" >&2
if [ $rc -eq 0 ] && grep -q "wgmma.mma_async instructions are serialized" "$log"; then
  out="?"
  prev=""
  for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
  echo "ptxas-guard: error: ptxas serialized wgmma instructions compiling $out (the lines above" \
       "name the kernel and the reason); fix the kernel, or configure with" \
       "-DGPUATTN_WGMMA_GUARD=OFF to build anyway" >&2
  [ "$out" != "?" ] && rm -f "$out"
  exit 1
fi
exit $rc
