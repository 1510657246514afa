#!/usr/bin/env bash
# Session 45, call 7: branch wip/fp8-varlen at 6c513a2 (a V tail map in place of the
# transposer's zeroing), as call 6: s44's next-call-varlen.sh, run from the branch's source (carried as
# carry/fp8-varlen-src.tar.gz, since the device gets main's tree): the FP8 suite (six varlen
# kernel cases, two with a query-less sequence of NaN K / V), memcheck and racecheck of the kernel
# cases, dense speed against main's kernel (bench/ab_probe.py, 3 rounds), the Python module built
# from the branch and its FP8 tests. Carry: s45w (the branch's gpuattn_cuda_tests and
# gpuattn_fp8_probe, built in build-s38 from main with the
# branch's fwd_sm90_fp8.cu, cuda_attention.cpp and test_fp8_cuda.cpp; its headers differ from
# main's in comments and a config string only), main-probe (main's gpuattn_fp8_probe).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call7.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
rm -rf /tmp/v && mkdir -p /tmp/v && tar xzf carry/fp8-varlen-src.tar.gz -C /tmp/v || exit 1
mkdir -p /tmp/v/src/carry && cp carry/s45w.tar.xz /tmp/v/src/carry/ && xz -dc carry/main-probe.xz > /tmp/v/src/carry/main-probe && chmod +x /tmp/v/src/carry/main-probe
cd /tmp/v/src && OUT=$OUT V=s45w ROUNDS=3 bash bench/results/2026-11-30-h200-s44/next-call-varlen.sh
