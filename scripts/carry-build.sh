#!/usr/bin/env bash
# Builds device binaries on this (CPU) machine for sm_90a and packs them for the device tool's
# `carry`, so that a device call spends its minutes running rather than building (a build there
# takes ~2.5 of them; s38's calls ran binaries built here). The binaries link cudart and
# cuBLASLt dynamically and need glibc 2.34 (checked below); static libstdc++ is not used, as
# it pulls in glibc 2.36 symbols.
#   scripts/carry-build.sh NAME [TARGET...]   default targets: gpuattn_cli gpuattn_cuda_tests
# makes build-carry-NAME/ (reused: a second run rebuilds only what changed) and carry/NAME.tar.xz
# (the stripped executables under NAME/; all of carry/ must stay under the 64 MiB carry limit).
# CARRY_BUILD_DIR=DIR builds in DIR instead (an sm_90a build of this tree already made: only what
# changed is rebuilt).
# On the device (run with carry ["carry"]):
#   mkdir -p /tmp/NAME && tar xJf carry/NAME.tar.xz -C /tmp/NAME --strip-components 1
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/carry-build.sh NAME [TARGET...]" >&2; exit 2; }
name=$1
shift
[[ $name =~ ^[A-Za-z0-9_-]+$ ]] || { echo "carry-build: NAME \"$name\": letters, digits, _ and - only" >&2; exit 2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gpuattn_cli gpuattn_cuda_tests)
export PATH=/usr/local/cuda/bin:$PATH
dir=${CARRY_BUILD_DIR:-build-carry-$name}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null
ninja -C "$dir" "${targets[@]}"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
for t in "${targets[@]}"; do
  case $t in
    gpuattn_cli) file=gpuattn ;;                         # the CLI target's executable
    gpuattn_kernel_trace) file=libgpuattn_kernel_trace.so ;;  # the tracer is a shared library
    *) file=$t ;;
  esac
  f=
  for d in "$dir/tools" "$dir/tests"; do
    [ -f "$d/$file" ] && { f=$d/$file; break; }
  done
  [ -n "$f" ] || { echo "carry-build: no $file in $dir/tools or $dir/tests (target $t)" >&2; exit 1; }
  cp "$f" "$stage/$name/"
done
strip "$stage/$name"/*
# The newest glibc symbol version any of them needs, against the 2.34 that ran there in s38
# (newer was not tried).
need=$(objdump -T "$stage/$name"/* | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 || true)
if [ -n "$need" ] && [ "$(printf '%s\nGLIBC_2.34\n' "$need" | sort -V | tail -1)" != GLIBC_2.34 ]; then
  echo "carry-build: the binaries need $need; binaries needing GLIBC_2.34 ran on the device" >&2
  exit 1
fi
mkdir -p carry
tar cJf "carry/$name.tar.xz" -C "$stage" "$name"
ls -la carry/
total=$(du -cb carry/* | tail -1 | cut -f1)
if [ "$total" -gt $((64 * 1024 * 1024)) ]; then
  echo "carry-build: carry/ holds $total bytes, over the 64 MiB carry limit: remove some" >&2
  exit 1
fi
