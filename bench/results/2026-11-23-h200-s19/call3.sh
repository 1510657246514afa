# Call 3 (nvidia-h200): how many resident CTAs per SM a decode wave should count (the 8-bit
# kernel converts twice the elements a byte): GPUATTN_EXP_DECODE_CTAS=2, 3, 4 (a temporary knob).
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build build-gpu -j16 --target _C 2>&1 | grep -E "error|FAILED" | head; echo build done
for n in 2 3 4; do echo "== CTAs per SM $n"; GPUATTN_EXP_DECODE_CTAS=$n PYTHONPATH=build-gpu/python:bench timeout 150 python3 bench/quantized_decode.py --json $OUT/ctas$n.json 2>&1 | grep -E "^bf16|ours" ; done
