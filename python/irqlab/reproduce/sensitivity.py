"""Which of the thesis's claims hang on a constant nobody fitted.

Every cost constant that Table 4.1 did not fit (``docs/calibration.md``,
"Constants held fixed") is scaled, one at a time, to half and to one and a
half times its value; Table 4.1 and Figure 4.1 are run again as studies
(``OUT/sensitivity/<constant>-x<factor>/``) and the claims are checked on
each. The result is, per constant and factor, the largest change of a
profile's closed-loop throughput and the claims that flip (hold at the
baseline and not with the change, or the reverse), drawn as a tornado chart.
The variants are bare metal only: the VM setups (Tables 4.2-4.5) and
their claims are not rerun.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from irqlab.reproduce.thesis import PROFILES, ThesisResult, run_thesis, shape_checks
from irqlab.scenario import Scenario

#: The constants Table 4.1 does not constrain, as scenario fields.
UNFITTED = (
    "nic.wire_latency_ns",
    "nic.dma_latency_ns",
    "cpu.wakeup_latency_ns",
    "costs.context_switch_cycles",
    "costs.wakeup_cycles",
    "costs.timer_irq_cycles",
    "costs.busy_poll_iteration_cycles",
    "costs.epoll_event_cycles",
    "costs.send_cycles_per_64b",
    "costs.tx_clean_cycles",
    # The machine's side of the disruption model: sourced, not fitted
    # (scenarios/thesis/bare-metal.toml [microarch]).
    "microarch.l2_latency_cycles",
    "microarch.l1i_bytes",
)

#: ±50 % (issue 10, item 3).
FACTORS = (0.5, 1.5)


@dataclass
class Variant:
    """One constant at one factor, against the baseline."""

    field: str
    factor: float
    value: int
    #: Closed-loop QPS change per profile, percent.
    qps_change_pct: dict[str, float] = field(default_factory=dict)
    #: Claims that hold at the baseline and not here ("lost") or the reverse ("gained").
    lost: list[str] = field(default_factory=list)
    gained: list[str] = field(default_factory=list)

    @property
    def largest_qps_change_pct(self) -> float:
        return max(self.qps_change_pct.values(), key=abs)


def _value(scenario: Scenario, dotted: str) -> int:
    node = scenario.resolved()
    for part in dotted.split("."):
        node = node[part]
    return int(node)


def run_sensitivity(
    out: Path,
    scenario: Scenario,
    baseline: ThesisResult,
    *,
    fields: Sequence[str] = UNFITTED,
    factors: Sequence[float] = FACTORS,
    closed_duration_s: Optional[float] = None,
    open_duration_s: Optional[float] = None,
    jobs: Optional[int] = None,
    resume: bool = False,
    quiet: bool = False,
    seed: Optional[int] = None,
) -> list[Variant]:
    """Run every variant (``len(fields) × len(factors)`` reproductions) and
    compare each with ``baseline``, which must come from the same durations
    and base ``seed``."""
    base_checks = {c.claim: c.holds for c in shape_checks(baseline)}
    variants = []
    for dotted in fields:
        default = _value(scenario, dotted)
        for factor in factors:
            value = max(0, int(round(default * factor)))
            directory = out / "sensitivity" / f"{dotted}-x{factor:g}"
            directory.mkdir(parents=True, exist_ok=True)
            result = run_thesis(
                Path(scenario.source) if scenario.source else None,
                closed_duration_s=closed_duration_s,
                open_duration_s=open_duration_s,
                seed=seed,
                out=directory,
                jobs=jobs,
                resume=resume,
                quiet=quiet,
                overrides=(f"{dotted}={value}",),
                cai_karsten=False,
                leave_one_out=False,
                vm=False,
            )
            checks = {c.claim: c.holds for c in shape_checks(result)}
            v = Variant(dotted, factor, value)
            for p in PROFILES:
                b, x = baseline.closed[p].throughput_qps, result.closed[p].throughput_qps
                v.qps_change_pct[p] = 100.0 * (x / b - 1.0) if b else math.nan
            v.lost = [c for c, held in base_checks.items() if held and checks.get(c) is False]
            v.gained = [c for c, held in base_checks.items() if not held and checks.get(c) is True]
            variants.append(v)
    return variants


def rows(variants: Sequence[Variant]) -> list[dict[str, object]]:
    """One row per variant for CSV and the report."""
    return [
        {
            "constant": v.field,
            "factor": v.factor,
            "value": v.value,
            **{f"qps_change_pct.{p}": v.qps_change_pct[p] for p in PROFILES},
            "claims_lost": "; ".join(v.lost),
            "claims_gained": "; ".join(v.gained),
        }
        for v in variants
    ]


def tornado(variants: Sequence[Variant], path: Path) -> Path:
    """The tornado chart: per constant, the largest closed-loop QPS change of
    any profile at ×0.5 (left bar) and ×1.5 (right bar), largest first; a
    constant whose change flips a claim is marked and the count given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from irqlab import plotstyle

    by_field: dict[str, list[Variant]] = {}
    for v in variants:
        by_field.setdefault(v.field, []).append(v)
    order = sorted(by_field, key=lambda f: max(abs(v.largest_qps_change_pct) for v in by_field[f]))
    flips = {f: sum(len(v.lost) + len(v.gained) for v in by_field[f]) for f in order}
    with plt.rc_context(plotstyle.RC):
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(order) + 1.5))
        for i, f in enumerate(order):
            for v in by_field[f]:
                ax.barh(i, v.largest_qps_change_pct, color="tab:blue" if v.factor < 1 else "tab:orange", height=0.6)
        # The flips in the right margin, off the bars.
        for i, f in enumerate(order):
            if flips[f]:
                text = f" {flips[f]} claim{'s' if flips[f] != 1 else ''} flip"
                ax.text(1.0, i, text, va="center", ha="left", fontsize=8, color="tab:red",
                        transform=ax.get_yaxis_transform())
        ax.set_yticks(range(len(order)), [f + (" *" if any(v.lost or v.gained for v in by_field[f]) else "")
                                          for f in order])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.grid(False, axis="y")
        ax.set_xlabel("Largest change of a profile's closed-loop QPS (%)")
        ax.set_ylabel("Unfitted constant")
        ax.set_title("Unfitted constants at ×0.5 (blue) and ×1.5 (orange); * flips a thesis claim")
        return plotstyle.save(fig, path)
