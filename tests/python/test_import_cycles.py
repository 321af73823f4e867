"""No import circle among irqlab's modules: a module that imports its
caller back (even inside a function) ties the two into one piece that
cannot be read, tested or moved alone. The graph is read with ``ast`` from
the sources, every ``import`` counted but those under ``if TYPE_CHECKING``
(they never run).

The simulator's model (``crates/irqlab-core/src/model/``) is held to the
same rule between its components as it is taken apart (issue 33): its
graph is read from the ``crate::model::...`` paths its files name each
other by, plus an edge from ``server.rs`` to every file that holds
methods of its ``Machine`` (``impl Machine``: the machine's code lives
there, though no path says so). The files of one component folder may
name each other (the kernel's ``mod.rs`` names its threads, their code
names the kernel), as Rust's modules do; a circle through two components
may not; and no component but the dispatcher and the builder is written
as ``impl Machine`` or names ``server.rs``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "irqlab"
RUST_SRC = Path(__file__).resolve().parents[2] / "crates" / "irqlab-core" / "src"
#: The component folders whose files may name each other.
MODEL_COMPONENTS = ("model::kernel",)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    # The native module has no Python source: a leaf.
    for path in PACKAGE.glob("_core*.so"):
        found["irqlab._core"] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, modules: set[str]):
    """The irqlab modules ``tree`` imports: ``from a.b import c`` names the
    module ``a.b.c`` when there is one, else ``a.b``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    yield f"{target}.{alias.name}"
                elif target in modules:
                    yield target
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    names = set(modules)
    return {
        m: set(_imports(ast.parse(p.read_text(encoding="utf-8")), m, p.name == "__init__.py", names)) - {m}
        if p.suffix == ".py" else set()
        for m, p in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module
    (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_and_relative_imports():
    tree = ast.parse("def f():\n    from irqlab.cli_common import write_stdout\nfrom . import summary\n")
    names = {"irqlab.cli_common", "irqlab.summary"}
    assert set(_imports(tree, "irqlab.run", False, names)) == names


def test_no_import_circle_among_irqlab_modules():
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def rust_model_graph() -> dict[str, set[str]]:
    """The model's modules and, for each, the model modules it names (the
    longest module prefix of each ``crate::model::...`` path)."""
    files = {}
    for path in sorted((RUST_SRC / "model").rglob("*.rs")):
        rel = path.relative_to(RUST_SRC).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "mod" else rel.parts
        files["::".join(parts)] = path.read_text()
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, text in files.items():
        for named in re.findall(r"crate::(model(?:::[a-z_]+)+)", text):
            parts = named.split("::")
            for n in range(len(parts), 1, -1):
                prefix = "::".join(parts[:n])
                if prefix in files:
                    if prefix != module:
                        graph[module].add(prefix)
                    break
        if module != "model::server" and re.search(r"^impl (crate::model::server::)?Machine\b", text, re.M):
            graph["model::server"].add(module)
    return graph


def _within_one_component(circle: list[str]) -> bool:
    return any(all(m == c or m.startswith(c + "::") for m in circle) for c in MODEL_COMPONENTS)


def test_no_import_circle_between_the_models_components():
    graph = rust_model_graph()
    assert "model::build" in graph["model::server"], "the graph reads the model's crate::model paths"
    assert any(_within_one_component(c) for c in cycles(graph)), "the kernel's files name each other"
    found = [c for c in cycles(graph) if not _within_one_component(c)]
    assert not found, "import circles between components: " + "; ".join(" <-> ".join(c) for c in found)


def test_only_the_dispatcher_and_the_builder_are_the_machine():
    """The machine's code is the dispatcher's (server.rs, with the machine's
    registrations in machine.rs, its summary in report.rs and what it shows
    and lets set to a user's policy in policy.rs) and the builder's
    (build.rs); every component's is its own, reaching the machine through
    the traits it declares."""
    for path in sorted((RUST_SRC / "model").rglob("*.rs")):
        if path.parent.name == "model" and path.name in ("server.rs", "machine.rs", "report.rs", "policy.rs", "build.rs"):
            continue
        # A component's own tests may build a server to run it in.
        text = path.read_text().split("#[cfg(test)]")[0]
        assert not re.search(r"^impl (crate::model::server::)?(Machine|Server)\b", text, re.M), path
        assert "crate::model::server" not in text, f"{path} names the dispatcher"


def test_the_kernel_names_no_other_component():
    """The kernel's code reaches the machine through `kernel/host.rs` only."""
    graph = rust_model_graph()
    for module, named in graph.items():
        if module == "model::kernel" or module.startswith("model::kernel::"):
            outside = {n for n in named if not n.startswith("model::kernel") and n not in KERNEL_MAY_NAME}
            assert not outside, f"{module} names {sorted(outside)}"


#: What the kernel's files may name outside their folder: leaves of shared
#: vocabulary (ids, trace, run statistics), the NIC's queue pairs its
#: drivers poll, and the state of the host threads that run VMs.
KERNEL_MAY_NAME = {
    "model::ids",
    "model::trace",
    "model::run",
    "model::devices::nic",
    "model::devices::nic::eitr",
    "model::vm::vcpu_thread",
    "model::vm::vhost_worker",
}
