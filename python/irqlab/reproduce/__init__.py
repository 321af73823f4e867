"""Reproductions of the papers' experiments from the simulator (``irqlab reproduce``)."""

from pathlib import Path


def scenario_dir(paper: str, marker: str) -> Path:
    """``scenarios/<paper>`` of the working directory if it holds ``marker``,
    else the repository's."""
    here = Path("scenarios") / paper
    if (here / marker).is_file():
        return here
    return Path(__file__).resolve().parents[3] / "scenarios" / paper
