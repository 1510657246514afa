#!/usr/bin/env bash
# Configure refuses CUDA architecture lists that make a plain sm_90 image (CMakeLists.txt): each
# must fail before any compile, with an error that names the entry. Scratch build trees only.
#   test_cuda_arch_guard.sh SOURCE_DIR CUDA_COMPILER
set -u
src=$1
nvcc=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail=0
for list in "90" "80;90-real" "90a;90-virtual" "native" "all-major"; do
  out=$(cmake -S "$src" -B "$scratch/b" -DGPUATTN_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
        -DCMAKE_CUDA_ARCHITECTURES="$list" -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF \
        -DGPUATTN_PYTHON=OFF 2>&1)
  rc=$?
  entry=${list##*;}
  if [ $rc -eq 0 ]; then
    echo "FAIL: '$list' configured"; fail=1
  elif ! grep -q "CMAKE_CUDA_ARCHITECTURES entry '$entry'" <<<"$out"; then
    echo "FAIL: '$list' failed without naming '$entry':"; echo "$out" | tail -8; fail=1
  else
    echo "ok: '$list' refused, naming '$entry'"
  fi
  rm -rf "$scratch/b"
done
exit $fail
