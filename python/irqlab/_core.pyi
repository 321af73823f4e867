"""Type stubs of the native module ``irqlab._core`` (crates/irqlab-py).

The module only converts: scenario text, profile and ``key=value`` overrides
in; JSON text out; core errors as :class:`ScenarioError`. A panic inside the
core surfaces as :class:`RuntimeError`.
"""

from typing import Optional, Sequence

__version__: str

class ScenarioError(ValueError):
    """A scenario, profile or override was rejected (one sentence naming the field)."""

def run(
    toml_text: str,
    profile: Optional[str] = None,
    overrides: Sequence[str] = ...,
    seed: Optional[int] = None,
    duration_s: Optional[float] = None,
) -> str:
    """Run the scenario; return the summary as JSON text. Releases the GIL.

    ``seed`` and ``duration_s`` are applied as the overrides ``run.seed`` and
    ``run.duration_s`` after ``overrides``.
    """

def resolve(
    toml_text: str,
    profile: Optional[str] = None,
    overrides: Sequence[str] = ...,
) -> str:
    """Validate the scenario; return the resolved configuration as JSON text."""

def profiles() -> list[str]:
    """The profile names, in the core's order."""

def _selftest_panic(message: str) -> None:
    """Panic inside the binding's guard (tests only): raises RuntimeError."""
