#!/usr/bin/env bash
# Device call 3: the SASS pages of call 2's cuDNN reports (carried in .ncu/; the export needs ncu,
# which only the GPU machine has).
set -u
for c in short-d64 dense-d64; do
  ncu --import .ncu/$c.ncu-rep --page source --csv --print-source sass > $OUT/cudnn-$c-sass.csv 2>$OUT/err-$c.txt
  wc -l $OUT/cudnn-$c-sass.csv
done
cd $OUT && tar czf sass.tgz cudnn-*.csv && rm cudnn-*.csv
