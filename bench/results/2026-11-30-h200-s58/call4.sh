#!/usr/bin/env bash
# Session 58, call 4 (right after call 3, on its build): the second half of the correctness check
# (the compute-sanitizer steps and gpuattn verify), then compare_torch (3 rounds, a shape a
# process) at the points the lean kernels run: D128 S512 dense and causal (s3 and its twin; call 1:
# 0.985x / 0.956x the time of main), D64 causal S512 and S1024 (s4: 0.980x / noise), the one-wave
# B1 H16 S1024 D64 (two-CTA: 0.998x) and B1 H8 S4096 D64 (late-wait: 0.976x).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s58/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s58-call4}
GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E "exit status|all passed|FAIL|verify" $OUT/console.log | tail -30
cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DGPUATTN_BUILD_TESTS=OFF > /tmp/build-py.log 2>&1 &&
  cmake --build build-py --target _C -j16 >> /tmp/build-py.log 2>&1
echo "build-py rc $?"
cases=(float16,32,16,16,512,512,128,0 float16,32,16,16,512,512,128,1 float16,32,32,32,512,512,64,1
       float16,16,32,32,1024,1024,64,1 float16,1,16,16,1024,1024,64,0 float16,1,8,8,4096,4096,64,0)
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
            print("%-8s B%d Hq%d Hkv%d S%d D%d%s  ours %.2f us  cuDNN %.2f us  cuDNN/ours %.3f" % (
                r["dtype"], r["batch"], r["heads_q"], r["heads_kv"], r["seqlen_q"], r["head_dim"],
                " causal" if r["causal"] else "", 1e3 * r["ours_ms"],
                1e3 * r.get("cudnn_ms", float("nan")), r.get("cudnn_ms", float("nan")) / r["ours_ms"]))
PY
