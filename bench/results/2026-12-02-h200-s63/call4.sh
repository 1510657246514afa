#!/usr/bin/env bash
# Session 63, call 4: the CLI changes on the GPU, with a gpuattn built here for sm_90a at 370d5c3
# (scripts/carry-build.sh s63 gpuattn_cli, carried): verify --quick and bench --shapes quick with
# --json; a --json path that cannot be written refused before any work; generate on CUDA with
# --save-model and --logits-out (the engine built before anything is written); dist on one GPU.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s63/call4.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s63 && tar xJf carry/s63.tar.xz -C /tmp/s63 --strip-components 1
G=/tmp/s63/gpuattn
start=$(date +%s)
$G verify --device cuda --quick --json $OUT/verify.json > $OUT/verify.txt 2>&1; echo "verify rc $?"
tail -2 $OUT/verify.txt
$G bench --device cuda --shapes quick --json $OUT/bench.json > $OUT/bench.txt 2>&1; echo "bench rc $?"
tail -6 $OUT/bench.txt
t0=$(date +%s); $G bench --device cuda --shapes quick --json /nonexist/b.json; echo "bad path rc $? in $(( $(date +%s) - t0 )) s"
cd /tmp && $G generate --random tiny --device cuda --max-new 4 --save-model /tmp/saved \
  --logits-out /tmp/l.bin --json $OUT/generate.json > $OUT/generate.txt 2>&1; echo "generate rc $?"
tail -3 $OUT/generate.txt; ls /tmp/saved; stat -c '%s %A' /tmp/l.bin
$G generate --random tiny --device cuda --max-new 4 --top-k 5; echo "greedy top-k rc $? (2)"
$G dist --device cuda --seq 4096 --rep 2 --json $OUT/dist.json > $OUT/dist.txt 2>&1; echo "dist rc $?"
tail -6 $OUT/dist.txt
echo "done after $(( $(date +%s) - start )) s"
