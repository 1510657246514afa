#!/usr/bin/env python3
"""The joined table of scripts/gpu-check.sh: ours vs FA2 vs cuDNN vs the 3-kernel baseline and the
sm_80 kernel, ratios from times of the same shape in the same run, with the run's facts above it
(device, commit, peak, anchors, verify, and compare_torch.py's host-bound cases). Written to
LOG_DIR/summary.md and printed.

    python3 bench/gpu_check_summary.py LOG_DIR "FAILED STEPS"
"""
import json
import os
import sys


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} LOG_DIR \"FAILED STEPS\" (got {len(argv) - 1} arguments)",
              file=sys.stderr)
        return 2
    log_dir, failed = argv[1], argv[2]
    if not os.path.isdir(log_dir):
        print(f"gpu_check_summary: LOG_DIR {log_dir!r} is not a directory", file=sys.stderr)
        return 2

    def load(name):
        path = os.path.join(log_dir, name)
        return json.load(open(path)) if os.path.exists(path) else None

    bench, anchors, verify = load("bench.json"), load("anchors.json"), load("verify.json")
    bench80 = load("bench-sm80.json")
    key = lambda r: (r["dtype"], r["batch"], r["hq"], r["seqlen_q"], r["seqlen_k"], r["head_dim"],
                     bool(r["causal"]))
    by_shape = {}
    for r in (anchors or {}).get("results", []):
        by_shape.setdefault(key(r), {})[r["backend"]] = r

    def f(x, digits=1):
        return "n/a" if x is None else f"{x:.{digits}f}"

    lines = []
    if bench:
        peak = bench.get("peak_tflops", {})
        lines.append(f"gpu-check on {bench['device_name']}, {bench['date']}, commit "
                     f"{bench['commit']}; measured peak f16 {f(peak.get('f16'))} / bf16 "
                     f"{f(peak.get('bf16'))} TFLOP/s (cuBLASLt 8192^3)")
        if anchors:
            lines.append(f"anchors: torch {anchors['torch']}, cuDNN {anchors['cudnn']}, "
                         f"layout {anchors['layout']}, {anchors['timing']}")
            lines.append("note: 'ours' is timed by gpuattn bench with do_bench's protocol in "
                         "C++ (warm-up by time, an L2-flush memset before each call, CUDA events, "
                         "median); compare_torch.json times ours and the anchors through do_bench "
                         "itself")
    if verify:
        lines.append(f"verify: {verify['cases'] - verify['failed']}/{verify['cases']} cases passed")
    for name in ("compare_torch.json", "sweep-turns.json"):  # compare_torch.py's host check
        try:  # a damaged file costs this line, not the table
            d = load(name)
            bound = [c for c in (d or {}).get("cases", []) if c.get("host_bound")]
            if not bound:
                continue
            what = "; ".join(f"{c['dtype']} B{c['batch']} H{c['heads_q']}/{c['heads_kv']} "
                             f"Sq{c['seqlen_q']} Sk{c['seqlen_k']} D{c['head_dim']}"
                             f"{' causal' if c['causal'] else ''}: {', '.join(c['host_bound'])}"
                             for c in bound)
            lines.append(f"WARNING: {name}: host-bound (the host's time a call near or past "
                         f"the L2 flush's {d['flush_us']:.0f} us; the times may include the "
                         f"host's): {what}")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            lines.append(f"NOTE: {name} unreadable for the host check ({type(e).__name__}: {e})")
    lines.append("")
    header = ["shape", "dtype", "causal", "ours TFLOP/s", "ours us/head", "FA2 TFLOP/s",
              "cuDNN TFLOP/s", "ours/FA2", "ours/cuDNN", "baseline TFLOP/s", "ours/baseline",
              "sm80 kernel TFLOP/s", "sm80/FA2"]
    sm80_by_shape = {key(r): r for r in (bench80 or {}).get("results", [])}
    rows = []
    for r in (bench or {}).get("results", []):
        a = by_shape.get(key(r), {})
        ours = r.get("ours_ms")
        tf = lambda ms: r["flops"] / (ms * 1e-3) / 1e12 if ms else None
        ratio = lambda ms: ms / ours if (ms and ours) else None
        fa, cd = a.get("flash", {}).get("ms"), a.get("cudnn", {}).get("ms")
        sm80 = sm80_by_shape.get(key(r), {}).get("ours_ms")
        rows.append([r["shape"], r["dtype"], "yes" if r["causal"] else "no", f(tf(ours)),
                     f(r.get("ours_us_per_head"), 3), f(tf(fa)), f(tf(cd)), f(ratio(fa), 2),
                     f(ratio(cd), 2), f(tf(r.get("baseline_ms"))),
                     f(r.get("ours_over_baseline"), 2), f(tf(sm80)),
                     f(fa / sm80 if (fa and sm80) else None, 2)])
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 3 else "---:" for i in range(len(header))) + "|")
    for row in rows:
        lines.append("| " + " | ".join(row) + " |")
    if failed:
        lines.append("")
        lines.append(f"FAILED steps: {failed}")
    text = "\n".join(lines)
    open(os.path.join(log_dir, "summary.md"), "w").write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
