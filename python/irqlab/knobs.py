"""The interrupt-handling knobs, as the core declares them once
(``crates/irqlab-knobs`` through ``irqlab._core.knobs()``).

Each knob is a dict: ``path`` (the scenario field, ``napi.irq_suspend_timeout``),
``kernel_name`` (``irq-suspend-timeout``, ``rx-usecs``), ``linux_name`` (what
``irqlab linux`` plans, reports and tunes it by; ``None`` when ``irqlab linux
apply`` does not set it), ``part`` (``napi``, ``coalesce``, ``epoll``,
``itr``), ``unit``, ``kernel_range`` and ``sim_range`` (inclusive ``(min,
max)``; ``sim_why`` says why the simulator takes less, when it does),
``default``, ``doc``, ``source`` (the kernel file the range comes from) and
``profiles`` (each profile's value, for the knobs profiles set).

``irqlab knobs`` (or ``python -m irqlab.knobs --markdown``) prints the README's knob tables:
as Markdown when its output goes to a file or a pipe (or with ``--markdown``),
rendered for the terminal otherwise (:func:`for_terminal`).
"""

from __future__ import annotations

import re
import sys
from typing import Any, Optional

from irqlab import _core

__all__ = ["knobs", "by_path", "by_linux_name", "markdown", "readme_tables", "for_terminal", "ascii_text", "main"]


def knobs() -> list[dict[str, Any]]:
    """Every knob of the table, in its order (the profiles' knobs first)."""
    return _core.knobs()


def by_path(path: str) -> Optional[dict[str, Any]]:
    """The knob of scenario field ``path``, or ``None``."""
    return next((k for k in knobs() if k["path"] == path), None)


def by_linux_name(name: str) -> Optional[dict[str, Any]]:
    """The knob ``irqlab linux`` calls ``name`` (``defer_hard_irqs``, ``rx-usecs``), or ``None``."""
    return next((k for k in knobs() if k["linux_name"] == name), None)


def markdown() -> str:
    """The README's knob tables with the lines that begin and end them."""
    return _core.knobs_markdown()


def readme_tables(readme: str) -> Optional[str]:
    """The generated block of ``readme`` (from its first line to its last,
    as :func:`markdown` gives it), or ``None`` if it has none."""
    begin, end = markdown().splitlines()[0], markdown().splitlines()[-1]
    start = readme.find(begin)
    stop = readme.find(end, start)
    if start < 0 or stop < 0:
        return None
    return readme[start:stop + len(end)] + "\n"


#: An HTML comment on lines of its own: the README block's begin and end
#: markers, which mean nothing to a reader at a terminal.
_HTML_COMMENT = re.compile(r"^[ \t]*<!--.*?-->[ \t]*\n?", re.MULTILINE | re.DOTALL)


def without_html_comments(text: str) -> str:
    """``text`` without its lines that are HTML comments."""
    return _HTML_COMMENT.sub("", text).strip("\n") + "\n"


def for_terminal(width: Optional[int] = None, color: bool = True) -> str:
    """The knob tables rendered for a terminal ``width`` columns wide (by
    rich, pinned in requirements-dev.txt), without the HTML comments that
    mark the README's block (issue 62, item 17): each Markdown table as a
    table whose scenario field is never cut (rich's own Markdown tables cut
    cells with an ellipsis when eight columns do not fit), the text between
    them as rich renders Markdown."""
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=color, color_system="standard" if color else None,
                      no_color=not color, highlight=False)
    for renderable in _blocks(without_html_comments(markdown()), console.width):
        console.print(renderable)
    # rich pads every line to the width; a terminal needs none of it.
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _blocks(text: str, width: Optional[int]) -> list[Any]:
    """``text``'s Markdown as rich renderables: a table per run of lines
    that begin with ``|``, rich's Markdown for the rest."""
    from rich.markdown import Markdown

    blocks: list[Any] = []
    lines: list[str] = []
    table = False
    for line in [*text.splitlines(), ""]:
        is_row = line.startswith("|")
        if lines and (is_row != table or line == ""):
            blocks.append(_table(lines, width) if table else Markdown("\n".join(lines)))
            lines = []
        if line or (lines and not table):
            lines.append(line)
        table = is_row
    return [b for b in blocks if not isinstance(b, Markdown) or b.markup.strip()]


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells, ``\\|`` and ``\\*`` unescaped."""
    cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [c.strip().replace("\\|", "|").replace("\\*", "*") for c in cells]


def _text(cell: str) -> Any:
    """A cell's text; its `code` spans (names: fields, profiles) set apart
    in colour, as a terminal has no code font."""
    from rich.text import Text

    t = Text()
    for i, part in enumerate(cell.split("`")):
        t.append(part, style="cyan" if i % 2 else "")
    return t


def _table(rows: list[str], width: Optional[int]) -> Any:
    """A Markdown table as a table when it fits ``width`` without folding a
    word (rich would otherwise drop whole columns off the right, or cut names
    with an ellipsis), else as one record per row: its first cell as a
    heading and every other column as a line ``name  value``."""
    from rich import box
    from rich.console import Group
    from rich.table import Table

    head, *body = [_cells(r) for r in rows if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", r.strip())]
    body = [r + [""] * (len(head) - len(r)) for r in body]

    def plain(cell: str) -> str:
        return cell.replace("`", "")

    # The narrowest each column can be without folding a word: the first
    # (the field) whole, the others their longest word, at most 20 wide.
    need = [max(len(plain(r[0])) for r in [head, *body])] + [
        min(20, max(len(w) for c in [head[i], *(r[i] for r in body)] for w in plain(c).split() or [""]))
        for i in range(1, len(head))]
    if width is None or sum(need) + 3 * len(head) <= width:
        long_cells = any(len(c) > 30 for r in body for c in r)
        table = Table(box=box.SIMPLE_HEAD, show_lines=long_cells, header_style="bold", pad_edge=False)
        for i, name in enumerate(head):
            table.add_column(_text(name), no_wrap=i == 0, min_width=need[i], overflow="fold")
        for r in body:
            table.add_row(*(_text(c) for c in r))
        return table
    records: list[Any] = []
    label = max(len(plain(h)) for h in head[1:])
    for r in body:
        grid = Table.grid(padding=(0, 2), pad_edge=False)
        grid.add_column(no_wrap=True, min_width=label, style="dim")
        grid.add_column(overflow="fold")
        for name, cell in zip(head[1:], r[1:]):
            grid.add_row(plain(name), _text(cell))
        heading = _text(r[0])
        heading.stylize("bold")
        records += [heading, grid, ""]
    return Group(*records)


#: ASCII for the characters the tables and their rendering use.
_ASCII = str.maketrans({"\u00b5": "u", "\u2500": "-", "\u2501": "=", "\u2022": "*", "\u2026": "...",
                        "\u2014": "-"})


def ascii_text(text: str) -> str:
    """``text`` for a stream that takes ASCII only: ``us`` for ``µs`` (as
    irqlab.text writes it), ``-`` for a rule, ``?`` for anything else."""
    return text.translate(_ASCII).encode("ascii", "replace").decode("ascii")


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        sys.stderr.write("usage: python -m irqlab.knobs --markdown\n")
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
