"""bench/ab_probe.py on fake probes: the A B B A order of its runs, the per-case means and ratios
(the text before "  us " as the case, a case printed twice averaged), the first-pair / second-pair
ratios that expose an order effect, --case's process a case, and the errors for a probe that fails or
prints nothing."""

import os
import stat
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")  # the repository
sys.path.insert(0, os.path.join(ROOT, "bench"))
import ab_probe  # noqa: E402


def fake(tmp_path, name, body):
    """An executable that appends its name to tmp_path/log, then runs `body` (bash)."""
    path = tmp_path / name
    path.write_text(f"#!/usr/bin/env bash\necho {name} >> {tmp_path / 'log'}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_balanced_order_means_and_ratios(tmp_path, capsys):
    a = fake(tmp_path, "a", 'echo "B1 H16 S512 dense   us 10.0  TFLOP/s 100.0"\n'
                            'echo "B4 H16 S4096 causal  us 20.0  TFLOP/s 300.0"\n'
                            'echo "B4 H16 S4096 causal  us 20.0  TFLOP/s 310.0"')
    # B runs faster when it comes second in its pair (an order effect of +10%): the first pair
    # (A then B) sees 121, the second (B then A) 110.
    b = fake(tmp_path, "b", f'n=$(grep -c . {tmp_path / "log"})\n'
                            'if [ $((n % 4)) -eq 2 ]; then x=121.0; else x=110.0; fi\n'
                            'echo "B1 H16 S512 dense   us 9.0  TFLOP/s $x"\n'
                            'echo "some other line"\n'
                            'echo "B4 H16 S4096 causal  us 20.0  TFLOP/s 305.0"')
    assert ab_probe.main(["--rounds", "2", a, b, "30"]) == 0
    assert (tmp_path / "log").read_text().split() == ["a", "b", "b", "a"] * 2
    rows = {line[:32].strip(): line[32:].split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(rows) == {"B1 H16 S512 dense", "B4 H16 S4096 causal"}
    ma, mb, ratio, first, second = map(float, rows["B1 H16 S512 dense"])
    assert (ma, mb) == (100.0, 115.5)
    assert ratio == pytest.approx(1.155, abs=1e-3)
    assert (first, second) == (1.21, 1.1)  # the order effect shows as the two pairs' disagreement
    assert list(map(float, rows["B4 H16 S4096 causal"])) == [305.0, 305.0, 1.0, 1.0, 1.0]


def test_each_case_in_a_process_of_its_own(tmp_path, capsys):
    # The fake probe logs its arguments and prints the one case its --only names.
    body = (f'echo "$@" >> {tmp_path / "args"}\n'
            'case "$*" in *"--only S512"*) echo "B1 H16 S512 dense   us 1.0  TFLOP/s 10.0";; '
            '*"--only causal"*) echo "B4 H16 S4096 causal  us 1.0  TFLOP/s 20.0";; '
            '*) echo "B9 H1 S1 dense  us 1.0  TFLOP/s 1.0";; esac')
    a, b = fake(tmp_path, "a", body), fake(tmp_path, "b", body)
    assert ab_probe.main(["--rounds", "1", "--case", "S512", "--case", "causal", a, b, "--", "30"]) == 0
    assert (tmp_path / "log").read_text().split() == ["a", "a", "b", "b", "b", "b", "a", "a"]
    assert (tmp_path / "args").read_text().splitlines() == ["30 --only S512", "30 --only causal"] * 4
    rows = {line[:32].strip() for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows == {"B1 H16 S512 dense", "B4 H16 S4096 causal"}
    with pytest.raises(SystemExit):
        ab_probe.main(["--case", " ", a, b])


def test_probe_errors_are_named(tmp_path):
    good = fake(tmp_path, "good", 'echo "x  us 1.0  TFLOP/s 5.0"')
    failing = fake(tmp_path, "failing", "echo oops >&2; exit 3")
    silent = fake(tmp_path, "silent", "echo nothing here")
    with pytest.raises(SystemExit, match="failing exited with 3: oops"):
        ab_probe.main([good, failing])
    with pytest.raises(SystemExit, match="silent printed no 'TFLOP/s <x>' line"):
        ab_probe.main([silent, good])
    with pytest.raises(SystemExit):
        ab_probe.main(["--rounds", "0", good, good])
