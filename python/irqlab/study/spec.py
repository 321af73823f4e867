"""A study: a scenario, fixed overrides, profiles, grid axes and seeds, and
the runs (points) they span.

A study comes from ``irqlab sweep`` flags or from a study file (TOML with a
``[study]`` table), so that a study is versioned like a scenario::

    [study]
    name = "figure-4-1"
    scenario = "bare-metal.toml"        # relative to this file
    profiles = ["no-coalescing", "irq-suspend"]
    seeds = 3                           # replicates per point
    seed = 1                            # base seed
    duration_s = 0.5

    [set]                               # overrides applied to every point
    "load.interarrival" = "exponential"

    [axes]                              # the grid, in this order
    "load.qps" = "100000:500000:50000"
    "cpu.app_cores" = [4, 8]
    # policy = ["my_policy.py:MyPolicy", "none"]   # paths relative to this file too

    [[plot]]                            # figures for plots and the report
    x = "load.qps"
    y = "latency_us.p99"
    hue = "profile"

Each point's seed is derived from the base seed and the point itself
(:func:`point_seed`), never from its position, so that a sweep's results do
not depend on order, parallelism or executor.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import tomli_w

from irqlab._core import ScenarioError
from irqlab.run import MAX_SEED, check_duration
from irqlab.scenario import Scenario, _toml_value, read_scenario_file
from irqlab.flags import override_key, overlaps
from irqlab.study.axis import POLICY_FIELD, Axis, AxisError, Value, from_toml

#: A grid larger than this needs ``--yes`` (``yes=True``): it is more often a
#: typo than a study, and it would run for days.
MAX_POINTS_WITHOUT_YES = 100_000

#: The axis of user policies (``irqlab.policy``): its values are
#: ``FILE.py:CLASS`` or ``none`` (the run without a policy), not a scenario
#: field's; each point runs with that policy.
POLICY_AXIS = POLICY_FIELD
#: A policy axis's value for the run without a policy.
NO_POLICY = "none"

#: Fields a grid may not vary, and why.
RESERVED_FIELDS = {
    "run.profile": "profiles are chosen with --profile (profiles = [...] in a study file)",
    "run.seed": "each point's seed is derived from --seed and the point; ask for replicates with --seeds",
    "profile": "profiles are chosen with --profile (profiles = [...] in a study file)",
}

_STUDY_KEYS = ("name", "description", "scenario", "profiles", "seeds", "seed", "duration_s")
_PLOT_KEYS = ("x", "y", "hue", "col", "logx", "logy", "title")


class StudyError(ValueError):
    """A bad study (flag or study-file field); the message is one sentence naming it."""


@dataclass(frozen=True)
class PlotSpec:
    """One figure: ``y`` over ``x``, a line per ``hue`` value, a panel per ``col`` value."""

    x: str
    y: str
    hue: Optional[str] = "profile"
    col: Optional[str] = None
    logx: bool = False
    logy: bool = False
    title: Optional[str] = None

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"x": self.x, "y": self.y}
        if self.hue is not None:
            out["hue"] = self.hue
        for key in ("col", "title"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("logx", "logy"):
            if getattr(self, key):
                out[key] = True
        return out


@dataclass(frozen=True)
class Point:
    """One run of a study."""

    #: Position in the grid (profiles outermost, then the axes in order);
    #: replicates of a point share it.
    index: int
    replicate: int
    profile: Optional[str]
    knobs: tuple[tuple[str, Value], ...]
    seed: int
    #: Canonical identity: what the results store keys completed runs by.
    key: str

    def describe(self) -> str:
        """``profile=busy-wait, load.qps=300000, seed #2`` for messages."""
        parts = [f"profile={self.profile}"] if self.profile is not None else []
        parts += [f"{f}={v}" for f, v in self.knobs]
        return ", ".join(parts) + (f", replicate {self.replicate}" if self.replicate else "")


