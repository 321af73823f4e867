"""Names a reader knows, with units, for the summary's fields, the scenario's
keys and the reports' columns: ``latency_us.p99`` is "p99 latency (µs)",
``irqs_per_s`` "Interrupts (/s)", ``load.qps`` "Offered load (QPS)".

The unit comes from the name's suffix, as the fields are named
(``irqlab_core::Summary``: units in names); a few common fields have a
name of their own. A name this module does not know keeps its words, with
``_`` as spaces, so nothing is ever hidden.
"""

from __future__ import annotations

#: Fields and keys with a name of their own (the unit included).
NAMES = {
    "throughput_qps": "Throughput (QPS)",
    "load.qps": "Offered load (QPS)",
    "offered_qps": "Offered load (QPS)",
    "offered_pps": "Offered load (packets/s)",
    "cpu_pct.busy": "CPU busy (%)",
    "cpu_pct.idle": "CPU idle (%)",
    "irqs_per_s": "Interrupts (/s)",
    "packets_per_irq": "Packets per interrupt",
    "profile": "Profile",
    "seed": "Seed",
    "ipc": "IPC",
    "gbps": "Throughput (Gbit/s)",
    "iops": "IOPS",
    "qps": "QPS",
    "oio": "Outstanding I/Os",
    "storage.oio": "Outstanding I/Os",
    "storage.iops": "IOPS",
    "cpu.app_cores": "Application cores",
    "user": "User (%)",
    "system": "System (%)",
    "softirq": "Softirq (%)",
    "steal": "Steal (%)",
}

#: Suffix → unit, longest first where one ends another.
UNITS = (
    ("_per_s", "/s"),
    ("_gbps", "Gbit/s"),
    ("_mbps", "Mbit/s"),
    ("_qps", "QPS"),
    ("_pps", "packets/s"),
    ("_pct", "%"),
    ("_usecs", "µs"),
    ("_us", "µs"),
    ("_ns", "ns"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_hz", "Hz"),
    ("_ghz", "GHz"),
    ("_bytes", "bytes"),
    ("_cycles", "cycles"),
)

#: Words kept as written (upper case) in a generated name.
_ACRONYMS = {"irq": "IRQ", "irqs": "IRQs", "ipi": "IPI", "ipis": "IPIs", "cpu": "CPU", "napi": "NAPI", "itr": "ITR",
             "vm": "VM", "vcpu": "vCPU", "vcpus": "vCPUs", "io": "I/O", "ios": "I/Os", "oio": "OIO", "vic": "vIC",
             "rss": "RSS", "rps": "RPS", "rfs": "RFS", "iaps": "IAPS", "gro": "GRO", "ipc": "IPC", "qps": "QPS",
             "iops": "IOPS", "cif": "CIF", "p50": "p50", "p95": "p95", "p99": "p99", "p999": "p99.9", "bm": "BM"}


def unit_of(name: str) -> str:
    """The unit ``name``'s suffix gives (``"µs"`` for ``latency_us``), or ""."""
    for part in reversed(name.split(".")):
        for suffix, unit in UNITS:
            if part.endswith(suffix) and len(part) > len(suffix):
                return unit
    return ""


def label(name: str) -> str:
    """A heading or an axis label for the field or key ``name``: its own
    name (:data:`NAMES`), else its words with the unit its suffix gives in
    parentheses (``latency_us.p99`` → "p99 latency (µs)")."""
    if name in NAMES:
        return NAMES[name]
    parts = name.split(".")
    unit = unit_of(name)
    if len(parts) >= 2 and unit_of(parts[-2]) and not unit_of(parts[-1]):
        # latency_us.p99: the statistic first, then what it is of.
        words = f"{_words(parts[-1])} {_words(_strip(parts[-2]))}"
    else:
        words = _words(_strip(parts[-1]))
        if len(parts) >= 2 and parts[-2] not in ("summary",):
            words = f"{words} ({_words(parts[-2])})" if not unit else words
    first = words.split(" ", 1)[0]
    if first not in _ACRONYMS.values():
        words = words[:1].upper() + words[1:]
    return f"{words} ({unit})" if unit else words


def _strip(part: str) -> str:
    for suffix, _unit in UNITS:
        if part.endswith(suffix) and len(part) > len(suffix):
            return part[: -len(suffix)]
    return part


def _words(text: str) -> str:
    return " ".join(_ACRONYMS.get(w.lower(), w) for w in text.replace("-", "_").split("_") if w)
