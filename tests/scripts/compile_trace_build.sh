#!/usr/bin/env bash
# The sm_90a kernels compile as scripts/sm90-trace.sh builds them (-DGPUATTN_SM90_TRACE=1), through
# scripts/ptxas-guard.sh: the diagnostic build compiles and ptxas does not serialize its wgmmas
# (an in-kernel printf once did, so every trace timed serialized GEMMs), and each file prints
# its own stamps (its printer is not one weak symbol for the library). No GPU needed.
#   tests/scripts/compile_trace_build.sh NVCC SOURCE_DIR
set -uo pipefail
nvcc=${1:?usage: compile_trace_build.sh NVCC SOURCE_DIR}
src=${2:?usage: compile_trace_build.sh NVCC SOURCE_DIR}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for f in "$src"/src/cuda/fwd_sm90_*.cu; do
  name=$(basename "$f" .cu)
  if ! "$src/scripts/ptxas-guard.sh" "$nvcc" -gencode arch=compute_90a,code=sm_90a -std=c++17 \
      --expt-relaxed-constexpr -O3 -DGPUATTN_WITH_CUDA=1 -DGPUATTN_SM90_TRACE=1 \
      -I"$src/include" -I"$src/src" -c "$f" -o "$out/$name.o"; then
    echo "FAIL: the trace build of $name" >&2
    status=1
  elif nm "$out/$name.o" | grep -q " W .*print_sm90_trace"; then
    # A weak (inline) printer is one copy for the library, reading one file's stamp array.
    echo "FAIL: $name's print_sm90_trace is a weak symbol: it must be local to its file" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "the trace build of every sm_90a kernel compiles unserialized"
exit $status
