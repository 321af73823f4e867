"""Studies: grids of runs (profiles × knobs × seeds), run on every core or a
Dask cluster into a results directory, then plotted and reported.

    from irqlab.study import Axis, build_study, sweep
    from irqlab import Scenario, results

    study = build_study(Scenario.load("scenarios/thesis/bare-metal.toml"), name="qps",
                        profiles=["busy-wait", "irq-suspend"],
                        axes=[Axis("load.qps", (100_000, 300_000, 500_000))], duration_s=0.2)
    sweep(study, "results/qps")
    frame = results.load("results/qps")
"""

from irqlab.study.axis import Axis, AxisError, parse_grid_flag, parse_values
from irqlab.study.spec import PlotSpec, Point, Study, StudyError, build_study, load_study_file, point_seed
from irqlab.study.sweep import SweepResult, sweep

__all__ = [
    "Axis",
    "AxisError",
    "PlotSpec",
    "Point",
    "Study",
    "StudyError",
    "SweepResult",
    "build_study",
    "load_study_file",
    "parse_grid_flag",
    "parse_values",
    "point_seed",
    "sweep",
]
