"""Helpers shared by the Python benchmark scripts (compare_torch.py, sparse_bench.py,
long_context.py): the commit a result belongs to, the exit for a missing dependency, the CPU
smoke-run timer and timing in rounds. Imports nothing beyond the standard library."""
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
