"""The Rust tests that need the real kernel, run here so that one that cannot
run says skipped, with the reason, instead of passing.

`cargo test` has no way for a test to skip itself at run time: a test that
returns early is reported as passed. So the live Rust tests are marked
``#[ignore]`` (``cargo test`` lists them as ignored) and this file runs each
one by name, after checking in Python what it needs (root, the tools, the
kernel). A live test run where it cannot proceed fails with a line starting
``cannot run here:`` (a kernel whose support the version does not tell, for
example); that line becomes the skip's reason here.

cargo is run with the same profile (``--release``) and target directory as
`make test`'s ``cargo test --workspace --release``, and with the same
``--workspace`` selection (hence the same features), so that it reuses that
build instead of compiling again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO

#: Every live Rust test: how to run it and what it needs. A test marked
#: ``#[ignore = "live: ..."]`` that is not here fails test_every_live_rust_test_is_run_here.
LIVE = {
    "live_veth::show_apply_every_profile_and_restore_on_a_veth": {
        "select": ["--test", "live_veth"],
        "name": "show_apply_every_profile_and_restore_on_a_veth",
        "root": True,
        "tools": ("ip", "ethtool"),
        "kernel": ((6, 13), "per-NAPI configuration and IRQ suspension"),
    },
    "live_veth::queue_stats_of_a_veth_grow_with_traffic_or_are_none": {
        "select": ["--test", "live_veth"],
        "name": "queue_stats_of_a_veth_grow_with_traffic_or_are_none",
        "root": True,
        "tools": ("ip", "ethtool"),
        "kernel": ((6, 8), "qstats-get"),
    },
    "irqlab-linux::epoll_params::tests::parameters_set_on_an_epoll_instance_read_back": {
        # Every library's unit tests; only irqlab-linux's has this name.
        "select": ["--lib"],
        "name": "epoll_params::tests::parameters_set_on_an_epoll_instance_read_back",
        "root": False,
        "tools": (),
        "kernel": ((6, 9), "EPIOCSPARAMS"),
    },
}

#: Long enough for a first build of the workspace's tests in release on two
#: busy cores (a build `make test` has normally just done).
CARGO_TIMEOUT_S = 1800

CANNOT_RUN = re.compile(r"cannot run here: (.+)")
IGNORED_LIVE = re.compile(r'#\[ignore = "live:[^"]*"\]\s*(?:#\[[^\]]*\]\s*)*fn (\w+)')


def _cargo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cargo", *args], cwd=REPO, capture_output=True, text=True, timeout=CARGO_TIMEOUT_S)


def _kernel() -> tuple[int, int]:
    major, minor = (int(re.match(r"\d+", x).group()) for x in os.uname().release.split(".")[:2])  # type: ignore[union-attr]
    return major, minor


def _skip_reason(test: dict) -> str | None:
    if shutil.which("cargo") is None:
        return "cargo is not on PATH"
    if test["root"] and os.geteuid() != 0:
        return "needs root (network namespaces and veth)"
    missing = [t for t in test["tools"] if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (iproute2, ethtool)"
    version, feature = test["kernel"]
    if _kernel() < version:
        return f"kernel {os.uname().release} is older than {version[0]}.{version[1]} (no {feature})"
    return None


@pytest.mark.parametrize("key", list(LIVE))
def test_live_rust_test(key: str) -> None:
    test = LIVE[key]
    reason = _skip_reason(test)
    if reason:
        pytest.skip(reason)
    # --workspace keeps the feature set of `make test`'s build; the target
    # selection and --exact run just this one test.
    proc = _cargo("test", "--workspace", "--release", *test["select"], "--", "--ignored", "--exact", test["name"])
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        why = CANNOT_RUN.search(out)
        if why:
            pytest.skip(why.group(1).strip())
        pytest.fail(f"cargo test {key} failed:\n{out[-6000:]}")
    # A name that matches nothing runs nothing and passes: make sure it ran.
    assert "test result: ok. 1 passed" in out, out[-3000:]


def test_every_live_rust_test_is_run_here() -> None:
    """Each Rust test marked ``#[ignore = "live: ..."]`` is in :data:`LIVE`;
    a new one left out would never run."""
    marked = set()
    for path in (REPO / "crates").glob("*/*/**/*.rs"):
        marked |= set(IGNORED_LIVE.findall(path.read_text(encoding="utf-8")))
    assert marked == {t["name"].rsplit("::", 1)[-1] for t in LIVE.values()}
