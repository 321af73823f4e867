"""The knob table (crates/irqlab-knobs) as Python sees it, and its readers:
the profiles, irqlab.linux.knobs, the scenario's validator, the README."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import irqlab
from conftest import REPO
from irqlab import _core, knobs
from irqlab.linux import knobs as linux_knobs
from irqlab.summary import flatten

S64_MAX = 2**63 - 1


def test_the_table_has_every_knob_once_with_its_kernel_name_range_and_source():
    table = knobs.knobs()
    paths = [k["path"] for k in table]
    assert len(paths) == len(set(paths))
    for path in ("napi.napi_defer_hard_irqs", "napi.gro_flush_timeout", "napi.irq_suspend_timeout",
                 "coalesce.adaptive-rx", "coalesce.rx-usecs", "coalesce.rx-frames", "coalesce.cqe-mode-rx",
                 "epoll.busy_poll_usecs", "epoll.busy_poll_budget", "epoll.prefer_busy_poll", "epoll.blocking",
                 "itr.rate"):
        assert path in paths
    for k in table:
        lo, hi = k["sim_range"]
        assert k["kernel_range"][0] <= lo <= int(k["default"]) <= hi <= k["kernel_range"][1], k["path"]
        assert (tuple(k["sim_range"]) != tuple(k["kernel_range"])) == (k["sim_why"] is not None), k["path"]
        assert k["source"] and k["doc"] and k["unit"]
    assert knobs.by_path("napi.irq_suspend_timeout")["kernel_name"] == "irq-suspend-timeout"
    assert knobs.by_linux_name("rx-usecs")["path"] == "coalesce.rx-usecs"
    assert knobs.by_path("napi.threaded") is None


def test_irq_suspend_timeout_has_one_range_in_the_simulator_and_in_irqlab_linux():
    k = knobs.by_path("napi.irq_suspend_timeout")
    assert tuple(k["kernel_range"]) == tuple(k["sim_range"]) == (0, S64_MAX)
    assert dict(_core.TUNABLE_KNOBS)["irq_suspend_timeout"] == S64_MAX
    assert linux_knobs.tunable()["irq_suspend_timeout"] == (0, S64_MAX)
    # The scenario takes the largest value irqlab linux would set...
    resolved = json.loads(_core.resolve('name = "t"\n', "irq-suspend", [f"napi.irq_suspend_timeout={S64_MAX}"]))
    assert resolved["napi"]["irq_suspend_timeout"] == S64_MAX


def test_the_validator_refuses_a_value_outside_the_tables_range_in_its_sentence():
    for k in knobs.knobs():
        if k["unit"] == "bool" or k["part"] == "itr" or k["sim_range"][1] >= S64_MAX:
            continue
        over = k["sim_range"][1] + 1
        with pytest.raises(irqlab.ScenarioError) as e:
            _core.resolve('name = "t"\n', None, [f"{k['path']}={over}"])
        expected = f"scenario field `{k['path']}` must be between {k['sim_range'][0]} and {k['sim_range'][1]} (got {over})"
        assert str(e.value).startswith(expected), str(e.value)
        if k["sim_why"] and over <= k["kernel_range"][1]:
            assert str(e.value) == f"{expected}: {k['sim_why']}"


def test_defaults_are_what_a_scenario_without_the_knob_resolves_to():
    resolved = flatten(json.loads(_core.resolve('name = "t"\n', None, [])))
    for k in knobs.knobs():
        if k["part"] == "steering":
            # A scenario lists RPS's CPUs ([] = every application core); a
            # policy sets them as a mask (0 = RPS off, as on a host).
            assert resolved[k["path"]] == [] and k["default"] == 0
            continue
        assert resolved[k["path"]] == k["default"], k["path"]
        assert type(resolved[k["path"]]) is type(k["default"]), k["path"]


def test_profiles_read_the_table_and_equal_what_the_simulator_resolves():
    table = irqlab.profile_knobs()
    for profile, values in table.items():
        resolved = flatten(json.loads(_core.resolve('name = "t"\n', profile, [])))
        assert values == {path: resolved[path] for path in values}, profile
        assert list(values) == _core.profile_fields()
    assert table["irq-suspend"]["napi.irq_suspend_timeout"] == 20_000_000


def test_irqlab_linux_names_knobs_as_the_table_does():
    fields = dict(_core.LINUX_KNOB_FIELDS)
    for k in knobs.knobs():
        if k["linux_name"]:
            assert fields[k["linux_name"]] == k["path"]
    assert list(linux_knobs.tunable()) == [name for name, _ in _core.TUNABLE_KNOBS] == [
        "defer_hard_irqs", "gro_flush_timeout", "irq_suspend_timeout", "rx-usecs", "rx-frames"]
    assert linux_knobs.tunable()["rx-usecs"] == (0, 2**32 - 1)


def test_the_testbed_tunes_the_tables_per_napi_knobs():
    from irqlab.testbed.tune import SCENARIO_FIELD

    assert SCENARIO_FIELD == {"defer_hard_irqs": "napi.napi_defer_hard_irqs",
                              "gro_flush_timeout": "napi.gro_flush_timeout",
                              "irq_suspend_timeout": "napi.irq_suspend_timeout"}


def test_the_readme_tables_are_the_generated_ones():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert knobs.readme_tables(readme) == knobs.markdown(), (
        "README.md's knob tables differ from the knob table: replace them with `python -m irqlab.knobs --markdown`")


def test_a_readme_with_stale_or_no_tables_is_told_apart():
    block = knobs.markdown()
    stale = block.replace("| 20000000 |", "| 10000000 |", 1)
    assert stale != block
    assert knobs.readme_tables("# x\n" + stale + "more\n") == stale != block
    assert knobs.readme_tables("# no tables\n") is None


def test_python_m_irqlab_knobs_prints_the_tables():
    run = subprocess.run([sys.executable, "-m", "irqlab.knobs", "--markdown"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == knobs.markdown()
    assert "| `napi.irq_suspend_timeout` | `irq-suspend-timeout` | ns | 0 to 9223372036854775807 |" in run.stdout
    run = subprocess.run([sys.executable, "-m", "irqlab.knobs"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "usage" in run.stderr


def test_irqlab_knobs_prints_the_readmes_tables_and_the_table_as_json():
    readme = (REPO / "README.md").read_text()
    text = subprocess.run([sys.executable, "-m", "irqlab", "knobs"], capture_output=True, text=True, check=True,
                          timeout=60)
    assert text.stdout == knobs.readme_tables(readme)
    data = subprocess.run([sys.executable, "-m", "irqlab", "knobs", "--json"], capture_output=True, text=True,
                          check=True, timeout=60)
    assert [k["path"] for k in json.loads(data.stdout)] == [k["path"] for k in knobs.knobs()]


def _on_a_terminal(*args: str, columns: int = 100, color: bool = False) -> str:
    """``irqlab ARGS``'s standard output when it is a terminal ``columns``
    wide (a pseudo-terminal), with the terminal's CR LF made LF."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    if not color:
        env["NO_COLOR"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "irqlab", *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [60, 100, 220])