@dataclass(frozen=True)
class Study:
    """Everything a sweep runs, validated."""

    name: str
    scenario_text: str
    #: The scenario file as given (for messages and the report), if any.
    scenario_source: Optional[str]
    #: Profiles swept; ``(None,)`` means the scenario's own ``run.profile``.
    profiles: tuple[Optional[str], ...]
    axes: tuple[Axis, ...]
    #: ``"key=value"`` overrides applied to every point before its knobs.
    overrides: tuple[str, ...] = ()
    seeds: int = 1
    seed: int = 1
    duration_s: Optional[float] = None
    description: str = ""
    plots: tuple[PlotSpec, ...] = ()
    #: The study file's text, if the study came from one.
    study_text: Optional[str] = field(default=None, compare=False)

    # -- the grid -------------------------------------------------------------

    @property
    def size(self) -> int:
        """Number of runs: profiles × axis values × seeds."""
        return len(self.profiles) * math.prod(len(a.values) for a in self.axes) * self.seeds

    def points(self) -> Iterator[Point]:
        """Every run, in grid order."""
        grids = [a.values for a in self.axes]
        fields = [a.field for a in self.axes]
        for index, combo in enumerate(itertools.product(self.profiles, *grids)):
            profile, values = combo[0], combo[1:]
            knobs = tuple(zip(fields, values))
            for replicate in range(self.seeds):
                key = point_key(profile, knobs, replicate)
                yield Point(index, replicate, profile, knobs, point_seed(self.seed, key), key)

    def fingerprint(self) -> str:
        """A digest of what determines the results (not name, description or plots):
        a results directory belongs to one fingerprint."""
        canon = {
            "scenario": self.scenario_text,
            "overrides": [_canonical_override(pair) for pair in self.overrides],
            "profiles": list(self.profiles),
            "axes": [[a.field, [_typed(v) for v in a.values]] for a in self.axes],
            "seeds": self.seeds,
            "seed": self.seed,
            "duration_s": self.duration_s,
        }
        policies = policy_digests(self.axes)
        if policies:
            canon["policies"] = policies
        return hashlib.sha256(json.dumps(canon, sort_keys=True, default=str).encode()).hexdigest()

    def task(self, point: Point) -> dict[str, Any]:
        """What a worker needs to run ``point`` (plain data: it travels to Dask workers)."""
        return {
            "key": point.key,
            "point": point.index,
            "replicate": point.replicate,
            "profile": point.profile,
            "knobs": [[f, v] for f, v in point.knobs],
            "seed": point.seed,
            "duration_s": self.duration_s,
            "scenario_text": self.scenario_text,
            "overrides": list(self.overrides),
        }

    # -- text -----------------------------------------------------------------

    def to_toml(self, scenario_path: str = "scenario.toml", directory: Optional[Path] = None) -> str:
        """The study as a study file whose scenario is ``scenario_path``
        (what a results directory keeps beside the data: ``irqlab sweep
        DIR/study.toml --out DIR`` re-runs it). With ``directory`` (where
        the file goes), policy paths are written relative to it, as a study
        file's are read."""
        doc: dict[str, Any] = {
            "study": {
                "name": self.name,
                **({"description": self.description} if self.description else {}),
                "scenario": scenario_path,
                **({"profiles": list(self.profiles)} if self.profiles != (None,) else {}),
                "seeds": self.seeds,
                "seed": self.seed,
                **({"duration_s": self.duration_s} if self.duration_s is not None else {}),
            }
        }
        if self.overrides:
            doc["set"] = {k: tomllib.loads(f"v = {v}")["v"] if _is_toml(v) else v for k, v in _split(self.overrides)}
        if self.axes:
            doc["axes"] = {a.field: a.to_toml() for a in self.axes}
            if directory is not None and POLICY_AXIS in doc["axes"]:
                doc["axes"][POLICY_AXIS] = [
                    _policy_path(v, lambda file: os.path.relpath(file, directory)) for v in doc["axes"][POLICY_AXIS]
                ]
        if self.plots:
            doc["plot"] = [p.to_toml() for p in self.plots]
        return tomli_w.dumps(doc)


def point_key(profile: Optional[str], knobs: Sequence[tuple[str, Value]], replicate: int) -> str:
    """The canonical identity of a run: profile, knob values (typed) and replicate."""
    return json.dumps({"profile": profile, "knobs": [[f, _typed(v)] for f, v in knobs], "replicate": replicate})


