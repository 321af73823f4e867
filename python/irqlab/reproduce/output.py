"""The output directory of ``irqlab reproduce``: which reproduction it
holds (its marker), and the check made before any run."""

from pathlib import Path


#: The papers ``irqlab reproduce`` reproduces, in its order.
KINDS = ("thesis", "cover-letter", "itr", "iaps", "vic", "sriov")
#: Each reproduction's default ``--out``: the thesis's holds the others'.
DEFAULT_OUT = {"thesis": "irqlab-out", **{k: f"irqlab-out/{k}" for k in KINDS[1:]}}
#: The file that says which reproduction a directory holds, written into
#: ``--out`` before anything else (``irqlab.files.REPRODUCTION_MARKER``).
MARKER = "reproduction.json"
#: Files every reproduction writes at the top of ``--out``.
TOP_FILES = ("report.html", "report.md", "summaries.json")


def _study_dirs(kind: str) -> set[str]:
    """The results directories reproduction ``kind`` writes into ``--out``
    (how an output written before the marker existed is recognised)."""
    if kind == "thesis":
        from irqlab.reproduce import holdout
        from irqlab.reproduce.thesis import CAI_KARSTEN_STUDY, FIGURE_STUDY, TABLE_STUDY, VM_SETUPS

        return {TABLE_STUDY, FIGURE_STUDY, CAI_KARSTEN_STUDY, holdout.LOO_DIR, "sensitivity",
                *(s.table_study for s in VM_SETUPS), *(s.figure_study for s in VM_SETUPS)}
    import importlib

    paper = importlib.import_module(f"irqlab.reproduce.{kind.replace('-', '_')}").PAPER
    return set(paper.studies) | ({"sensitivity"} if kind == "cover-letter" else set())


def output_kind(out: Path) -> tuple[str, str]:
    """What directory ``out`` holds, as (kind, words): ``("", "")`` for
    nothing (missing or empty), ``("itr", ...)`` for a reproduction (its
    marker, or for an older output without one its results directories:
    a kind whose studies cover them; several kinds when that is ambiguous,
    separated by ``|``), ``("sweep", ...)``, ``("other", ...)``."""
    import json

    from irqlab import files

    kind = files.output_kind(out)
    if kind is None:
        return "", ""
    if kind == "reproduce":
        try:
            theirs = json.loads((out / MARKER).read_text(encoding="utf-8"))["kind"]
        except (OSError, ValueError, KeyError, TypeError):
            return "other", f"an unreadable {MARKER}"
        return str(theirs), f"the output of irqlab reproduce {theirs}"
    if kind != "other":
        return kind, files.describe_kind(kind)
    entries = [e for e in out.iterdir() if not e.name.startswith(".")]
    studies = {e.name for e in entries if (e / "manifest.json").is_file()}
    if studies:
        candidates = [k for k in KINDS if studies <= _study_dirs(k)]
        if candidates:
            return "|".join(candidates), f"the output of irqlab reproduce {' or '.join(candidates)}"
        return "other", "results directories of other studies"
    # Another reproduction's directory inside (the thesis's default holds
    # the others' defaults) is no reason to refuse; anything else is.
    if all(e.is_dir() and (e / MARKER).is_file() for e in entries):
        return "", ""
    return "other", "files that no reproduction wrote"


def prepare_out(text: str, kind: str, *, force: bool, error: type[Exception]) -> Path:
    """The ``--out`` directory of reproduction ``kind``, checked before any
    run and created (only its default may create parents): a bad ``--out``
    must not be found out after an hour of simulation, and a directory that
    holds another kind of output is refused unless ``force``. Then the
    marker is written, so that even an interrupted reproduction is
    recognised by ``--resume`` and by the other reproductions."""
    import json
    import time

    from irqlab._core import __version__
    from irqlab.files import check_output_dir, check_output_file, make_output_dir, write_text_whole

    default = text == DEFAULT_OUT[kind]
    out = check_output_dir(text, "--out", error, parents=default)
    theirs, words = output_kind(out)
    if theirs and kind not in theirs.split("|") and not force:
        raise error(
            f"--out {text} holds {words}; give a new or empty directory, or add --force to write into it anyway"
        )
    if theirs or out.is_dir():  # a new directory holds nothing in the way
        for name in (*TOP_FILES, MARKER):
            check_output_file(out / name, "", error)
    make_output_dir(text, "--out", error, parents=default)
    write_text_whole(
        out / MARKER,
        json.dumps({"kind": kind, "irqlab_version": __version__, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        + "\n",
    )
    return out
