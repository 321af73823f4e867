"""Your own interrupt-management policy, in Python.

A policy is an object with ``period_us`` (the microseconds between its
calls) and ``observe(sample) -> changes``. ``irqlab run SCENARIO --policy
my_policy.py:MyPolicy`` (or :func:`irqlab.run` with ``policy=``) calls it
once before the run starts (simulated time 0) and then every ``period_us``
of simulated time; the run pauses between two events, so the call costs
simulated time nothing and the engine crosses into Python only then.

``sample`` holds what a kernel exposes, counted since the run began (the
warm-up included); subtract the previous sample's values for rates:

============================  ===============================================
``time_ns``                   simulated time of the call
``measuring``                 the measured window has begun (warm-up over)
``packets``                   packets the polls delivered to sockets
``packets_busy_polled``       of those, taken by a busy poll
``hard_irqs``                 device interrupts
``softirq_rounds``            ``NET_RX_SOFTIRQ`` rounds (``net_rx_action``)
``watchdog_fires``            NAPI watchdog expiries (gro-flush / suspend)
``requests_completed``        requests whose reply reached the client
``latency_sum_ns``            their latencies summed (mean = difference /
                              difference of ``requests_completed``)
``queues``                    per queue: ``irqs``, ``packets`` and ``bytes``
                              (what the driver took from its RX ring),
                              ``tx_packets`` and ``tx_bytes`` (the TX
                              completions it reaped),
                              ``ring_packets`` (unpolled on the ring now),
                              ``drops``, ``rx_usecs``,
                              ``rx_frames`` (None on the 82599),
                              ``itr_interval_ns`` (the 82599's; None on the
                              ConnectX-4)
``napis``                     per NAPI: ``defer_hard_irqs``,
                              ``gro_flush_timeout_ns``, ``irq_suspend_timeout_ns``
``cores``                     per core: ``user_ns``, ``system_ns``,
                              ``softirq_ns``, ``irq_ns``, ``idle_ns``,
                              ``backlog_packets`` (packets in its
                              software-steering backlog now; 0 without)
``busy_poll_usecs``           per application thread, its epoll's value
``threads``                   per application thread: ``batches`` (the
                              batches it served: from ``epoll_wait``
                              returning events to its next ``epoll_wait``),
                              ``batch_ns`` (their times summed),
                              ``batch_max_ns`` (the longest that ended since
                              the previous call; 0: none)
``rps_cpus``                  the RPS mask in force (bit i: core i) where
                              the run steers in software
                              (``steering.scheme`` rps, rfs or iaps); None
                              otherwise
``rps_ipis``                  software steering's IPIs handled there; None
                              otherwise
============================  ===============================================

``changes`` is ``None`` (change nothing) or a dict of knob settings by the
kernel's names, for every queue, NAPI or thread (``{"rx-usecs": 8}``) or
for some (``{"rx-usecs": {0: 8, 3: 16}}``): ``defer-hard-irqs``,
``gro-flush-timeout`` and ``irq-suspend-timeout`` (per NAPI, ns for the
timeouts), ``rx-usecs`` and ``rx-frames`` (per queue, the ConnectX-4's RX
completion queue), ``InterruptThrottleRate`` (per queue, the 82599's
vector: a static rate, as ``ethtool -C rx-usecs`` sets one),
``busy_poll_usecs`` (per thread, its epoll instance's ``EPIOCSPARAMS``)
and ``rps_cpus`` (the RPS mask of every RX queue, as
``/sys/class/net/DEV/queues/rx-N/rps_cpus`` holds it, where the run steers
in software: application cores only, not 0). Units and ranges are the knob table's
(``irqlab knobs``); a value outside a knob's range, an unknown knob, an
exception in ``observe`` or a value of the wrong type stops the run with
one sentence naming the policy and the knob (:class:`PolicyError`, the
policy's own exception chained as its ``__cause__``).

The summary's ``policy`` records the calls, every setting made (the first
10,000, with their simulated times) and the policy's own numbers at the
end: :meth:`Policy.fields` (by default its public attributes that are
numbers).

The built-in policies are Python objects too, backed by the Rust code the
simulator runs: :class:`irqlab.policy.dim.Dim` (net DIM, ``lib/dim``) and
:class:`irqlab.policy.golden_section.GoldenSectionTuner` (the SR-IOV
paper's search), :class:`irqlab.policy.itr.Itr` (the 82599's ITR policies)
and :class:`irqlab.policy.irq_suspend.AdaptiveIrqSuspend`
(``irq-suspend-timeout`` from the batch times); subclass them or compare against them.

A policy runs on a bare-metal server of sockets or of bulk streams (the
IAPS paper's; no ``vm``, forwarding or storage workload). RPS exists in the
simulator only where a scenario steers in software, which today is the
bulk streams' receive path: there a policy may move the mask, elsewhere
``rps_cpus`` is refused.
"""