def point_seed(base_seed: int, key: str) -> int:
    """The seed of the run ``key`` in a study with base seed ``base_seed``: a
    64-bit BLAKE2b digest of both, cut to TOML's 63 bits."""
    digest = hashlib.blake2b(f"irqlab-point-seed-v1\0{base_seed}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & MAX_SEED


def _typed(v: Value) -> Any:
    # JSON would write 1 and 1.0 alike in some encoders and True as 1 in none;
    # keep the TOML type in the identity.
    return [type(v).__name__, v]


def _split(overrides: Sequence[str]) -> Iterator[tuple[str, str]]:
    for pair in overrides:
        k, _, v = pair.partition("=")
        yield k.strip(), v.strip()


def _canonical_override(pair: str) -> list[Any]:
    """An override as ``[key, typed value]``: the same setting written two
    ways (``--set k=exponential`` and the study file's ``k = "exponential"``,
    ``1e5`` and ``100000.0``, spaces around ``=``) is the same study."""
    key, _, value = pair.partition("=")
    value = value.strip()
    if _is_toml(value):
        parsed = tomllib.loads(f"v = {value}")["v"]
        return [key.strip(), type(parsed).__name__, parsed]
    return [key.strip(), "str", value]


def _is_toml(value: str) -> bool:
    try:
        tomllib.loads(f"v = {value}")
    except tomllib.TOMLDecodeError:
        return False
    return True


# -- building a study -----------------------------------------------------------


def build_study(
    scenario: Scenario,
    *,
    name: str,
    profiles: Sequence[Optional[str]] = (),
    axes: Sequence[Axis] = (),
    overrides: Sequence[str] = (),
    seeds: int = 1,
    seed: int = 1,
    duration_s: Optional[float] = None,
    description: str = "",
    plots: Sequence[PlotSpec] = (),
    study_text: Optional[str] = None,
    where: str = "--grid",
    check_values: bool = False,
) -> Study:
    """Validate the parts of a study against ``scenario`` and return it.

    Checked here, before anything runs: the profiles, every axis field exists
    in the scenario (a bad *value* of a good field is the point's own failure,
    recorded when it runs), no field is both an axis and fixed twice, seeds and
    the base seed, the duration. With ``check_values`` (``irqlab sweep``), an
    axis value that the scenario refuses on its own is refused too: only a
    value refused beside another axis's value is then a point's failure.
    ``where`` names the flag or study-file table of the axes in messages.
    """
    # A study file's values are named as its fields ("FILE: study.seeds");
    # `where` names the file ("FILE [axes]").
    source = where.split(" [axes]")[0] if " [axes]" in where else ""
    field = f"{source}: study." if source else ""
    if not isinstance(seeds, int) or isinstance(seeds, bool) or not 1 <= seeds <= 10_000:
        raise StudyError(f"{field}seeds must be a whole number from 1 to 10000 (got {seeds!r})")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise StudyError(f"{field}seed must be a whole number from 0 to {MAX_SEED} (got {seed!r})")
    try:
        check_duration(duration_s, "duration_s")
    except (ScenarioError, TypeError):
        raise StudyError(f"{field}duration_s must be a positive finite number of seconds (got {duration_s!r})") from None
    try:
        base = scenario.with_overrides(list(overrides))
    except ScenarioError as e:
        raise StudyError(str(e)) from None
    if duration_s is not None:
        # The core's bounds on run.duration_s, before every point fails on them.
        try:
            base.with_overrides([f"run.duration_s={float(duration_s)!r}"])
        except ScenarioError as e:
            raise StudyError(f"{field or 'the duration: '}{'duration_s: ' if field else ''}{e}") from None
    known = set(_core_profiles())
    checked: list[Optional[str]] = []
    for p in profiles or (None,):
        if p is not None and p not in known:
            raise StudyError(f"profile {p!r} is not one of {', '.join(sorted(known))}")
        if p in checked:
            raise StudyError(f"profile {p!r} is listed twice")
        checked.append(p)
    if checked == [None]:
        own = base.resolved().get("run", {}).get("profile")
        checked = [own] if own is not None else [None]
    resolved = base.resolved()
    seen: set[str] = set()
    for axis in axes:
        if axis.field in seen:
            raise StudyError(f"{where}: field {axis.field} is given twice; give all its values in one axis")
        seen.add(axis.field)
        if axis.field in RESERVED_FIELDS:
            raise StudyError(f"{where}: {axis.field} cannot be an axis: {RESERVED_FIELDS[axis.field]}")
        if axis.field == POLICY_AXIS:
            _check_policy_axis(axis, where)
            continue
        if axis.field == "run.duration_s" and duration_s is not None:
            raise StudyError(f"{where}: run.duration_s is an axis, so --duration (duration_s) cannot also be given")
        if not _has_field(resolved, axis.field):
            raise StudyError(
                f"{where}: {axis.field} is not a field of scenario {scenario.name or scenario.source or '(text)'}; "
                f"fields are section.name as in the scenario file (e.g. load.qps, cpu.app_cores)"
            )
    # A field both fixed and varied (or fixed where the sweep sets it) would
    # silently take one of the two values: refused, naming both.
    fixed = [override_key(pair) for pair in (*scenario.overrides, *overrides)]
    for key in fixed:
        for axis in axes:
            if overlaps(key, axis.field):
                raise StudyError(f"{where}: {axis.field} is an axis and is also fixed by an override ({key}, "
                                 "--set or [set]); give it in one place")
        if overlaps(key, "run.seed"):
            raise StudyError(f"the override {key} cannot be used in a sweep: {RESERVED_FIELDS['run.seed']}")
        if overlaps(key, "run.duration_s") and duration_s is not None:
            raise StudyError(f"the override {key} and the duration ({duration_s:g} s: --duration or duration_s) "
                             "both set run.duration_s; give one")
    if check_values:
        _check_axis_values(base, checked, axes, where)
    columns = {"profile", *seen}
    for plot in plots:
        # A title matplotlib cannot draw, refused before the sweep rather than by its report.
        from irqlab.plottext import title_problem

        if (problem := title_problem(plot.title)) is not None:
            raise StudyError(f"plot title {problem}")
        for key in ("x", "hue", "col"):
            value = getattr(plot, key)
            if value is not None and key != "x" and value not in columns:
                raise StudyError(f"plot {key} {value!r} must be profile or one of the axes ({', '.join(sorted(seen)) or 'none'})")
    if plots:
        _check_plot_columns(base, checked, axes, plots, source)
    return Study(
        name=name,
        scenario_text=scenario.text,
        scenario_source=scenario.source,
        profiles=tuple(checked),
        axes=tuple(axes),
        overrides=tuple(scenario.overrides) + tuple(overrides),
        seeds=seeds,
        seed=seed,
        duration_s=None if duration_s is None else float(duration_s),
        description=description,
        plots=tuple(plots),
        study_text=study_text,
    )


def _check_axis_values(base: Scenario, profiles: Sequence[Optional[str]], axes: Sequence[Axis], where: str) -> None:
    """Refuse an axis value that ``base`` refuses on its own under every one
    of the study's ``profiles``: every point with it would fail (issue 62,
    item 12: ``--grid load.qps=a,b`` ran and failed point by point where
    ``nan`` was refused up front). A value refused only beside another
    axis's value stays that point's failure. One resolve per value when it
    is fine (about 0.1 ms each)."""
    under: list[Scenario] = []
    for profile in profiles:
        try:
            under.append(base.with_profile(profile))
        except ScenarioError:
            continue  # each point of that profile fails, and says why
    for axis in axes:
        if axis.field == POLICY_AXIS or not under:
            continue
        for value in axis.values:
            pair = knob_pairs([(axis.field, value)])
            refusal: Optional[ScenarioError] = None
            for scenario in under:
                try:
                    scenario.with_overrides(pair)
                    break
                except ScenarioError as e:
                    refusal = refusal or e
            else:
                raise StudyError(
                    f"{where}: axis {axis.field} value {value!r} is refused on its own ({refusal}); "
                    "every point with it would fail, so give values the field takes"
                )


#: Columns every results table has besides the summary's (``irqlab.results``).
_FRAME_COLUMNS = ("point", "replicate", "profile", "seed", "duration_s", "error", "cpu_pct.busy",
                  "wall_s", "wall_time_s", "irqlab_version", "git_commit")
_TEXT_COLUMNS = ("profile", "error", "irqlab_version", "git_commit")


def _check_plot_columns(base: Scenario, profiles: Sequence[Optional[str]], axes: Sequence[Axis],
                        plots: Sequence[PlotSpec], source: str) -> None:
    """Refuse a ``[[plot]]`` whose ``x`` or ``y`` the results will not have,
    or whose ``y`` is not a number, before any point runs (``irqlab report``
    would find out only after the whole sweep).

    The summary's fields are learnt from probe runs of a millisecond
    (:func:`irqlab.run.probe_fields`): the scenario under each profile and
    at each axis's first and last value (a kind or a count of VMs changes
    the fields). Nothing is refused when no probe runs (a bad value is then
    each point's own failure)."""
    from irqlab.run import field_problem, numeric_fields

    variants: list[tuple[Optional[str], tuple[str, ...]]] = [(p, ()) for p in profiles]
    for axis in axes:
        if axis.field == POLICY_AXIS:
            continue  # a policy adds `policy` to the summary, nothing else
        for value in dict.fromkeys((axis.values[0], axis.values[-1])):
            variants.append((profiles[0], tuple(knob_pairs([(axis.field, value)]))))
    probes = [p for p in (_probe(base, profile, knobs) for profile, knobs in variants) if p is not None]
    if not probes:
        return
    columns = {*_FRAME_COLUMNS, *(a.field for a in axes)}
    for i, plot in enumerate(plots, start=1):
        for key in ("x", "y"):
            name = getattr(plot, key)
            if name in columns and not (key == "y" and name in _TEXT_COLUMNS):
                continue
            problem = "is not a number (it is text)" if name in columns else field_problem(probes, name, null_ok=True)
            if key == "x" and problem is not None and not problem.startswith("is not a field"):
                continue  # x may be text (bars) or null in some runs
            if problem is not None:
                known = sorted({*columns, *(k for p in probes for k in p)})
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]}? " if close and close[0] != name else ""
                raise StudyError(f"{source} [[plot]] {i}: plot.{key} {name!r} {problem}; {hint}numeric columns "
                                 f"include {', '.join(numeric_fields(probes)[:8])}".lstrip())


