"""Properties of the project as a whole, read from its files: what it cites exists in it."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from .conftest import ROOT

# A path-like word ending in .md: `docs/format.md`, `README.md`, `/abs/NOTES.md`, `../x.md`.
MD_REFERENCE = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)*[\w.-]+\.md)\b")
URL = re.compile(r"\w+://\S+")


def project_files() -> list[str]:
    """The files of the project (tracked, or new and not ignored), relative to its root; outside a git
    checkout (an unpacked archive), every file not under a hidden folder, a cache or an egg-info."""
    try:
        done = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        return [f for f in done.stdout.splitlines() if (ROOT / f).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()
                and not any(part.startswith(".") or part == "__pycache__" or part.endswith(".egg-info")
                            for part in p.relative_to(ROOT).parts[:-1])]


def md_references(text: str) -> set[str]:
    """The .md files `text` refers to, web addresses left out (they are not the project's files)."""
    return set(MD_REFERENCE.findall(URL.sub("", text)))


def resolves(reference: str, referrer: str, files: set[str]) -> bool:
    """A reference names a project file: as a path from the root or from the referring file's folder,
    or as the tail of one (`format.md` in `ROOT / "docs" / "format.md"`)."""
    if reference.startswith("/"):
        return False
    here = (ROOT / referrer).parent / reference
    if here.resolve().is_relative_to(ROOT) and str(here.resolve().relative_to(ROOT)) in files:
        return True
    return reference in files or any(f.endswith("/" + reference) for f in files)


def test_md_references_resolve_to_project_files():
    files = set(project_files())
    dangling = []
    for name in sorted(files - {"tests/test_project.py"}):  # its examples of dangling references
        try:
            text = (ROOT / name).read_text()
        except UnicodeDecodeError:
            continue
        dangling += [f"{name}: {ref}" for ref in sorted(md_references(text)) if not resolves(ref, name, files)]
    assert not dangling, dangling


def test_md_reference_finder_sees_what_it_must():
    files = {"docs/format.md", "README.md", "tests/corpus/README.md"}
    found = md_references("see PROTOCOLS.md 1, (docs/format.md), `/work/x/NOTES.md`, "
                          "https://example.org/design.md and ../README.md")
    assert found == {"PROTOCOLS.md", "docs/format.md", "/work/x/NOTES.md", "../README.md"}
    assert [r for r in sorted(found) if not resolves(r, "tests/x.py", files)] == \
        ["/work/x/NOTES.md", "PROTOCOLS.md"]


# ---- the public surface: `__all__` ---------------------------------------------------------------

PACKAGE = ROOT / "vkverify"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def public_modules() -> list[Path]:
    """Every module of the package but a `__main__.py` (a script, imported by no one); a package's
    __init__.py is the package's."""
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.name != "__main__.py"]


def top_level(tree: ast.Module) -> tuple[list[str] | None, set[str]]:
    """(the module's `__all__`, None without one; every name bound at its top level)."""
    declared, bound = None, set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                bound |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                if isinstance(target, ast.Name) and target.id == "__all__":
                    declared = list(ast.literal_eval(node.value))
    return declared, bound


def imported_by_name(path: Path):
    """(module, name) for each `from MODULE import name` of the file, relative imports resolved."""
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield from ((module, a.name) for a in node.names)


def test_every_public_module_declares_all():
    missing = [p.relative_to(ROOT).as_posix() for p in public_modules()
               if top_level(ast.parse(p.read_text()))[0] is None]
    assert not missing, f"no __all__: {missing}"


def test_all_names_what_the_module_binds_and_what_others_import_from_it():
    modules = {module_name(p): p for p in public_modules()}
    surface = {name: top_level(ast.parse(p.read_text())) for name, p in modules.items()}
    unbound = [f"{m}.{n}" for m, (declared, bound) in surface.items() for n in declared or () if n not in bound]
    assert not unbound, f"in __all__ but not defined: {unbound}"
    undeclared = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for module, name in imported_by_name(path):
            declared = surface.get(module, (None, ()))[0]
            if declared is None or name.startswith("_") or name == "*" or f"{module}.{name}" in modules:
                continue  # not a public module of vkverify, a private name or a submodule
            if name not in declared:
                undeclared.add(f"{path.relative_to(ROOT).as_posix()}: {module}.{name}")
    assert not undeclared, f"imported from a module whose __all__ leaves it out: {sorted(undeclared)}"


# ---- the runtime's users reach it through its public API -------------------------------------------


def private_reaches(path: Path) -> list[str]:
    """`x._name` in the file where x is not `self` or `cls`: another object's private attribute."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_uploads_and_mutations_use_the_runtime_through_public_names():
    """The uploader records through StreamRecord's API and the runtime mutation reads the runtime's state
    through public names: neither reaches into `rt._lock` or a private method."""
    found = [hit for folder in ("vkverify/runtime/uploads", "vkverify/mutations")
             for path in sorted((ROOT / folder).rglob("*.py")) for hit in private_reaches(path)]
    assert not found, found


def test_private_reaches_are_seen(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("def f(rt):\n    with rt._lock:\n        return self._own + rt.record.commands('cb')\n")
    assert [hit.split(": ", 1)[1] for hit in private_reaches(source)] == ["rt._lock"]


# ---- one class name per concept ---------------------------------------------------------------------

# Class names that more than one module defines, and why each may. Delete an entry once one is renamed.
SHARED_CLASS_NAMES = {
    "Stream": "the builder's Stream builds the IR's Stream: README's Python API names both",
    "CommandBuffer": "the builder's records an IR CommandBuffer; the runtime's is the builder's with source lines",
}


def test_one_class_name_per_concept():
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(path.relative_to(ROOT).as_posix())
    shared = {name: files for name, files in defined.items() if len(files) > 1}
    assert set(shared) - set(SHARED_CLASS_NAMES) == set(), {n: shared[n] for n in set(shared) - set(SHARED_CLASS_NAMES)}
    assert set(SHARED_CLASS_NAMES) <= set(shared), f"renamed: delete {sorted(set(SHARED_CLASS_NAMES) - set(shared))}"
