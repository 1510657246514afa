"""GPT-2 on the engine (`gpuattn generate`) against Hugging Face transformers, in one run on the same
GPU: logits parity of one prompt, then generation throughput (DESIGN.md's GPT-2 rows).

No checkpoint is reachable from the GPU machine, so the model is GPT2LMHeadModel with random
weights (its own init, seeded), written with save_pretrained (safetensors, the HF layout) and
loaded by both sides: the parity check covers the layout, the config and the arithmetic; the
throughput does not depend on the weights' values.

    python3 bench/gpt2_generate.py --gpuattn build-gpu/tools/gpuattn [--json out.json] [--quick]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

SIZES = {"124m": dict(n_layer=12, n_head=12, n_embd=768),
         "355m": dict(n_layer=24, n_head=16, n_embd=1024),
         "1558m": dict(n_layer=48, n_head=25, n_embd=1600)}
# (label, batch, prompt, new tokens): DESIGN.md's rows. "prefill" generates one token: its time
# is the prompt's forward (B x prompt tokens).
CASES = [("generate B1", 1, 16, 128), ("generate B32 prompt 512", 32, 512, 128),
         ("generate B128 prompt 512", 128, 512, 128), ("prefill B16 S1023", 16, 1023, 1)]


def run_ours(exe, model_dir, batch, prompt, new, extra=()):
    """One `gpuattn generate`; `extra` flags replace the defaults they name (the CLI refuses a
    flag given twice, and --prompt with --prompt-len)."""
    flags = {"--batch": str(batch), "--prompt-len": str(prompt), "--max-new": str(new),
             "--max-batch": str(max(64, batch))}
    extra = list(extra)
    for name, value in zip(extra[::2], extra[1::2]):
        flags[name] = value
    if "--prompt" in flags:
        del flags["--prompt-len"]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [exe, "generate", "--model", model_dir, "--json", f.name]
        for name, value in flags.items():
            cmd += [name, value]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(f.name))


def hf_generate(model, batch, prompt, new, vocab, reps):
    ids = torch.randint(0, vocab, (batch, prompt), device="cuda")
    kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, use_cache=True,
              pad_token_id=0, attention_mask=torch.ones_like(ids))
    with torch.no_grad():
        model.generate(ids, **kw)  # warm-up
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model.generate(ids, **kw)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return batch * new / min(times)


def hf_prefill(model, batch, prompt, vocab, reps):
    ids = torch.randint(0, vocab, (batch, prompt), device="cuda")
    with torch.no_grad():
        model(ids)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model(ids, use_cache=False)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return batch * prompt / min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuattn", required=True)
    ap.add_argument("--size", default="124m", choices=sorted(SIZES))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="B1 and B32 only, one repetition")
    ap.add_argument("--cases", help="comma-separated case labels to run (default: all)")
    args = ap.parse_args()

    torch.manual_seed(0)
    cfg = GPT2Config(**SIZES[args.size], n_positions=1024, vocab_size=50257)
    model = GPT2LMHeadModel(cfg).eval()
    work = tempfile.mkdtemp()
    model.save_pretrained(work, safe_serialization=True)
    model = model.cuda()
    device = torch.cuda.get_device_name()
    result = {"device": device, "size": args.size, "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "parity": {}, "rows": []}

    # Parity: one prompt's logits, ours (f16 and bf16) against HF in fp32.
    prompt = torch.randint(0, cfg.vocab_size, (77,)).tolist()
    with torch.no_grad():
        ref = model.float()(torch.tensor([prompt], device="cuda")).logits[0].double().cpu().numpy()
    for dtype in ("f16", "bf16"):
        path = os.path.join(work, f"logits_{dtype}.bin")
        got = run_ours(args.gpuattn, work, 1, len(prompt), 8,
                       ["--prompt", ",".join(map(str, prompt)), "--logits-out", path,
                        "--dtype", dtype, "--warmup", "0"])
        ours = np.fromfile(path, dtype=np.float32).reshape(ref.shape)
        err = float(np.abs(ours - ref).max() / np.abs(ref).max())
        agree = float((ours.argmax(-1) == ref.argmax(-1)).mean())
        result["parity"][dtype] = {"max_err_over_max_logit": err, "argmax_agreement": agree}
        print(f"parity {dtype}: max |ours - HF fp32| / max |HF| = {err:.2e}, "
              f"argmax agreement {agree:.3f} over {len(prompt)} rows")

    model = model.half()
    reps = 1 if args.quick else 3
    cases = CASES[:2] if args.quick else CASES
    if args.cases:
        wanted = args.cases.split(",")
        unknown = [w for w in wanted if w not in [c[0] for c in CASES]]
        if unknown:
            ap.error(f"--cases: no case {unknown}; the cases are {[c[0] for c in CASES]}")
        cases = [c for c in CASES if c[0] in wanted]
    print(f"\n{device}, GPT-2 {args.size} random weights, f16, greedy")
    print(f"{'case':<26} {'HF tok/s':>12} {'ours tok/s':>12} {'ours/HF':>8}")
    for label, batch, plen, new in cases:
        if new == 1:
            hf = hf_prefill(model, batch, plen, cfg.vocab_size, reps)
            ours = run_ours(args.gpuattn, work, batch, plen, 1, ["--max-batch", str(batch)])
            ours_rate = batch * plen / ours["seconds"]
        else:
            hf = hf_generate(model, batch, plen, new, cfg.vocab_size, reps)
            ours = run_ours(args.gpuattn, work, batch, plen, new)
            ours_rate = ours["tokens_per_s"]
        row = {"case": label, "batch": batch, "prompt": plen, "new": new, "hf_tok_s": hf,
               "ours_tok_s": ours_rate, "ratio": ours_rate / hf, "ours_steps": ours["steps"],
               "commit": ours["commit"]}
        result["rows"].append(row)
        print(f"{label:<26} {hf:>12.0f} {ours_rate:>12.0f} {ours_rate / hf:>8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
