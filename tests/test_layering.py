"""Layering: each layer imports only the model and the layers below it.

Read from the source with `ast`, so an import inside a function (the lazy imports the runtime
and the mutations use) counts as much as one at the top of a file.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vkverify"
CORPUS_01 = Path(__file__).resolve().parent / "corpus" / "01-copy-then-dispatch-no-barrier.json"

# The vkverify packages each layer may import, besides itself: the layers below it.
# shaders is a leaf library (GLSL, SPIR-V, reflection, numpy semantics) the model reads.
# cli, report and pytest_plugin sit above every layer and are not listed: nothing here may import them.
ALLOWED = {
    "shaders": set(),
    "model": {"shaders"},
    "check": {"model", "shaders"},
    "importer": {"model", "shaders"},
    "sim": {"check", "model", "shaders"},
    "runtime": {"sim", "check", "model", "shaders"},
    "mutations": {"runtime", "sim", "check", "model", "shaders"},
}
# The root package holds only __version__, and vkverify/errors.py the one error base: anyone may read them.
ROOT = "vkverify"

# Upward imports known and not yet removed: (file under vkverify/, imported layer) -> why.
# Each entry must still be needed (test_known_exceptions_are_still_needed), so fixing one forces
# its removal here.
KNOWN: dict[tuple[str, str], str] = {}


def imports(path: Path):
    """(line, absolute module) for every vkverify import of the file; relative ones resolved."""
    package = ["vkverify", *path.relative_to(PACKAGE).parent.parts]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            if node.module is None or base == ROOT:  # `from .. import x`: x may be a layer
                for alias in node.names:
                    yield node.lineno, f"{base}.{alias.name}"
            else:
                yield node.lineno, base


def layer_of(module: str) -> str | None:
    """The vkverify layer a module belongs to; ROOT for the root package; None outside vkverify."""
    parts = module.split(".")
    if parts[0] != ROOT:
        return None
    if len(parts) == 1 or parts[1] in ("__version__", "errors"):
        return ROOT
    return parts[1]


def violations(layer: str):
    """(file, line, module, imported layer) of every import of `layer` that reaches above it."""
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, module in imports(path):
            target = layer_of(module)
            if target in (None, ROOT, layer) or target in ALLOWED[layer]:
                continue
            yield path.relative_to(PACKAGE).as_posix(), line, module, target


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_nothing_above_it(layer):
    found = [f"vkverify/{file}:{line}: imports {module} ({layer} may import only "
             f"{', '.join(sorted(ALLOWED[layer])) or 'nothing of vkverify'})"
             for file, line, module, target in violations(layer) if (file, target) not in KNOWN]
    assert not found, "upward imports:\n" + "\n".join(found)


def test_known_exceptions_are_still_needed():
    present = {(file, target) for layer in ALLOWED for file, _, _, target in violations(layer)}
    assert set(KNOWN) <= present, f"fixed, remove from KNOWN: {sorted(set(KNOWN) - present)}"


def test_every_layer_is_in_the_table():
    """A new package under vkverify/ gets a row, so it cannot slip past the test."""
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == set(ALLOWED)


def test_the_walker_sees_relative_absolute_and_lazy_imports(tmp_path, monkeypatch):
    """Not vacuous: each spelling of an upward import from check/ is found, with its line."""
    fake = tmp_path / "vkverify"
    (fake / "check").mkdir(parents=True)
    (fake / "check" / "x.py").write_text(
        "from ..mutations.hb import Model\n"
        "import vkverify.runtime\n"
        "def f():\n"
        "    from .. import sim\n"
        "    from vkverify.cli import main\n"
        "from ..model import ir\n"
        "from . import findings\n"
        "from .. import __version__\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert [(line, target) for _, line, _, target in violations("check")] == [
        (1, "mutations"), (2, "runtime"), (4, "sim"), (5, "cli")]


CHECK_ONLY = """
import sys
import vkverify.check
from vkverify.model import load
findings = vkverify.check.check(load(sys.argv[1]))
assert findings, "corpus 01 has a hazard: the check ran"
print(" ".join(sorted(m for m in sys.modules if m == "vulkan" or m.startswith(
    ("vkverify.runtime", "vkverify.mutations", "vkverify.sim", "vkverify.importer", "vkverify.cli")))))
"""


def test_check_runs_without_the_layers_above_it():
    """`vkverify check` works without a Vulkan driver: checking a stream loads no runtime, no
    `vulkan`, no mutations, no simulator (in a fresh interpreter, so no other test has loaded them)."""
    run = subprocess.run([sys.executable, "-c", CHECK_ONLY, str(CORPUS_01)], capture_output=True, text=True,
                         cwd=PACKAGE.parent, check=False)
    assert run.returncode == 0, run.stderr
    loaded = run.stdout.split()
    assert not loaded, f"checking a stream loaded {', '.join(loaded)}"


# ---- no import circle inside a package ------------------------------------------------------------

# Circles known and not yet removed: the modules of each, sorted -> why. Each must still be there
# (test_known_circles_are_still_there), so removing one forces its deletion here.
KNOWN_CIRCLES: dict[tuple[str, ...], str] = {}


def module_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (`from . import x` counts as x)."""
    modules = {module_of(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.rpartition(".")[0] if path.name != "__init__.py" else name
        targets = set()
        for _, module in imports(path):
            while module not in modules and "." in module:  # `from .m import name`: the module m
                module = module.rpartition(".")[0]
            if module in modules and module != name and module.rpartition(".")[0] == package:
                targets.add(module)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The modules of each strongly connected component of more than one module, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.add(tuple(sorted(component)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_inside_a_package():
    found = circles(import_graph(PACKAGE)) - set(KNOWN_CIRCLES)
    assert not found, f"import circles: {sorted(found)}"


def test_known_circles_are_still_there():
    assert set(KNOWN_CIRCLES) <= circles(import_graph(PACKAGE)), "removed: delete it from KNOWN_CIRCLES"


def test_the_circle_finder_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    """Not vacuous: a circle through a lazy `from . import` and one through `from .m import name` are found;
    an import of the package itself or of another package is none."""
    fake = tmp_path / "vkverify"
    (fake / "runtime").mkdir(parents=True)
    for name, text in {"runtime/__init__.py": "from .replay import replay\n",
                       "runtime/replay.py": "def replay():\n    from . import multidevice\n",
                       "runtime/multidevice.py": "from .replay import replay\nfrom ..model import ir\n",
                       "runtime/lone.py": "from . import replay\n"}.items():
        (fake / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert circles(import_graph(fake)) == {("vkverify.runtime.multidevice", "vkverify.runtime.replay")}
