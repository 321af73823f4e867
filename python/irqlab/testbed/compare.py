"""The simulator's prediction for the testbed, beside the measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from irqlab.run import run
from irqlab.scenario import Scenario

#: veth has no hardware coalescing and no TX completions: whatever a
#: profile's NIC part says, each client packet schedules the NAPI.
VETH_OVERRIDES = {
    "coalesce.adaptive-rx": False,
    "coalesce.rx-usecs": 0,
    "coalesce.rx-frames": 0,
    "nic.tx_completion_irqs": False,
}


def default_scenario() -> Path:
    here = Path("scenarios/testbed/veth-2core.toml")
    if here.is_file():
        return here
    return Path(__file__).resolve().parents[3] / "scenarios" / "testbed" / "veth-2core.toml"


def predict(profiles: tuple[str, ...], low_qps: float, medium_qps: float, connections: int,
            scenario: Optional[Path] = None, duration_s: float = 0.5) -> dict[str, dict[str, Any]]:
    base = Scenario.load(scenario or default_scenario())
    out: dict[str, dict[str, Any]] = {}
    conn = {"load.connections_per_thread": connections}
    for p in profiles:
        closed = run(base, profile=p, overrides={**VETH_OVERRIDES, **conn}, duration_s=duration_s)
        low = run(base, profile=p, overrides={**VETH_OVERRIDES, **conn, "load.qps": low_qps}, duration_s=duration_s)
        med = run(base, profile=p, overrides={**VETH_OVERRIDES, **conn, "load.qps": medium_qps}, duration_s=duration_s)
        out[p] = {"closed": closed.to_dict(), "low": low.to_dict(), "medium": med.to_dict()}
    return out


#: Two throughputs within this fraction of each other are a tie, said as
#: "=" rather than ordered by noise (a single run of each profile: until the
#: testbed repeats its runs, this stands in for a confidence interval).
TIE_FRACTION = 0.01


def ranked(values: dict[str, float], tie: float = TIE_FRACTION) -> list[list[str]]:
    """The names from the lowest value up, those within ``tie`` of the
    previous one's value in the same group."""
    groups: list[list[str]] = []
    last = None
    for name in sorted(values, key=lambda n: (values[n], n)):
        v = values[name]
        if groups and last is not None and abs(v - last) <= tie * max(abs(v), abs(last)):
            groups[-1].append(name)
        else:
            groups.append([name])
        last = v
    return groups


def ranked_text(groups: list[list[str]]) -> str:
    """``a < b = c``."""
    return " < ".join(" = ".join(g) for g in groups)


def direction(change: float, tie: float = TIE_FRACTION) -> str:
    """``+``, ``-`` or ``=`` (within ``tie`` of no change)."""
    return "=" if abs(change) <= tie else ("+" if change > 0 else "-")


def agreement(measured: dict[str, Any], predicted: dict[str, dict[str, Any]]) -> list[str]:
    """Sentences saying where measurement and prediction agree and where not."""
    lines: list[str] = []
    rows = {r["profile"]: r for r in measured["profiles"]}
    if not rows:
        return lines
    qm = {p: r["closed"]["loadgen"]["achieved_qps"] for p, r in rows.items()}
    qs = {p: predicted[p]["closed"]["throughput_qps"] for p in rows}
    order_m = ranked(qm)
    order_s = ranked(qs)
    same = [sorted(g) for g in order_m] == [sorted(g) for g in order_s]
    lines.append(
        f"closed-loop throughput order (ties within {TIE_FRACTION:.0%}): measured {ranked_text(order_m)}; "
        f"simulated {ranked_text(order_s)}" + (" (same)" if same else " (differs)")
    )
    if "no-coalescing" in rows:
        for p in ("busy-wait", "irq-suspend"):
            if p in rows:
                m = qm[p] / qm["no-coalescing"] - 1
                s = qs[p] / qs["no-coalescing"] - 1
                dm, ds = direction(m), direction(s)
                said = "" if dm == ds else (" (one is a tie)" if "=" in (dm, ds) else " (disagree in sign)")
                lines.append(f"{p} vs no-coalescing closed loop: measured {m:+.1%}, simulated {s:+.1%}" + said)
    for p, r in rows.items():
        cpu_m = 100 - r["low"]["server_core"]["idle"]
        cpu_s = 100 - predicted[p]["low"]["cpu_pct"]["idle"]
        lines.append(f"{p} low-load server CPU: measured {cpu_m:.0f} %, simulated {cpu_s:.0f} %")
    return lines
