#!/usr/bin/env bash
# s36 call 1 (branch wip/q8-tc): s35's next-call-probe.sh (tc probe rows, in the background while
# the builds run) then s35's next-call-tc.sh.
set -u
cd "$(dirname "$0")/../../.."
mkdir -p $OUT/probe $OUT/tc
(OUT=$OUT/probe timeout 150 bash bench/results/2026-11-29-h200-s35/next-call-probe.sh > $OUT/probe/log.txt 2>&1; echo "probe rc $?" >> $OUT/probe/log.txt) &
OUT=$OUT/tc bash bench/results/2026-11-29-h200-s35/next-call-tc.sh
wait; cat $OUT/probe/log.txt
