"""Studies: the points and their seeds, the fingerprint that ties a results
directory to one sweep, validation against the scenario, and study files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SMALL
from irqlab.cli import main
from irqlab.scenario import Scenario
from irqlab.study.axis import Axis
from irqlab.study.spec import (
    MAX_POINTS_WITHOUT_YES,
    PlotSpec,
    StudyError,
    build_study,
    is_study_file,
    load_study_file,
    point_seed,
)
from irqlab.study.store import STUDY


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return Scenario.load(SMALL)


def study(scenario: Scenario, **kw: object):
    args: dict = {
        "name": "s",
        "profiles": ["irq-suspend", "busy-wait"],
        "axes": [Axis("load.qps", (1000, 2000, 3000)), Axis("cpu.app_cores", (1, 2))],
        "seeds": 2,
        "seed": 5,
        "duration_s": 0.01,
    }
    args.update(kw)
    return build_study(scenario, **args)


def seeds_by_identity(s) -> dict:
    return {(p.profile, p.knobs, p.replicate): p.seed for p in s.points()}


# -- points and seeds -------------------------------------------------------------


def test_points_are_the_cross_product_in_grid_order(scenario: Scenario) -> None:
    s = study(scenario)
    points = list(s.points())
    assert s.size == len(points) == 2 * 3 * 2 * 2
    assert [(p.index, p.replicate) for p in points[:4]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # Profiles outermost, then the axes in order, the last axis fastest.
    assert points[0].profile == "irq-suspend" and points[-1].profile == "busy-wait"
    assert [p.knobs for p in points[:6:2]] == [
        (("load.qps", 1000), ("cpu.app_cores", 1)),
        (("load.qps", 1000), ("cpu.app_cores", 2)),
        (("load.qps", 2000), ("cpu.app_cores", 1)),
    ]
    assert len({p.key for p in points}) == len(points)


def test_same_study_same_seeds(scenario: Scenario) -> None:
    a = [(p.key, p.seed) for p in study(scenario).points()]
    b = [(p.key, p.seed) for p in study(scenario).points()]
    assert a == b


def test_seeds_differ_between_points_and_replicates(scenario: Scenario) -> None:
    seeds = [p.seed for p in study(scenario).points()]
    assert len(set(seeds)) == len(seeds)
    assert all(0 <= s < 2**63 for s in seeds)


def test_seed_does_not_depend_on_order(scenario: Scenario) -> None:
    forward = seeds_by_identity(study(scenario))
    backward = seeds_by_identity(
        study(
            scenario,
            profiles=["busy-wait", "irq-suspend"],
            axes=[Axis("load.qps", (3000, 1000, 2000)), Axis("cpu.app_cores", (2, 1))],
        )
    )
    assert forward == backward


def test_seed_of_a_point_does_not_depend_on_the_other_values_of_its_axes(scenario: Scenario) -> None:
    # Adding values to an axis (extending a sweep) keeps the seeds of the
    # points already there, so they need not run again for a new seed.
    small = seeds_by_identity(study(scenario, axes=[Axis("load.qps", (1000, 2000))]))
    large = seeds_by_identity(study(scenario, axes=[Axis("load.qps", (500, 1000, 2000, 4000))]))
    assert small.items() <= large.items()


def test_seed_depends_on_base_seed(scenario: Scenario) -> None:
    a = seeds_by_identity(study(scenario, seed=5))
    b = seeds_by_identity(study(scenario, seed=6))
    assert a.keys() == b.keys()
    assert all(a[k] != b[k] for k in a)


def test_point_seed_is_a_pure_function_of_base_seed_and_key(scenario: Scenario) -> None:
    for p in study(scenario).points():
        assert p.seed == point_seed(5, p.key)
    # The key keeps TOML types: 1 and 1.0 are different points.
    ints = next(study(scenario, axes=[Axis("cpu.app_cores", (1,))]).points())
    floats = next(study(scenario, axes=[Axis("cpu.app_cores", (1.0,))]).points())
    assert ints.key != floats.key and ints.seed != floats.seed


def test_task_is_plain_data(scenario: Scenario) -> None:
    s = study(scenario, overrides=["load.depth=2"])
    p = next(s.points())
    task = s.task(p)
    assert json.loads(json.dumps(task)) == task
    assert task["seed"] == p.seed and task["duration_s"] == 0.01
    assert task["overrides"] == ["load.depth=2"]
    assert task["knobs"] == [["load.qps", 1000], ["cpu.app_cores", 1]]


# -- fingerprint --------------------------------------------------------------------


def test_fingerprint_ignores_name_description_and_plots(scenario: Scenario) -> None:
    base = study(scenario).fingerprint()
    assert study(scenario, name="other").fingerprint() == base
    assert study(scenario, description="a figure").fingerprint() == base
    assert study(scenario, plots=[PlotSpec(x="load.qps", y="latency_us.p99")]).fingerprint() == base


@pytest.mark.parametrize(
    "change",
    [
        {"seeds": 3},
        {"seed": 6},
        {"duration_s": 0.02},
        {"profiles": ["irq-suspend"]},
        {"axes": [Axis("load.qps", (1000, 2000, 3000))]},
        {"axes": [Axis("load.qps", (1000, 2000, 4000)), Axis("cpu.app_cores", (1, 2))]},
        {"axes": [Axis("cpu.app_cores", (1, 2)), Axis("load.qps", (1000, 2000, 3000))]},
        {"overrides": ["load.depth=2"]},
    ],
)
def test_fingerprint_changes_with_what_the_results_depend_on(scenario: Scenario, change: dict) -> None:
    assert study(scenario, **change).fingerprint() != study(scenario).fingerprint()


def test_fingerprint_changes_with_the_scenario_text(scenario: Scenario) -> None:
    other = Scenario.from_str(scenario.text + "\n# a comment\n")
    assert study(other).fingerprint() != study(scenario).fingerprint()


@pytest.mark.parametrize(
    "written",
    [
        ["load.interarrival=exponential"],
        ['load.interarrival="exponential"'],
        ["load.interarrival = exponential"],
        [" load.interarrival= 'exponential'"],
    ],
)
def test_fingerprint_reads_overrides_by_value_not_spelling(scenario: Scenario, written: list[str]) -> None:
    # The study file written beside the results spells overrides its own way;
    # re-running it must find the same sweep.
    canonical = study(scenario, overrides=["load.interarrival=exponential"]).fingerprint()
    assert study(scenario, overrides=written).fingerprint() == canonical


def test_fingerprint_tells_float_from_int_overrides(scenario: Scenario) -> None:
    a = study(scenario, overrides=["run.warmup_s=1e-3"]).fingerprint()
    assert study(scenario, overrides=["run.warmup_s=0.001"]).fingerprint() == a
    assert study(scenario, overrides=["run.warmup_s=0.002"]).fingerprint() != a


# -- validation ------------------------------------------------------------------------


def refused(scenario: Scenario, **kw: object) -> str:
    with pytest.raises(StudyError) as info:
        study(scenario, **kw)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_axis_field_is_refused_by_name(scenario: Scenario) -> None:
    message = refused(scenario, axes=[Axis("load.qpz", (1, 2))])
    assert "load.qpz" in message and "--grid" in message
    assert "not a field" in message
    message = refused(scenario, axes=[Axis("nosuch.section", (1,))])
    assert "nosuch.section" in message


@pytest.mark.parametrize("field", ["run.seed", "run.profile", "profile"])
def test_reserved_fields_are_refused(scenario: Scenario, field: str) -> None:
    message = refused(scenario, axes=[Axis(field, ("a", "b") if "profile" in field else (1, 2))])
    assert field in message and "cannot be an axis" in message
    assert ("--seeds" in message) if field == "run.seed" else ("--profile" in message)


def test_field_given_twice_is_refused(scenario: Scenario) -> None:
    message = refused(scenario, axes=[Axis("load.qps", (1,)), Axis("load.qps", (2,))])
    assert "load.qps" in message and "twice" in message


def test_duration_axis_and_duration_flag_conflict(scenario: Scenario) -> None:
    message = refused(scenario, axes=[Axis("run.duration_s", (0.01, 0.02))], duration_s=0.01)
    assert "run.duration_s" in message and "--duration" in message
    ok = study(scenario, axes=[Axis("run.duration_s", (0.01, 0.02))], duration_s=None)
    assert ok.size == 2 * 2 * 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"profiles": ["no-such-profile"]}, ["no-such-profile", "irq-suspend"]),
        ({"profiles": ["busy-wait", "busy-wait"]}, ["busy-wait", "twice"]),
        ({"seeds": 0}, ["seeds"]),
        ({"seeds": 10_001}, ["seeds"]),
        ({"seeds": True}, ["seeds"]),
        ({"seed": -1}, ["seed"]),
        ({"seed": 2**63}, ["seed"]),
        ({"duration_s": 0}, ["duration_s"]),
        ({"duration_s": "1"}, ["duration_s"]),
        ({"overrides": ["load.nope=1"]}, ["load.nope"]),
        ({"plots": [PlotSpec(x="load.qps", y="latency_us.p99", hue="cpu.freq_ghz")]}, ["hue", "cpu.freq_ghz"]),
    ],
)
def test_bad_study_parts_are_refused_by_name(scenario: Scenario, change: dict, words: list[str]) -> None:
    message = refused(scenario, **change)
    for word in words:
        assert word in message, message


def test_default_profile_is_the_scenarios_own(scenario: Scenario) -> None:
    s = build_study(scenario, name="s", axes=[Axis("load.qps", (1000,))])
    own = scenario.resolved()["run"].get("profile")
    assert s.profiles == (own,)


def test_size_limit_constant_matches_the_issue() -> None:
    assert MAX_POINTS_WITHOUT_YES == 100_000


# -- study files -----------------------------------------------------------------------

STUDY_FILE = f"""
[study]
name = "figure"
description = "a figure"
scenario = "{SMALL}"
profiles = ["irq-suspend", "busy-wait"]
seeds = 2
seed = 3
duration_s = 0.01

