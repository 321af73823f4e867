"""This machine as the testbed's simulation sees it: its probe and the
thesis's costs rescaled by it (``irqlab testbed probe``, ``compare`` and
``tune`` share it)."""

from __future__ import annotations

from typing import Any

from irqlab.testbed.usage import TestbedUsageError


def machine() -> dict[str, Any]:
    """This machine's probe (the median of :data:`~irqlab.testbed.probe.PROBES`)
    and the testbed scenario's constants rescaled by it; with the probe's
    spread, ``draws`` (the constants rescaled by descriptions drawn from it)
    and ``rescaled_spread`` (each constant's lowest and highest over the
    median description and the draws)."""
    from irqlab.scenario import Scenario
    from irqlab.testbed.compare import default_scenario
    from irqlab.testbed.probe import ProbeError, run_probes

    try:
        probe = run_probes()
    except ProbeError as e:
        raise TestbedUsageError(str(e)) from None
    return describe(probe, thesis_costs(Scenario.load(default_scenario())))


def describe(probe: dict[str, Any], costs: dict[str, Any]) -> dict[str, Any]:
    """The machine description of ``probe``: see :func:`machine`."""
    from irqlab.testbed.probe import rescaled
    from irqlab.testbed.spread import draws

    median = rescaled(probe, costs)
    out: dict[str, Any] = {"probe": probe, "rescaled": median}
    if probe.get("spread"):
        drawn = [rescaled(d, costs) for d in draws(probe)]
        out["draws"] = drawn
        out["rescaled_spread"] = {
            k: [min(d[k] for d in [median, *drawn]), max(d[k] for d in [median, *drawn])]
            for k, v in median.items() if not k.startswith("_") and isinstance(v, (int, float))
        }
    return out


def thesis_costs(testbed) -> dict[str, Any]:
    """The thesis fit that gets rescaled, not the testbed file's numbers
    (which are an earlier probe's rescaling of it), under the cost model the
    testbed scenario runs: the thesis scenario's own fit under the
    disruption model (its warm costs), the fixed-cost fit (the ``[costs]``
    defaults, docs/calibration.md) under fixed costs."""
    from irqlab.scenario import Scenario
    from irqlab.testbed.compare import default_scenario

    if testbed.resolved()["microarch"]["ipc_model"] == "disruption":
        return Scenario.load(default_scenario().parents[1] / "thesis" / "bare-metal.toml").resolved()["costs"]
    return Scenario.from_str('name = "fixed-cost fit"').resolved()["costs"]
