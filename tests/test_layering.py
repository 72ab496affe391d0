"""The package's layering: each module imports only modules of its own layer or of layers below,
and no two modules import each other, directly or through others (deferred imports count too: a
cycle broken by importing inside a function is still a cycle in the design).

The layers, from the bottom up, are listed in :data:`LAYERS`; ``sharpdp/__init__.py`` is the
public facade and may name anything (it loads the upper layers lazily). The product layers (data,
plots, CLI, service) are clients of the library and may use the facade (``import sharpdp as sdp``);
the library's own layers import the defining modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Module prefixes by layer, bottom first. A module belongs to the layer of its longest prefix.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("sharpdp.errors", "sharpdp._version", "sharpdp._format"),
    ("sharpdp._validate", "sharpdp._math"),
    ("sharpdp._divergences", "sharpdp._tails"),
    ("sharpdp.guarantees", "sharpdp._explain"),
    ("sharpdp.conversions",),
    ("sharpdp.mechanisms",),
    ("sharpdp.accounting",),
    ("sharpdp.audit", "sharpdp.local"),
    ("sharpdp.data",),
    ("sharpdp.plots",),
    ("sharpdp.cli", "sharpdp.service", "sharpdp.__main__"),
)
FACADE = "sharpdp"
#: The first layer allowed to import the facade.
CLIENTS = "sharpdp.data"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(SRC.joinpath("sharpdp").rglob("*.py"))}


def layer(module: str) -> int:
    best, index = -1, None
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), i
    if index is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return index


def resolve(module: str) -> str:
    """The sharpdp module an import names (a name imported from a package may be a submodule)."""
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def imports_of(module: str) -> set[str]:
    """Every sharpdp module ``module`` imports, at any depth of its code."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from package import name`: the submodule if `name` is one, else the package
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name == "sharpdp" or name.startswith("sharpdp."):
                target = resolve(name)
                if target != module:
                    found.add(target)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def _is_type_checking_only(module: str, target: str) -> bool:
    """Whether every import of ``target`` in ``module`` sits under ``if TYPE_CHECKING:``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}:
            for child in node.body:
                guarded.update(id(n) for n in ast.walk(child))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in guarded:
            text = ast.unparse(node)
            short = target.rsplit(".", 1)[-1]
            if target in text or (isinstance(node, ast.ImportFrom) and short in text):
                return False
    return True


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        if module != FACADE:
            layer(module)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != FACADE))
def test_no_upward_import(module: str) -> None:
    own = layer(module)
    upward = sorted(
        t for t in GRAPH[module] if t != FACADE and layer(t) > own
        and not _is_type_checking_only(module, t)
    )
    assert not upward, f"{module} (layer {own}) imports from higher layers: {upward}"
    if own >= layer(CLIENTS):
        return
    assert FACADE not in GRAPH[module] or _is_type_checking_only(module, FACADE), (
        f"{module} imports the facade `sharpdp` (import the defining module instead)"
    )


def test_no_import_cycle() -> None:
    # Tarjan's strongly connected components over the import graph (facade excluded); imports
    # made only for type annotations are not dependencies at run time, and are left out.
    edges = {
        m: sorted(t for t in GRAPH[m] if t != FACADE and not _is_type_checking_only(m, t))
        for m in MODULES
        if m != FACADE
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
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
                cycles.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_checker_sees_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    """The checks above can fail: a lower module importing an upper one is reported."""
    assert layer("sharpdp.guarantees") < layer("sharpdp.accounting.composition")
    assert layer("sharpdp.accounting.pld.discrete") == layer("sharpdp.accounting")
    assert "sharpdp.guarantees" in GRAPH["sharpdp.accounting.composition"]
