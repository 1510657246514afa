"""Helpers shared by the Python benchmark scripts (compare_torch.py, sparse_bench.py,
long_context.py, host_overhead.py, quantized_decode.py, paged_decode.py): the commit a result
belongs to, the exit for a missing dependency, the CPU smoke-run timer, timing in rounds, the host
time of a call and the host check of do_bench timings. Imports nothing beyond the standard library (host_us and
flush_costs import torch when they need a GPU)."""
import json
import os
import subprocess
import sys
import time


def git_commit():
    """$GPUATTN_COMMIT (the GPU machine's copy has no .git), else this checkout's HEAD, else None."""
    if os.environ.get("GPUATTN_COMMIT"):
        return os.environ["GPUATTN_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=os.path.dirname(os.path.abspath(__file__))
                              ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def fail_missing(script, what, err):
    """Exits 2 naming the dependency `what` that `script` could not import."""
    print(f"{script}: {what} is required and could not be imported ({type(err).__name__}: "
          f"{err})", file=sys.stderr)
    sys.exit(2)


def write_outputs(result, md, json_path, md_path):
    """Writes `result` as JSON to json_path and the markdown `md` to md_path (each when given),
    creating their folders."""
    for path, text in ((json_path, json.dumps(result, indent=2)), (md_path, md)):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)


def cpu_timer():
    """(timer, description) for smoke runs on the CPU: the median of 3 wall times, in ms."""
    def timer(fn):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return sorted(times)[1]

    return timer, "perf_counter median of 3 (cpu)"


def do_bench_timer(script, warmup, rep, dev, what):
    """(timer, description) for sparse_bench.py and softcap_bench.py: on a GPU triton's do_bench
    median (L2 flushed before each run; exits 2 naming triton, with `what` it times, when it cannot
    be imported), on the CPU cpu_timer's smoke-run timer. timer(fn) returns ms."""
    if dev.type == "cpu":
        return cpu_timer()
    try:
        from triton.testing import do_bench
    except ImportError as e:
        fail_missing(script, f"triton (triton.testing.do_bench times {what})", e)

    def timer(fn):
        return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")

    return timer, "triton.testing.do_bench median (L2 flushed before each run)"


def host_us(fn, calls, rounds=1, cuda=False, sleep_cycles=200_000_000, strict=True):
    """The median over `rounds` of the host microseconds per call of fn() (after one warm-up
    call). With cuda, a GPU sleep (torch.cuda._sleep of `sleep_cycles` clocks; 200M is ~100 ms at
    2 GHz) keeps the stream busy while the `calls` are issued, so the launch queue never drains
    and the calls cost their host time only; afterwards the sleep must still be running. If it is
    not, strict raises (the times would include GPU waits); otherwise the round stands, since a
    host that took that long is the finding (compare_torch.py's host check)."""
    if calls < 1 or rounds < 1:
        raise ValueError(f"host_us: calls and rounds must be at least 1, got {calls} and {rounds}")
    torch = None
    if cuda:
        import torch
    fn()  # warm-up: first-call setup (kernel attributes, tensor map encoding paths, caches)
    if cuda:
        torch.cuda.synchronize()
    per_round = []
    for _ in range(rounds):
        if cuda:
            torch.cuda._sleep(sleep_cycles)
            # Recorded right behind the sleep, so it completes when the sleep ends, whatever
            # the calls queued after it (an event after the calls stays pending while their
            # last kernel runs, even when a synchronizing call waited the sleep out).
            slept = torch.cuda.Event()
            slept.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        if cuda:
            if slept.query() and strict:
                raise RuntimeError("the GPU sleep ended before the calls were issued: the host "
                                   "times would include GPU waits; issue fewer calls")
            torch.cuda.synchronize()
        per_round.append((t1 - t0) / calls * 1e6)
    return median(per_round)


