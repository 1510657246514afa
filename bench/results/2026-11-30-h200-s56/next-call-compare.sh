#!/usr/bin/env bash
# Prepared in session 56, not run (no device time left): the sweep's points nearest 1.05x cuDNN
# and the one-wave shape, against cuDNN and FA2 (compare_torch, in turn, 5 rounds, a shape a
# process) at the session's final kernels. Session 56 moved causal D64 S512 / S1024 (the 4-stage
# kernel: half last tiles, one tile loop) 0.983x / 0.970-0.989x the time in gpuattn bench.
# Expected: D64 causal S512 ~1.03-1.04x cuDNN (s54: 1.01), S1024 ~1.05-1.07x (s54: 1.04-1.05);
# D128 S512 and D256 S512 as s54 (1.03-1.05x, 1.02-1.03x: unchanged kernels); one-wave ~1.02-1.05x.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s56/next-call-compare.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DGPUATTN_BUILD_TESTS=OFF > $OUT/build.log 2>&1 &&
  cmake --build build-py --target _C -j16 >> $OUT/build.log 2>&1
ts "build rc $?"
cases=(float16,32,32,32,512,512,64,1 float16,16,32,32,1024,1024,64,1 float16,32,16,16,512,512,128,1
       float16,32,16,16,512,512,128,0 float16,16,16,16,1024,1024,128,0 float16,32,8,8,512,512,256,0
       float16,32,8,8,512,512,256,1 float16,1,16,16,1024,1024,64,0)
export PYTHONPATH=build-py/python
mkdir -p /tmp/cmp
i=0
for c in "${cases[@]}"; do
  i=$((i + 1))
  timeout 60 python3 bench/compare_torch.py --repeats 5 --json /tmp/cmp/$i.json --case "$c" \
    > /tmp/cmp/$i.txt 2>&1
  echo "rc $?"; tail -3 /tmp/cmp/$i.txt
done > $OUT/compare.txt 2>&1
ts "compare"
python3 - <<'PY' | tee $OUT/summary.txt
import glob, json, os
print("%-34s %9s %9s %9s %10s %9s %s" % ("shape", "ours us", "cudnn us", "flash us", "cudnn/ours",
                                         "us/head", "host_bound"))
for f in sorted(glob.glob("/tmp/cmp/*.json"), key=lambda p: int(os.path.basename(p)[:-5])):
    for r in json.load(open(f)).get("cases", []):
        if "ours_ms" not in r:
            continue
        k = "%s B%d H%d S%d D%d%s" % (r["dtype"], r["batch"], r["heads_q"], r["seqlen_q"],
                                      r["head_dim"], " causal" if r["causal"] else "")
        print("%-34s %9.2f %9.2f %9.2f %10.3f %9.3f %s" % (
            k, 1e3 * r["ours_ms"], 1e3 * r.get("cudnn_ms", float("nan")),
            1e3 * r.get("flash_ms", float("nan")), r.get("cudnn_ms", float("nan")) / r["ours_ms"],
            1e3 * r["ours_ms"] / (r["batch"] * r["heads_q"]), r.get("host_bound", "")))
PY
