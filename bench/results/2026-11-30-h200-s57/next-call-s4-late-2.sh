#!/usr/bin/env bash
# Prepared in session 57 on branch wip/s4-late (not run), right after next-call-s4-late-1.sh on
# its build: the sanitizer steps (memcheck-sm90_s4 / racecheck-sm90_s4 force the 4-stage kernel on
# the small causal D64 shapes) and verify, then compare_torch (3 rounds, a shape a process) at
# the causal D64 points the kernel runs. Expected: causal B32 H32 S512 ~1.04x cuDNN (s57 call 1:
# 1.031 before), B16 H32 S1024 ~1.04-1.07x.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s57/next-call-s4-late-2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-wip-s4-late}
GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E "exit status|all passed|FAIL" $OUT/console.log | tail -30
cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DGPUATTN_BUILD_TESTS=OFF > /tmp/build-py.log 2>&1 &&
  cmake --build build-py --target _C -j16 >> /tmp/build-py.log 2>&1
echo "build-py rc $?"
cases=(float16,32,32,32,512,512,64,1 float16,16,32,32,1024,1024,64,1 bfloat16,8,32,32,512,512,64,1)
mkdir -p /tmp/cmp
i=0
for c in "${cases[@]}"; do
  i=$((i + 1))
  PYTHONPATH=build-py/python timeout 60 python3 bench/compare_torch.py --repeats 3 \
    --json /tmp/cmp/$i.json --case "$c" > /tmp/cmp/$i.txt 2>&1
  echo "rc $?"; tail -2 /tmp/cmp/$i.txt
done > $OUT/compare.txt 2>&1
python3 - <<'PY' | tee $OUT/compare-summary.txt
import glob, json, os
for f in sorted(glob.glob("/tmp/cmp/*.json"), key=lambda p: int(os.path.basename(p)[:-5])):
    for r in json.load(open(f)).get("cases", []):
        if "ours_ms" in r:
            print("%-8s B%d H%d S%d D%d%s  ours %.2f us  cuDNN %.2f us  cuDNN/ours %.3f" % (
                r["dtype"], r["batch"], r["heads_q"], r["seqlen_q"], r["head_dim"],
                " causal" if r["causal"] else "", 1e3 * r["ours_ms"],
                1e3 * r.get("cudnn_ms", float("nan")), r.get("cudnn_ms", float("nan")) / r["ours_ms"]))
PY
