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


def agreement(measured: dict[str, Any], predicted: dict[str, dict[str, Any]]) -> list[str]:
    """Sentences saying where measurement and prediction agree and where not."""
    lines: list[str] = []
    rows = {r["profile"]: r for r in measured["profiles"]}
    if not rows:
        return lines
    qm = {p: r["closed"]["loadgen"]["achieved_qps"] for p, r in rows.items()}
    qs = {p: predicted[p]["closed"]["throughput_qps"] for p in rows}
    order_m = sorted(qm, key=qm.get)
    order_s = sorted(qs, key=qs.get)
    lines.append(
        "closed-loop throughput order: measured " + " < ".join(order_m) + "; simulated " + " < ".join(order_s)
        + (" (same)" if order_m == order_s else " (differs)")
    )
    if "no-coalescing" in rows:
        for p in ("busy-wait", "irq-suspend"):
            if p in rows:
                m = qm[p] / qm["no-coalescing"] - 1
                s = qs[p] / qs["no-coalescing"] - 1
                agree = (m > 0) == (s > 0)
                lines.append(f"{p} vs no-coalescing closed loop: measured {m:+.1%}, simulated {s:+.1%}" + ("" if agree else " (disagree in sign)"))
    for p, r in rows.items():
        cpu_m = 100 - r["low"]["server_core"]["idle"]
        cpu_s = 100 - predicted[p]["low"]["cpu_pct"]["idle"]
        lines.append(f"{p} low-load server CPU: measured {cpu_m:.0f} %, simulated {cpu_s:.0f} %")
    return lines