from __future__ import annotations

import importlib.util
import numbers
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from irqlab._core import PolicyError, Sample

__all__ = ["Policy", "PolicyError", "Sample", "load_policy", "PolicyLoadError"]

#: A policy's answer: nothing, or knob settings (for all, or by index).
Changes = Optional[Mapping[str, Union[int, Mapping[int, int]]]]


class Policy:
    """A base class for policies (any object with ``period_us`` and
    ``observe`` will do). Subclass it and override :meth:`observe`."""

    #: Simulated microseconds between calls.
    period_us: float = 100.0

    def observe(self, sample: Sample) -> Changes:
        """The knob settings to make now (None: none)."""
        return None

    def fields(self) -> dict[str, float]:
        """The numbers to record in the summary at the run's end: the
        public attributes that are numbers (or bools), by default."""
        return {
            k: float(v)
            for k, v in vars(self).items()
            if not k.startswith("_") and isinstance(v, (numbers.Real, bool))
        }


class PolicyLoadError(ValueError):
    """A ``FILE.py:CLASS`` that names no policy; one sentence."""


def load_policy(spec: str, base: Optional[Path] = None) -> Any:
    """The policy object ``FILE.py:CLASS`` names: the class ``CLASS`` of the
    Python file ``FILE.py`` (relative to ``base``, default the current
    directory), made with no arguments."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise PolicyLoadError(f"--policy must be FILE.py:CLASS (a Python file and a class in it), not {spec!r}")
    path = Path(path_text)
    if base is not None and not path.is_absolute():
        path = base / path
    if path.suffix != ".py":
        raise PolicyLoadError(f"--policy's file must be a Python file ending in .py, not {path_text!r}")
    if not path.is_file():
        raise PolicyLoadError(f"--policy's file {str(path)!r} does not exist or is not a regular file")
    if not name.isidentifier():
        raise PolicyLoadError(f"--policy's class must be a Python name, not {name!r}")
    module_name = f"irqlab_user_policy_{abs(hash(str(path.resolve())))}"
    spec_obj = importlib.util.spec_from_file_location(module_name, path)
    if spec_obj is None or spec_obj.loader is None:
        raise PolicyLoadError(f"--policy's file {str(path)!r} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec_obj)
    sys.modules[module_name] = module
    try:
        spec_obj.loader.exec_module(module)
    except Exception as e:  # the user's file: any error it raises is theirs
        del sys.modules[module_name]
        raise PolicyLoadError(
            f"--policy's file {str(path)!r} raised {type(e).__name__} as it was loaded: {e}"
        ) from e
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        raise PolicyLoadError(f"--policy's file {str(path)!r} has no class {name!r}")
    try:
        obj = cls()
    except Exception as e:
        raise PolicyLoadError(f"--policy's class {name!r} raised {type(e).__name__} when made with no arguments: {e}") from e
    if not callable(getattr(obj, "observe", None)):
        raise PolicyLoadError(f"--policy's class {name!r} has no observe(sample) method")
    return obj
