"""Type stubs of the native module ``irqlab._core`` (crates/irqlab-py).

The module only converts: scenario text, profile and ``key=value`` overrides
in; JSON text out; core errors as :class:`ScenarioError`, real-kernel errors
(``linux_*``) as :class:`LinuxError`. A panic inside the core surfaces as
:class:`RuntimeError` (its message says it is a bug). Arguments of the wrong
type raise pyo3's :class:`TypeError`; the Python package checks types first
and names the parameter instead.
"""

from typing import Any, Optional, Sequence

__version__: str
#: The largest scenario file read, bytes (irqlab_core::scenario::MAX_SCENARIO_BYTES).
MAX_SCENARIO_BYTES: int

class ScenarioError(ValueError):
    """A scenario, profile or override was rejected (one sentence naming the field)."""

class LinuxError(RuntimeError):
    """A real-kernel operation was refused (one sentence: not root, unknown
    device, device without NAPI, kernel without the feature, or the kernel's
    own refusal with its errno and reason)."""

class PolicyError(RuntimeError):
    """A policy given to a run raised, returned what is not a knob setting,
    or set a knob out of its range (one sentence naming the policy and the
    knob; the policy's own exception is the ``__cause__``)."""

class Sample:
    """What a policy sees at a call (crates/irqlab-py/src/policy.rs);
    :mod:`irqlab.policy` documents each field."""

    @property
    def time_ns(self) -> int: ...
    @property
    def measuring(self) -> bool: ...
    @property
    def packets(self) -> int: ...
    @property
    def packets_busy_polled(self) -> int: ...
    @property
    def hard_irqs(self) -> int: ...
    @property
    def softirq_rounds(self) -> int: ...
    @property
    def watchdog_fires(self) -> int: ...
    @property
    def requests_completed(self) -> int: ...
    @property
    def latency_sum_ns(self) -> int: ...
    @property
    def busy_poll_usecs(self) -> list[int]: ...
    @property
    def queues(self) -> list[dict[str, Optional[int]]]: ...
    @property
    def napis(self) -> list[dict[str, int]]: ...
    @property
    def cores(self) -> list[dict[str, int]]: ...
    @property
    def threads(self) -> list[dict[str, int]]: ...
    @property
    def rps_cpus(self) -> Optional[int]: ...
    @property
    def rps_ipis(self) -> Optional[int]: ...

class NetDim:
    """Net DIM of one completion queue (crates/irqlab-policy/src/dim), as
    :class:`irqlab.policy.dim.Dim` drives it."""

    def __init__(self, mode: str = "cqe", direction: str = "rx") -> None: ...
    def on_sample(self, time_ns: int, events: int, packets: int, bytes: int) -> Optional[tuple[int, int]]:
        """The new moderation ``(usec, frames)`` when DIM changes profile, else None."""
    def work_done(self) -> None: ...
    @property
    def profile_ix(self) -> int: ...
    @property
    def moderation(self) -> tuple[int, int]: ...

class ItrPolicy:
    """An 82599 ITR policy (``"ixgbe"`` or ``"linear"``, crates/irqlab-policy/src/itr),
    as :class:`irqlab.policy.itr.Itr` drives it."""

    def __init__(self, kind: str) -> None: ...
    def observe(self, time_ns: int, rx_packets: int, rx_bytes: int, tx_packets: int, tx_bytes: int) -> Optional[int]:
        """The new rate (interrupts per second) when the policy writes one, else None."""
    @property
    def rate_per_s(self) -> Optional[int]: ...

class BatchTimeout:
    """The adaptive ``irq-suspend-timeout`` (crates/irqlab-policy/src/suspend),
    as :class:`irqlab.policy.irq_suspend.AdaptiveIrqSuspend` drives it."""

    def __init__(self, margin: float, floor_ns: int, ceiling_ns: int) -> None: ...
    def observe(self, longest_batch_ns: int) -> Optional[int]:
        """The timeout to set (ns) when it changes, else None."""
    @property
    def current_ns(self) -> Optional[int]: ...

def policy_changes(name: str, answer: Any) -> list[tuple[str, Optional[int], int]]:
    """A policy's answer (None, or a dict of knob settings) as ``(knob,
    target, value)`` triples, read as a run reads it; raises
    :class:`PolicyError` for what is not a setting."""

def run(
    toml_text: str,
    profile: Optional[str] = None,
    overrides: Sequence[str] = ...,
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
    cancel: Optional[Any] = None,
    policy: Optional[Any] = None,
) -> str:
    """Run the scenario; return the summary as JSON text. Releases the GIL.

    ``policy`` (an object with ``period_us`` and ``observe(sample)``,
    :mod:`irqlab.policy`) is called with the GIL at time 0 and at every
    multiple of its period; its failure raises :class:`PolicyError`.

    ``cancel`` is an object with ``is_set()`` (a ``threading.Event``): once
    set, the run stops at its next check and raises ``KeyboardInterrupt``.

    ``seed`` and ``duration_s`` are applied as the overrides ``run.seed`` and
    ``run.duration_s`` after ``overrides``. Every few million events the core
    checks for signals: Ctrl-C raises :class:`KeyboardInterrupt` (or whatever
    the signal's handler raises) instead of running to the end. When no
    request completes, the summary's ``latency_us`` fields are ``null`` and its
    ``warnings`` say so; ``drops_by_site`` and ``retransmits`` detail ``drops``.
    ``held_at_client`` counts open-loop requests that waited at the client
    for their connection (``load.open_loop_backlog = "client"``, mutilate).
    ``dim`` is what net DIM did (per direction, the share of the measured
    time each profile was in force and the profile changes), ``null`` when
    no completion queue runs DIM. ``storage`` (``vm.kind = "lsilogic"``
    only) is the guest's storage I/O: IOPS, cycles per I/O, guest
    interrupts, IPIs, and vIC's choices when it is on. In a VM run ``vm``
    has ``vms``, ``host_cpus`` and ``host_busy_cpus`` (busy time over all
    host CPUs, in CPUs: top's %CPU of every process over 100); with several
    SR-IOV VMs ``bulk.vm_gbps`` is each VM's throughput.
    """