def _probe(base: Scenario, profile: Optional[str], knobs: tuple[str, ...]) -> Optional[dict[str, Any]]:
    """:func:`irqlab.run.probe_fields`, once per scenario, profile and knobs
    (a reproduction builds the same studies several times)."""
    from irqlab.run import probe_fields

    key = (base.text, base.profile, tuple(base.overrides), profile, knobs)
    if key not in _PROBES:
        _PROBES[key] = probe_fields(base, profile, knobs)
    return _PROBES[key]


_PROBES: dict[tuple[Any, ...], Optional[dict[str, Any]]] = {}


def _core_profiles() -> list[str]:
    from irqlab import _core

    return list(_core.profiles())


def _has_field(resolved: dict[str, Any], dotted: str) -> bool:
    node: Any = resolved
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def knob_pairs(knobs: Sequence[Sequence[Any]]) -> list[str]:
    """A point's knobs as ``"key=value"`` overrides (strings quoted: exact
    TOML types), without its policy (:func:`point_policy`)."""
    return [f"{f}={_toml_value(v, key=f, top=False)}" for f, v in knobs if f != POLICY_AXIS]


def point_policy(knobs: Sequence[Sequence[Any]]) -> Optional[str]:
    """A point's policy, ``FILE.py:CLASS``, if it has one."""
    for f, v in knobs:
        if f == POLICY_AXIS and v != NO_POLICY:
            return str(v)
    return None