def test_irqlab_knobs_on_a_terminal_is_rendered_without_markdown_or_html(columns):
    # issue 62, item 17: a terminal got the raw Markdown and its HTML comment.
    out = _on_a_terminal("knobs", columns=columns)
    assert "<!--" not in out and "-->" not in out
    assert "|" not in out and "\\*" not in out and "`" not in out and "---" not in out, out[:500]
    assert max(len(line) for line in out.splitlines()) <= columns
    words = out.split()
    for k in knobs.knobs():
        assert k["path"] in words, k["path"]  # whole, never folded or cut with an ellipsis
        assert k["doc"].split()[0] in words
    for profile in irqlab.profile_knobs():
        assert profile in words
    assert "(*) A scenario accepts less than the kernel:" in out
    assert "\x1b[" not in out


def test_irqlab_knobs_keeps_markdown_with_the_flag_and_colours_only_without_no_color():
    readme = (REPO / "README.md").read_text()
    assert _on_a_terminal("knobs", "--markdown") == knobs.readme_tables(readme)
    assert "\x1b[" in _on_a_terminal("knobs", color=True)
    piped = subprocess.run([sys.executable, "-m", "irqlab", "knobs", "--markdown"], capture_output=True, text=True,
                           check=True, timeout=60)
    assert piped.stdout == knobs.readme_tables(readme)


def test_the_terminal_rendering_falls_back_to_records_when_a_table_does_not_fit():
    wide, narrow = knobs.for_terminal(240, color=False), knobs.for_terminal(70, color=False)
    assert "scenario field" in wide and "scenario field" not in narrow
    assert "kernel / ethtool name  irq-suspend-timeout" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 70


def test_irqlab_knobs_on_an_ascii_stream_says_us_not_a_traceback():
    import os

    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    run = subprocess.run([sys.executable, "-m", "irqlab", "knobs"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert run.stdout.isascii() and "| `coalesce.rx-usecs` | `rx-usecs` | us |" in run.stdout
    rendered = knobs.ascii_text(knobs.for_terminal(100, color=False))
    assert rendered.isascii() and "?" not in rendered
