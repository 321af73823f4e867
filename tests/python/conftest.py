"""Shared helpers: the small test scenario and a way to run the `irqlab` command.

Tests marked ``needs_run`` need ``irqlab_core::run`` to simulate; the others
only need the scenario layer (``_core.resolve``) and the Python package.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SMALL = HERE / "scenarios" / "small.toml"

def memcached_on_veth_skip_reason(without_root: str, kernel_lacks: str) -> str | None:
    """Why a live test of memcached on a veth in network namespaces cannot
    run here (None if it can): it needs root (else ``without_root`` is the
    reason), Debian's memcached, iproute2 and ethtool, and Linux 6.13 or
    later (older kernels lack ``kernel_lacks``)."""
    if os.geteuid() != 0:
        return without_root
    if shutil.which("memcached") is None:
        return "Debian's memcached is not installed"
    if shutil.which("ip") is None or shutil.which("ethtool") is None:
        return "iproute2 and ethtool are needed"
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    if (major, minor) < (6, 13):
        return f"kernel {os.uname().release} is older than 6.13 (no {kernel_lacks})"
    return None


def memcached_irq_suspend_testbed():
    """The veth testbed (python/irqlab/testbed) with memcached under
    ``irqlab linux exec --profile irq-suspend`` in its server namespace and
    its items preloaded; a generator for a module-scoped fixture, which
    removes the testbed however the module's tests end."""
    from irqlab.testbed import run as tb
    from irqlab.testbed.netns import Testbed

    plan = tb.Plan(profiles=("irq-suspend",))
    bed = Testbed(plan.server_core, plan.client_core)
    server = None
    try:
        bed.create()
        server = tb._start_server(plan, "irq-suspend")
        tb._wait_ready()
        tb._loadgen_run(plan, [], 0.1, preload=True)
        yield bed
    finally:
        if server is not None:
            tb._stop_server(server)
        bed.destroy()


def server_gro_flush_timeout() -> int:
    """The testbed's server veth's ``gro_flush_timeout``, read back by ``irqlab linux show``."""
    irqlab_cmd = Path(sys.executable).with_name("irqlab")
    out = subprocess.run(["ip", "netns", "exec", "irqlab-tb-srv", str(irqlab_cmd), "linux", "show", "irqlab-tb0", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["napis"][0]["gro_flush_timeout"]


#: Short enough to keep every run in the suite well under a second.
SHORT = "0.01"


def wait_listening(ns: str, host: str, port: int) -> None:
    """The testbed's wait for a server started through ``ip netns exec``,
    with a bound for a busy machine."""
    from irqlab.testbed.run import wait_listening as wait

    wait(ns, host, port, timeout_s=20.0)


def interrupted_run(args: list[str], after_s: float = 3.0) -> tuple[int, str, str]:
    """Start ``python -m irqlab ARGS`` from the repository root, send it
    SIGINT once it has run ``after_s`` seconds (it must still be running),
    and return its status, stdout and stderr."""
    import time

    proc = subprocess.Popen([sys.executable, "-m", "irqlab", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def past_start_up() -> None:
        # Past imports and into the work (each caller's takes far longer).
        time.sleep(after_s)
        assert proc.poll() is None, proc.communicate()

    return interrupt(proc, past_start_up)


def interrupt(proc: subprocess.Popen[str], ready: Any) -> tuple[int, str, str]:
    """Once ``ready()`` returns, send ``proc`` SIGINT and wait for it (30 s
    at most); its status, stdout and stderr. Killed if anything fails."""
    import signal

    try:
        ready()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def irqlab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m irqlab ARGS`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "irqlab", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


@pytest.fixture
def small() -> Path:
    return SMALL


@pytest.fixture
def small_text() -> str:
    return SMALL.read_text(encoding="utf-8")


def sh(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a command (``ip netns ...`` in the live tests), asserting it
    succeeded within a minute; its result."""
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"
    return result


@pytest.fixture(scope="module")
def shim() -> Path:
    """The built preload shim (skips, saying why, where there is none)."""
    from irqlab.linux.exec_cmd import find_shim

    if not sys.platform.startswith("linux"):
        pytest.skip("the preload shim is Linux's")
    path = find_shim()
    if path is None:
        pytest.skip("the preload shim is not built (make setup)")
    return path


@pytest.fixture(scope="module")
def echo() -> Any:
    """tests/programs/epoll_echo.c compiled, in a directory `nobody` can read
    (for setpriv); skips, saying why, without a C compiler."""
    import stat
    import tempfile

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc)")
    build = Path(tempfile.mkdtemp(prefix="irqlab-echo-"))
    try:
        build.chmod(0o755)
        exe = build / "epoll_echo"
        subprocess.run(
            [cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(REPO / "tests" / "programs" / "epoll_echo.c")],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        exe.chmod(exe.stat().st_mode | stat.S_IROTH | stat.S_IXOTH)
        yield str(exe)
    finally:
        shutil.rmtree(build, ignore_errors=True)


_veth_pairs = itertools.count()


@contextlib.contextmanager
def veth_pair(tag: str) -> Iterator[tuple[str, str]]:
    """Two private network namespaces joined by a veth pair, for a live
    test: veth0 (198.18.0.1/30) in the server's, veth1 (198.18.0.2/30) in
    the client's, every link up; yields (server, client) and deletes both
    namespaces however the test ends. ``tag`` tells whose they are."""
    n = next(_veth_pairs)
    server, client = f"irqlab-t-{os.getpid()}-{tag}{n}s", f"irqlab-t-{os.getpid()}-{tag}{n}c"
    try:
        sh("ip", "netns", "add", server)
        sh("ip", "netns", "add", client)
        sh("ip", "-n", server, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", client)
        sh("ip", "-n", server, "addr", "add", "198.18.0.1/30", "dev", "veth0")
        sh("ip", "-n", client, "addr", "add", "198.18.0.2/30", "dev", "veth1")
        for ns, dev in ((server, "lo"), (server, "veth0"), (client, "lo"), (client, "veth1")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        yield server, client
    finally:
        for ns in (server, client):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)