def host_bound(host_us, flush, ms, loop=0.0):
    """Whether a call whose host time is `host_us` may have had it counted in its do_bench time
    `ms` (compare_torch.py), do_bench's L2 flush before each call taking `flush` us on the GPU and
    the rest of its iteration (the flush's launch, two event records) `loop` us on the host.

    The host issues the call while the GPU flushes; if it needs longer, the GPU waits after the
    start event and the call's time grows by the excess: the host's time from the flush's launch
    to the call's, the flush's launch and the start event's record (taken as half of `loop`) and
    the call's own, less the flush. That can only happen when the host is not ahead of the GPU,
    i.e. when its whole iteration outlasts the GPU's (the flush and the call itself, the measured
    time less any excess). Named when the host's issue comes within 20% of the flush (a margin for
    the probe's noise) and its iteration outlasts the GPU's. Calibrated on
    bench/results/2026-11-28-h200-s28, calls 2-6 (a busy host raised every backend's host time to
    30-60 us a call against a 65-75 us flush, and no time moved) and 2026-11-29-h200-s30 call 1
    (8-bit decode rows 15-20 us slower with a host of 63-69 us a call, a 39 us loop and a 60 us
    flush: the excess counting the host's call alone missed them)."""
    excess = max(0.0, host_us + loop / 2 - flush)
    return host_us >= 0.8 * flush and host_us + loop >= flush + (1e3 * ms - excess)


def host_bound_keys(row, flush, loop=0.0):
    """The backends of a case row (`KEY_ms` and `KEY_host_us` set) that host_bound names."""
    if flush is None:
        return []
    return [key for key in ("ours", "cudnn", "flash")
            if f"{key}_host_us" in row and f"{key}_ms" in row
            and host_bound(row[f"{key}_host_us"], flush, row[f"{key}_ms"], loop)]


def median(values):
    """The median of a non-empty list (the mean of the middle two for an even count)."""
    if not values:
        raise ValueError("median of an empty list")
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def time_in_rounds(measures, repeats):
    """measures: {key: a function that times one round and returns its ms}. Runs every key's once
    per round, the keys in turn, `repeats` rounds, so that a slow spell of the machine touches
    every key alike; returns {key: [ms per round]}."""
    if repeats < 1:
        raise ValueError(f"time_in_rounds: repeats must be at least 1, got {repeats}")
    rounds = {key: [] for key in measures}
    for _ in range(repeats):
        for key, measure in measures.items():
            rounds[key].append(measure())
    return rounds


def time_rows(calls, repeats, timer, cuda=False, flush=None, loop=None, contexts=None):
    """Times every row of `calls` ({name: fn}) once a round with `timer` (ms), the rows in turn,
    `repeats` rounds (time_in_rounds); with cuda, after each timing, the row's host time a call as
    well (host_us, the GPU kept busy by a sleep). contexts: {name: a function returning a context
    manager} entered around that row's timing and probe, not each call (SDPA's backend choice).
    Returns (times {name: median ms}, rounds {name: [ms a round]}, host {name: median us a call},
    bound [the names host_bound names; none without a flush]).

    A row whose probe outlasted the sleep (its calls synchronize with the GPU, as a checked paged
    call does, or its host is that slow) has no host time: host[name] is None and the row is
    bound, since do_bench's flush cannot hide such a call (2026-11-29-h200-s30, call 7: the
    checked paged_decode rows' probes had waited out the sleep and read 258-514 us)."""
    contexts = contexts or {}
    host = {}

    def one(name):
        fn = calls[name]
        ms = timer(fn)
        if cuda:
            try:
                us = host_us(fn, HOST_CALLS, cuda=True, sleep_cycles=HOST_SLEEP, strict=True)
            except RuntimeError:  # the sleep ended before the calls were issued
                us = None
            host.setdefault(name, []).append(us)
        return ms

    def measure(name):
        def run():
            if name in contexts:
                with contexts[name]():
                    return one(name)
            return one(name)
        return run

    rounds = time_in_rounds({name: measure(name) for name in calls}, repeats)
    times = {name: median(ms) for name, ms in rounds.items()}
    host_med = {name: None if None in us else median(us) for name, us in host.items()}
    bound = [name for name in times if name in host_med and (
        host_med[name] is None
        or (flush is not None and host_bound(host_med[name], flush, times[name], loop or 0.0)))]
    return times, rounds, host_med, bound


def row_host_note(name, host, bound):
    """The end of a row's line in time_rows' terms: its host time a call (or that its probe
    drained the GPU) and the HOST-BOUND mark; empty for a row without a probe."""
    note = ""
    if name in host:
        note = (f"  host {host[name]:.0f} us" if host[name] is not None
                else "  host: drained the GPU")
    return note + ("  HOST-BOUND" if name in bound else "")


