#!/usr/bin/env bash
# Session 51, call 4 (prepared in s50; B now build-gpu with the Python module added): our FP8 kernel against cuDNN's own FP8 SDPA (cudnn-frontend
# sdpa_fp8), the stricter anchor than cuDNN bf16, through bench/fp8_attention.py --cudnn-fp8.
# The device image has no cudnn-frontend and reaches no registry: carry its wheel (downloaded in
# s50 into carry/, ignored by git; else `pip download --no-deps nvidia-cudnn-frontend==1.32.0
# --python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64 -d carry`). It loads
# the cuDNN library torch ships (nvidia-cudnn-cu13); FP8 SDPA needs cuDNN >= 9.1 (not 9.10.0).
# Run with carry ["carry/nvidia_cudnn_frontend-1.32.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"]:
#   OUT=$OUT bash bench/results/2026-11-30-h200-s51/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
python3 -m pip install -q --no-deps --no-index --target /tmp/cfe carry/nvidia_cudnn_frontend-*.whl ||
  { echo "wheel install failed"; exit 1; }
PYTHONPATH=/tmp/cfe python3 -c 'import cudnn, torch; print("cudnn-frontend", cudnn.__version__, "backend", cudnn.backend_version(), "torch cudnn", torch.backends.cudnn.version())'
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_GPU_TEST_SHARDS=16 \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 &&
  cmake --build $B --target _C -j16 >> /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
for d in 128 64 256; do
  quick=; [ $d = 128 ] || quick=--quick
  PYTHONPATH=$B/python:/tmp/cfe timeout $([ $d = 128 ] && echo 200 || echo 130) python3 bench/fp8_attention.py --head-dim $d --repeats 3 \
    $quick --cudnn-fp8 --json $OUT/fp8-cudnn-fp8-d$d.json > $OUT/bench-d$d.txt 2>&1
  echo "bench d$d rc $?"; grep -v -i warn $OUT/bench-d$d.txt | tail -17
done
