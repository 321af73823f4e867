"""irqlab: a laboratory for the way a server takes in packets.

The simulator lives in Rust (``irqlab-core``) behind the private native module
``irqlab._core``; this package is the user-facing side::

    import irqlab

    scenario = irqlab.Scenario.load("scenarios/thesis/bare-metal.toml")
    summary = irqlab.run(scenario, profile="irq-suspend", seed=1)
    print(summary.throughput_qps, summary.latency_us.p99)
    frame = summary.to_pandas()

Studies (grids of runs) are in :mod:`irqlab.study`; their results are read
with :func:`irqlab.results.load`.
"""

from irqlab._core import ScenarioError, __version__
from irqlab.profiles import PROFILES, profile_knobs
from irqlab.scenario import Scenario
from irqlab.summary import Record, Summary, flatten
from irqlab.run import run
from irqlab import results

__all__ = [
    "PROFILES",
    "Record",
    "Scenario",
    "ScenarioError",
    "Summary",
    "__version__",
    "flatten",
    "profile_knobs",
    "results",
    "run",
]
