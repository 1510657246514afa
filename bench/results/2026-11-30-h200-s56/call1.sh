#!/usr/bin/env bash
# Session 56, call 1 (prepared in session 55 as next-call-compare.sh, run as it was written):
# D64 grids against cuDNN and FA2 (compare_torch, in turn, 5 rounds, a shape a process) on the
# dispatch's new pick, sm90_ws_64x128_2cta, and, for the same shapes, on the 2-consumer kernel it
# replaced (GPUATTN_KERNEL=sm90_ws_128x128), so that the ratio to cuDNN of both is in one run.
# Expected (calls 4 and 7 of notes.md, gpuattn bench): one-wave ~1.04 us a head, ~1.08x cuDNN.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/next-call-compare.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DGPUATTN_BUILD_TESTS=OFF > $OUT/build.log 2>&1 &&
  cmake --build build-py --target _C -j16 >> $OUT/build.log 2>&1
ts "build rc $?"
cases=(float16,1,16,16,1024,1024,64,0 float16,1,16,16,1024,1024,64,1 bfloat16,1,16,16,1024,1024,64,0
       float16,2,16,16,1024,1024,64,0 float16,1,8,8,1024,1024,64,0 float16,1,32,32,512,512,64,0)
export PYTHONPATH=build-py/python
i=0
for c in "${cases[@]}"; do
  for v in auto two; do
    i=$((i + 1))
    env=(); [ $v = two ] && env=(GPUATTN_KERNEL=sm90_ws_128x128)
    env "${env[@]}" timeout 40 python3 bench/compare_torch.py --repeats 5 --json $OUT/$v-$i.json \
      --case "$c" > /tmp/cmp-$i.txt 2>&1
    echo "$v rc $?"; tail -3 /tmp/cmp-$i.txt
  done
done > $OUT/compare.txt 2>&1
ts "compare"
python3 - $OUT <<'PY' | tee $OUT/summary.txt
import glob, json, os, sys
out = sys.argv[1]
print("%-6s %-34s %9s %9s %9s %10s %9s" % ("kernel", "shape", "ours us", "cudnn us", "flash us",
                                           "cudnn/ours", "us/head"))
for f in sorted(glob.glob(os.path.join(out, "*-*.json")), key=lambda p: int(p.split("-")[-1][:-5])):
    for r in json.load(open(f)).get("cases", []):
        if "ours_ms" not in r:
            continue
        k = "%s B%d H%d S%d D%d%s" % (r["dtype"], r["batch"], r["heads_q"], r["seqlen_q"],
                                      r["head_dim"], " causal" if r["causal"] else "")
        heads = r["batch"] * r["heads_q"]
        print("%-6s %-34s %9.2f %9.2f %9.2f %10.3f %9.3f" % (
            os.path.basename(f).split("-")[0], k, 1e3 * r["ours_ms"], 1e3 * r.get("cudnn_ms", float("nan")),
            1e3 * r.get("flash_ms", float("nan")), r.get("cudnn_ms", float("nan")) / r["ours_ms"],
            1e3 * r["ours_ms"] / heads))
PY
