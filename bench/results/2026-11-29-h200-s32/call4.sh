#!/usr/bin/env bash
# s32 call 4: the library's decode kernels alone with and without PDL: decode_ab.py (s31's; ours on
# 9 decode shapes, do_bench with L2 flushed: a fill kernel ahead of each call), GPUATTN_PDL=0 and on
# in turn, 2 rounds each; then GPT-2 124M B1 generate, 2 more rounds in turn.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli _C > $OUT/build.log 2>&1; ts "build rc $?"
R=bench/results/2026-11-29-h200-s31
for i in 1 2; do
  for pdl in 0 1; do
    GPUATTN_PDL=$pdl PYTHONPATH=build-gpu/python timeout 60 python3 $R/decode_ab.py pdl$pdl --json $OUT/dab-pdl$pdl-$i.json > $OUT/dab-pdl$pdl-$i.log 2>&1
    ts "decode_ab pdl=$pdl round $i rc $?"
  done
done
G=build-gpu/tools/gpuattn
for i in 1 2; do
  for pdl in 0 1; do
    GPUATTN_PDL=$pdl timeout 30 $G generate --random 124m --batch 1 --prompt-len 16 --max-new 128 > $OUT/gen.tmp 2>&1
    echo "B1 pdl=$pdl: $(tail -1 $OUT/gen.tmp)"
  done
done | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp
python3 - "$OUT" <<'PY'
import json, sys, glob, statistics, collections
out = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(out + "/dab-*.json")):
    j = json.load(open(f))
    for shape, r in j["median"].items():
        rows[shape][j["label"]].append(r["ours"])
for shape, d in rows.items():
    a, b = statistics.median(d["pdl0"]), statistics.median(d["pdl1"])
    print(f"{shape:<40} pdl0 {a:8.2f} us  pdl1 {b:8.2f} us  ratio {b / a:.3f}")
PY
ts done
