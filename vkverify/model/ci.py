"""What CI systems read, whoever reports: GitHub Actions workflow commands and the skeleton of a SARIF 2.1.0
log (`check --format github|sarif` and `mutate --format github|sarif` fill them; JUnit XML is junit.py)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from .. import __version__

__all__ = ["SRCROOT", "annotation", "artifact", "document"]

SRCROOT = "SRCROOT"  # SARIF artifact URIs are relative to it: the working directory


def _data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub Actions, workflow commands)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str, text: str, region: dict | None = None, title: str | None = None) -> str:
    """One workflow command: `::level file=...,line=...,title=...::text`, escaped as GitHub Actions reads it."""
    props = {"file": file}
    if region and "startLine" in region:
        props.update(line=region["startLine"], col=region["startColumn"], endLine=region["endLine"],
                     endColumn=region["endColumn"])
    if title:
        props["title"] = title
    return f"::{level} " + ",".join(f"{k}={_property(str(v))}" for k, v in props.items()) + f"::{_data(text)}"


def artifact(file: str) -> dict:
    """A relative URI against SRCROOT for a file below the working directory, else an absolute one."""
    path = Path(file).resolve()
    try:
        return {"uri": quote(path.relative_to(Path.cwd().resolve()).as_posix()), "uriBaseId": SRCROOT}
    except ValueError:
        return {"uri": path.as_uri()}


def document(rules: list[dict], results: list[dict], files: list[str], successful: bool,
             notifications: list[dict] = ()) -> str:
    """A SARIF 2.1.0 log of one vkverify run: its rules, results, the files it read, how it ended."""
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "vkverify", "version": __version__, "rules": rules}},
        "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().resolve().as_uri().rstrip("/") + "/"}},
        "invocations": [{"executionSuccessful": successful, "toolExecutionNotifications": list(notifications)}],
        "artifacts": [{"location": artifact(file)} for file in files],
        "columnKind": "unicodeCodePoints",
        "results": results}]}
    return json.dumps(doc, indent=2)