def print_row_times(times, nbytes, anchor, checked, checked_label, host, bound, width):
    """The lines of one shape of time_rows' rows (quantized_decode.py, paged_decode.py): per row
    its time, the TB/s of nbytes (a count, or {name: count}), cuDNN's time over its own (anchor:
    cuDNN's ms, or None), `checked_label` and the row's figure when `checked` has one (the
    difference from the anchor), and row_host_note's end."""
    for n, t in times.items():
        b = nbytes[n] if isinstance(nbytes, dict) else nbytes
        print(f"  {n:{width}} {t * 1e3:8.1f} us  {b / (t * 1e-3) / 1e12:5.2f} TB/s"
              + (f"  cuDNN/this {anchor / t:5.2f}" if anchor else "")
              + (f"  {checked_label} {checked[n]:.1e}" if n in checked else "")
              + row_host_note(n, host, bound), flush=True)


def decode_bench_setup(description, script, gpu_timer, alibi_help=None):
    """The command line and setup shared by quantized_decode.py and paged_decode.py: --json,
    --quick, --repeats (at least 1), --device cuda|cpu (cpu: a smoke run), and --alibi where
    alibi_help (its help text) is given. Returns (args, cuda, device, timer, flush, loop):
    gpu_timer on CUDA, cpu_timer's on the CPU, and the host check's costs on CUDA (None, None off
    it)."""
    import argparse

    import torch

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="the first two shapes only")
    ap.add_argument("--repeats", type=int, default=3,
                    help="rounds, every row of a shape once a round (default 3)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cuda (default), or cpu: a smoke run on small shapes")
    if alibi_help is not None:
        ap.add_argument("--alibi", action="store_true", help=alibi_help)
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error(f"--repeats {args.repeats} must be at least 1")
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        ap.error("--device cuda but torch sees no CUDA device (--device cpu for a smoke run)")
    dev = torch.device(args.device)
    timer = gpu_timer if cuda else cpu_timer()[0]
    flush, loop = host_check_costs(dev, script) if cuda else (None, None)
    return args, cuda, dev, timer, flush, loop


def finish_rows(rows, flush, loop, repeats, device, json_path):
    """The end of a script timing rows with time_rows (quantized_decode.py, paged_decode.py):
    a warning when rows (each with its host_bound list) were marked, and the JSON (the device,
    commit, repeats, the host check's costs, the marked rows' count, the rows) when asked for.
    Returns the count of marked rows."""
    flagged = sum(len(r["host_bound"]) for r in rows)
    if flagged:
        cover = (f"do_bench's L2 flush {flush:.0f} us of GPU time" if flush is not None
                 else "the GPU's work")
        print(f"WARNING: {flagged} row(s) host-bound ({cover} did not cover the host's issue of "
              "the call): their times may include the host's")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": device, "commit": git_commit(), "repeats": repeats,
                       "flush_us": flush, "loop_us": loop, "host_bound_rows": flagged,
                       "rows": rows}, f, indent=1)
    return flagged


def host_check_costs(dev, script):
    """flush_costs(dev) for a script's host check, or (None, None) with a line saying why the run
    goes on without one."""
    try:
        return flush_costs(dev)
    except Exception as e:  # the run goes on without the host check
        print(f"{script}: no host check ({type(e).__name__}: {e})")
        return None, None


# The host check of do_bench timings (compare_torch.py, quantized_decode.py): a probe of a call's
# host time issues HOST_CALLS calls while a GPU sleep of HOST_SLEEP clocks keeps the stream busy.
HOST_CALLS = 50             # calls a probe issues (~1-4 ms of host time)
HOST_SLEEP = 20_000_000     # GPU clocks the probe's sleep lasts (~10 ms at 2 GHz)


def flush_costs(dev):
    """(flush_us, loop_us): the GPU microseconds of do_bench's L2 flush (triton's own buffer and
    clear when its driver has them; a 256 MiB memset otherwise), median of 20, and the host
    microseconds of the rest of a do_bench iteration (the flush's launch and two event records);
    (None, None) on the CPU."""
    if dev.type != "cuda":
        return None, None
    import torch

    clear = None
    try:
        from triton.runtime import driver
        cache = driver.active.get_empty_cache_for_benchmark()
        clear_cache = getattr(driver.active, "clear_cache", None)
        if clear_cache is not None:
            def clear():
                clear_cache(cache)
    except (ImportError, AttributeError):
        pass
    if clear is None:  # an older triton: do_bench zeroes its 256 MB buffer itself
        cache = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=dev)

        def clear():
            cache.zero_()
    clear()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)  # the GPU busy past the launch: the events time the memset
        s.record()
        clear()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def iteration():
        clear()
        s.record()
        e.record()
    loop = host_us(iteration, HOST_CALLS, rounds=3, cuda=True,
                                sleep_cycles=HOST_SLEEP, strict=False)
    torch.cuda.synchronize()
    return median(times), loop