def resolve(
    toml_text: str,
    profile: Optional[str] = None,
    overrides: Sequence[str] = ...,
) -> str:
    """Validate the scenario; return the resolved configuration as JSON text."""

def profiles() -> list[str]:
    """The profile names, in the core's order."""

def profile_fields() -> list[str]:
    """The scenario fields every profile sets (``Profile::settings``), in
    the knob table's order."""

def knobs() -> list[dict[str, Any]]:
    """The knob table (crates/irqlab-knobs), one dict per knob in its order:
    ``path`` (scenario field), ``kernel_name``, ``linux_name`` (``None``:
    ``irqlab linux apply`` does not set it), ``part`` (``napi``,
    ``coalesce``, ``epoll``, ``itr``), ``unit``, ``kernel_range`` and
    ``sim_range`` (inclusive ``(min, max)``), ``sim_why`` (why the simulator
    takes less, or ``None``), ``default`` (bool or int), ``doc``, ``source``
    and ``profiles`` (``{profile: value}`` for the knobs profiles set)."""

def knobs_markdown() -> str:
    """README.md's knob tables, with the lines that begin and end them."""

def linux_show(dev: str) -> str:
    """Every NAPI of device ``dev`` and its coalescing, as JSON text.
    Releases the GIL; raises LinuxError."""

def linux_queue_stats(dev: str) -> Optional[list[dict[str, Any]]]:
    """The per-queue statistics of device ``dev`` (netdev ``qstats-get``,
    Linux 6.8+), one dict per queue, RX queues first, each type by index:
    ``queue_type`` (``"rx"``, ``"tx"``), ``queue_id``, and the counters
    ``rx_packets``, ``rx_bytes``, ``tx_packets``, ``tx_bytes``,
    ``rx_hw_drops``, ``rx_alloc_fail`` (``None``: not kept by the driver).
    ``None`` when the device keeps no per-queue statistics (veth) or the
    kernel has none; ``[]`` when the device is down. Reads only, needs no
    privilege; releases the GIL; raises LinuxError."""

def linux_plan(dev: str, profile: str, napi_id: Optional[int] = None) -> str:
    """What applying ``profile`` to ``dev`` (all NAPIs, or ``napi_id``) would
    change, as JSON text; touches nothing. Raises LinuxError."""

def linux_apply(dev: str, profile: str, napi_id: Optional[int] = None, dry_run: bool = False) -> str:
    """Apply ``profile`` to ``dev``, saving its previous state first (in
    ``$IRQLAB_STATE_DIR`` or ``/run/irqlab``); with ``dry_run`` only report.
    The report (changed, unchanged, skipped, state_file) as JSON text.
    Needs CAP_NET_ADMIN unless ``dry_run``; raises LinuxError."""

#: The knobs linux_set_knob takes, with the largest value the kernel accepts
#: (the knob table's ``kernel_range``), per-NAPI ones first.
TUNABLE_KNOBS: list[tuple[str, int]]

#: Each knob of the linux reports (kernel or ethtool name) and the scenario
#: field a profile sets it through (``napi.napi_defer_hard_irqs``).
LINUX_KNOB_FIELDS: list[tuple[str, str]]

def linux_set_knob(dev: str, knob: str, value: int, napi_id: Optional[int] = ..., dry_run: bool = ...) -> str: ...
def linux_restore(dev: str) -> str:
    """Put back the settings ``dev`` had before the first apply and forget
    them; the report as JSON text (``changed_since_apply``: knobs found at
    another value than irqlab left them at, restored all the same). Needs
    CAP_NET_ADMIN; raises LinuxError."""
def linux_forget(dev: str) -> str:
    """Delete the state saved for ``dev`` in this network namespace without
    restoring anything (``irqlab linux restore DEV --forget``); the report
    (``forgotten``: each file, its profile and saved_at) as JSON text.
    Raises LinuxError when there is none."""
def linux_state_file(dev: str) -> Optional[str]:
    """The file of the state saved for ``dev`` in this network namespace, or
    None; raises LinuxError for a file under its name that is another
    namespace's or device's, or whose namespace cannot be told."""

def _selftest_panic(message: str) -> None:
    """Panic inside the binding's guard (tests only): raises RuntimeError."""


class GoldenSection:
    """The golden-section search policy (irqlab_policy::search): over
    [min, max], stopping when the interval is no wider than ``accept``;
    ``maximize`` or minimise; ``reuse`` keeps the surviving probe's
    measurement. Bad arguments raise :class:`ValueError` (one sentence)."""

    def __init__(self, min: float, max: float, accept: float, maximize: bool = True, reuse: bool = False) -> None: ...
    def probe(self) -> tuple[bool, float]:
        """``(done, value)``: measure at ``value``, or (done) hold it."""
    def observe(self, value: float) -> tuple[bool, float]:
        """The objective measured at the probe; the next ``(done, value)``. NaN counts as the worst."""
    def restart(self) -> None: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def done(self) -> bool: ...
    @property
    def best(self) -> float:
        """The middle of the last interval, once ``done``; until then the
        middle of the whole range, which no probe measured: not a value to
        report as the best."""
    @property
    def interval(self) -> tuple[float, float]: ...