def _check_policy_axis(axis: Axis, where: str) -> None:
    """Every value of a policy axis names a policy that loads (or is
    ``none``), before anything runs."""
    from irqlab.policy import PolicyLoadError, load_policy

    for v in axis.values:
        if not isinstance(v, str):
            raise StudyError(f"{where}: policy {v!r} must be FILE.py:CLASS or {NO_POLICY!r}")
        if v == NO_POLICY:
            continue
        try:
            load_policy(v)
        except PolicyLoadError as e:
            raise StudyError(f"{where}: policy {v!r}: {str(e).replace('--policy', 'the policy')}") from None


def policy_digests(axes: Sequence[Axis]) -> dict[str, str]:
    """Each policy file's SHA-256, by axis value: a study whose policy
    changed is another study (its fingerprint), not one to resume."""
    out: dict[str, str] = {}
    for axis in axes:
        if axis.field != POLICY_AXIS:
            continue
        for v in axis.values:
            if isinstance(v, str) and v != NO_POLICY:
                path = Path(v.rpartition(":")[0])
                try:
                    out[v] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    out[v] = "unreadable"
    return out


def is_study_file(text: str) -> bool:
    """Whether TOML ``text`` is a study file (it has a ``[study]`` table)."""
    try:
        return isinstance(tomllib.loads(text).get("study"), dict)
    except tomllib.TOMLDecodeError:
        return False


