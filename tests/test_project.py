"""Properties of the project as a whole, read from its files: what it cites exists in it."""

from __future__ import annotations

import re
import subprocess

from .conftest import ROOT

# A path-like word ending in .md: `docs/format.md`, `README.md`, `/abs/NOTES.md`, `../x.md`.
MD_REFERENCE = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)*[\w.-]+\.md)\b")
URL = re.compile(r"\w+://\S+")


def project_files() -> list[str]:
    """The files of the project (tracked, or new and not ignored), relative to its root."""
    done = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return [f for f in done.stdout.splitlines() if (ROOT / f).is_file()]


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