[set]
"load.interarrival" = "exponential"
run.warmup_s = 0.001

[axes]
load.qps = [1000, 2000]
"cpu.app_cores" = "1:2:1"

[[plot]]
x = "load.qps"
y = "latency_us.p99"
col = "cpu.app_cores"
logy = true

[[plot]]
x = "load.qps"
y = "cpu_pct.busy"
hue = "cpu.app_cores"
title = "CPU"
"""


def write(tmp_path: Path, text: str, name: str = "study.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_study_file(tmp_path: Path) -> None:
    path = write(tmp_path, STUDY_FILE)
    assert is_study_file(path.read_text())
    assert not is_study_file(SMALL.read_text())
    spec = load_study_file(path)
    s = build_study(**spec)
    assert s.name == "figure" and s.description == "a figure"
    assert s.profiles == ("irq-suspend", "busy-wait")
    assert s.seeds == 2 and s.seed == 3 and s.duration_s == 0.01
    # `load.qps = [...]` unquoted is a nested table in TOML: still the field load.qps.
    assert [(a.field, a.values) for a in s.axes] == [("load.qps", (1000, 2000)), ("cpu.app_cores", (1, 2))]
    assert sorted(s.overrides) == ["load.interarrival=exponential", "run.warmup_s=0.001"]
    assert s.plots == (
        PlotSpec(x="load.qps", y="latency_us.p99", hue="profile", col="cpu.app_cores", logy=True),
        PlotSpec(x="load.qps", y="cpu_pct.busy", hue="cpu.app_cores", title="CPU"),
    )
    assert s.size == 2 * 2 * 2 * 2


def test_study_file_scenario_is_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "sc.toml").write_text(SMALL.read_text())
    path = write(tmp_path, STUDY_FILE.replace(f'scenario = "{SMALL}"', 'scenario = "sub/sc.toml"'))
    assert build_study(**load_study_file(path)).scenario_text == SMALL.read_text()


def test_study_file_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, f'[study]\nscenario = "{SMALL}"\n', name="mine.toml")
    s = build_study(**load_study_file(path))
    assert s.name == "mine" and s.seeds == 1 and s.seed == 1 and s.axes == () and s.size == 1


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (STUDY_FILE.replace('name = "figure"', 'name = "figure"\nrepeats = 3'), ["study.repeats"]),
        (STUDY_FILE + "\n[extra]\na = 1\n", ["'extra'"]),
        (STUDY_FILE.replace("[study]", "[studies]"), ["studies"]),
        ('[axes]\n"load.qps" = [1]\n', ["[study]"]),
        ("[study]\nname = 'x'\n", ["study.scenario"]),
        (STUDY_FILE.replace('profiles = ["irq-suspend", "busy-wait"]', 'profiles = "busy-wait"'), ["study.profiles"]),
        (STUDY_FILE.replace('name = "figure"', "name = 3"), ["study.name"]),
        (STUDY_FILE.replace("load.qps = [1000, 2000]", "load.qps = []"), ["load.qps", "empty"]),
        (STUDY_FILE.replace("load.qps = [1000, 2000]", 'load.qps = "1000"'), ["load.qps"]),
        (STUDY_FILE.replace('"cpu.app_cores" = "1:2:1"', '"cpu.app_cores" = "1:2:0"'), ["cpu.app_cores", "step"]),
        (STUDY_FILE.replace("run.warmup_s = 0.001", "run.warmupz = 0.001"), ["[set]", "warmupz"]),
        (STUDY_FILE.replace('x = "load.qps"\ny = "cpu_pct.busy"', 'x = "load.qps"\nz = 1'), ["plot.z"]),
        (STUDY_FILE.replace('x = "load.qps"\ny = "cpu_pct.busy"', 'y = "cpu_pct.busy"'), ["plot.x"]),
        ("[study\n", ["not valid TOML"]),
    ],
)
def test_bad_study_files_are_refused_by_name(tmp_path: Path, text: str, words: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(StudyError) as info:
        load_study_file(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    for word in words:
        assert word in message, message


def test_unknown_axis_in_study_file_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, STUDY_FILE.replace("load.qps = [1000, 2000]", "load.qpz = [1000, 2000]"))
    with pytest.raises(StudyError) as info:
        build_study(**load_study_file(path))
    assert "load.qpz" in str(info.value) and str(path) in str(info.value)


def test_reserved_axis_in_study_file(tmp_path: Path) -> None:
    path = write(tmp_path, STUDY_FILE.replace("load.qps = [1000, 2000]", "run.seed = [1, 2]"))
    with pytest.raises(StudyError, match="run.seed cannot be an axis"):
        build_study(**load_study_file(path))


def test_to_toml_round_trips(tmp_path: Path, scenario: Scenario) -> None:
    s = study(
        scenario,
        overrides=['load.interarrival="exponential"', "run.warmup_s = 1e-3", "app.service={dist='fixed', cycles=4000}"],
        plots=[PlotSpec(x="load.qps", y="latency_us.p99", logx=True)],
        description="d",
    )
    (tmp_path / "scenario.toml").write_text(s.scenario_text)
    again = build_study(**load_study_file(write(tmp_path, s.to_toml("scenario.toml"))))
    assert again.fingerprint() == s.fingerprint()
    assert [(p.key, p.seed) for p in again.points()] == [(p.key, p.seed) for p in s.points()]
    assert (again.name, again.description, again.plots) == (s.name, s.description, s.plots)


def test_study_toml_in_the_results_directory_resumes_with_nothing_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    flags = [
        "--profile", "irq-suspend,busy-wait",
        "--grid", "load.qps=1000:2000:1000",
        "--set", 'load.interarrival="exponential"',
        "--set", "run.warmup_s=1e-3",
        "--seeds", "2", "--seed", "9", "--duration", "0.005",
    ]  # fmt: skip
    assert main(["sweep", str(SMALL), *flags, "--out", str(out), "--quiet", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["ran"] == 8
    assert main(["sweep", str(out / STUDY), "--out", str(out), "--quiet", "--json"]) == 0
    captured = capsys.readouterr()
    again = json.loads(captured.out)
    assert (again["ran"], again["already_done"], again["points"]) == (0, 8, 8), captured.err
    # The study file alone (its own name, results/NAME) would be the same sweep too.
    spec = load_study_file(out / STUDY)
    assert spec["name"] == "small"


def test_flags_given_with_a_study_file_replace_its_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, STUDY_FILE)
    out = tmp_path / "r"
    status = main(
        [
            "sweep", str(path), "--grid", "load.qps=4000", "--grid", "load.depth=1,2", "--profile", "busy-wait",
            "--seeds", "1", "--duration", "0.004", "--name", "renamed", "--out", str(out), "--quiet", "--json",
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert status == 0, captured.err
    report = json.loads(captured.out)
    # load.qps replaced in place, load.depth added after the file's axes.
    assert report["name"] == "renamed" and report["points"] == 1 * 1 * 2 * 2 * 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["axes"] == ["load.qps", "cpu.app_cores", "load.depth"]
    again = build_study(**load_study_file(out / STUDY))
    assert again.profiles == ("busy-wait",) and again.seeds == 1 and again.duration_s == 0.004
    assert [a.values for a in again.axes] == [(4000,), (1, 2), (1, 2)]
    # A bad axis named by a flag is refused naming the flag and the file.
    status = main(["sweep", str(path), "--grid", "load.qpz=1", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert status == 2 and "load.qpz" in err and "--grid" in err and str(path) in err
    assert not (tmp_path / "x").exists()