def load_study_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a study file into the keyword arguments of :func:`build_study`
    (with ``scenario`` as a loaded :class:`Scenario`). Unknown keys are errors."""
    path = Path(path)
    text = read_scenario_file(str(path))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{path}: not valid TOML: {e}") from None
    unknown = set(doc) - {"study", "set", "axes", "plot"}
    if unknown:
        raise StudyError(f"{path}: unknown table {sorted(unknown)[0]!r}; a study file has [study], [set], [axes] and [[plot]]")
    head = doc.get("study")
    if not isinstance(head, dict):
        raise StudyError(f"{path}: a study file needs a [study] table")
    for key in head:
        if key not in _STUDY_KEYS:
            raise StudyError(f"{path}: unknown key study.{key}; accepted: {', '.join(_STUDY_KEYS)}")
    scenario_ref = head.get("scenario")
    if not isinstance(scenario_ref, str) or not scenario_ref:
        raise StudyError(f"{path}: study.scenario must name the scenario file (relative to the study file)")
    scenario_path = (path.parent / scenario_ref) if not os.path.isabs(scenario_ref) else Path(scenario_ref)
    scenario = Scenario.load(scenario_path)
    profiles = head.get("profiles", [])
    if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
        raise StudyError(f"{path}: study.profiles must be a list of profile names")
    out: dict[str, Any] = {
        "scenario": scenario,
        "name": _str(head, "name", path) or path.stem,
        "description": _str(head, "description", path),
        "profiles": profiles,
        "seeds": head.get("seeds", 1),
        "seed": head.get("seed", 1),
        "duration_s": head.get("duration_s"),
        "study_text": text,
        "where": f"{path} [axes]",
    }
    fixed = doc.get("set", {})
    if not isinstance(fixed, dict):
        raise StudyError(f"{path}: [set] must be a table of field = value")
    try:
        out["overrides"] = Scenario.from_str(scenario.text).with_overrides(fixed).overrides
    except (TypeError, ScenarioError) as e:
        raise StudyError(f"{path} [set]: {e}") from None
    axes_table = doc.get("axes", {})
    if not isinstance(axes_table, dict):
        raise StudyError(f"{path}: [axes] must be a table of field = values")
    try:
        out["axes"] = [_from_file(from_toml(f, v), path.parent) for f, v in _flat_axes(axes_table)]
    except AxisError as e:
        raise StudyError(f"{path}: {e}") from None
    plots = doc.get("plot", [])
    if not isinstance(plots, list):
        raise StudyError(f"{path}: plots are [[plot]] tables")
    out["plots"] = [_plot(p, path) for p in plots]
    return out


def _from_file(axis: Axis, directory: Path) -> Axis:
    """A study file's axis with its policy files' paths made relative to the
    study file (``directory``), like its ``scenario``, whatever the current
    directory (issue 62, item 16: they were relative to the current
    directory). Each becomes the path from the current directory, so that a
    study run from where its file's paths used to resolve keeps its keys."""
    if axis.field != POLICY_AXIS:
        return axis
    return Axis(axis.field, tuple(_policy_path(v, lambda file: os.path.relpath(directory / file)) for v in axis.values))


def _policy_path(value: Value, place: Callable[[str], str]) -> Value:
    """``FILE.py:CLASS`` with a relative FILE replaced by ``place(FILE)``,
    normalised; ``none`` and absolute paths as they are."""
    if not isinstance(value, str) or value == NO_POLICY:
        return value
    file, sep, cls = value.rpartition(":")
    if not sep or not file or os.path.isabs(file):
        return value
    return f"{os.path.normpath(place(file))}:{cls}"


def _flat_axes(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    # `load.qps = ...` unquoted makes a nested table; an axis is never a table.
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _flat_axes(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _str(table: dict[str, Any], key: str, path: Path) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise StudyError(f"{path}: study.{key} must be a string")
    return value


def _plot(table: Any, path: Path) -> PlotSpec:
    if not isinstance(table, dict):
        raise StudyError(f"{path}: each [[plot]] must be a table")
    for key in table:
        if key not in _PLOT_KEYS:
            raise StudyError(f"{path}: unknown key plot.{key}; accepted: {', '.join(_PLOT_KEYS)}")
    for key in ("x", "y"):
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise StudyError(f"{path}: plot.{key} must be a column name (e.g. load.qps, latency_us.p99)")
    for key in ("hue", "col", "title"):
        if key in table and not isinstance(table[key], str):
            raise StudyError(f"{path}: plot.{key} must be a string (got {table[key]!r})")
    for key in ("logx", "logy"):
        # bool("no") is True: only TOML's true and false say what is meant.
        if key in table and not isinstance(table[key], bool):
            raise StudyError(f"{path}: plot.{key} must be true or false (got {table[key]!r})")
    # Here, not in irqlab report after the whole sweep (issue 62, item 11).
    from irqlab.plottext import title_problem

    problem = title_problem(table.get("title"))
    if problem is not None:
        raise StudyError(f"{path}: plot.title {problem}")
    return PlotSpec(
        x=table["x"],
        y=table["y"],
        hue=table.get("hue", "profile"),
        col=table.get("col"),
        logx=bool(table.get("logx", False)),
        logy=bool(table.get("logy", False)),
        title=table.get("title"),
    )
