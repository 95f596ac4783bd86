"""JUnit XML: the one writer `check --format junit` and `mutate --junit` share. Each testsuite
and the testsuites root count their testcases by outcome, so no caller counts them apart."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

__all__ = ["JUnit", "Suite"]

OUTCOMES = {"failure": "failures", "error": "errors", "skipped": "skipped"}


def xml_text(text: str) -> str:
    """`text` with what XML 1.0 cannot hold (a command's terminal escapes, NULs) replaced by U+FFFD."""
    return re.sub("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", "\ufffd", text)


def _properties(parent: ET.Element, values: dict) -> None:
    properties = ET.SubElement(parent, "properties")
    for name, value in values.items():
        text = f"{value:.1f}" if isinstance(value, float) else str(value)
        ET.SubElement(properties, "property", name=name, value=xml_text(text))


class Suite:
    """One <testsuite>; `case` adds a testcase and counts it."""

    def __init__(self, element: ET.Element) -> None:
        self.element = element
        self.counts = dict.fromkeys(("tests", *OUTCOMES.values()), 0)

    def case(self, classname: str, name: str, outcome: str | None = None, message: str = "", text: str = "",
             source: str | None = None, properties: dict | None = None) -> None:
        """A testcase; `outcome` failure, error or skipped (None: passed) with its message and text; `source`
        the program's FILE:LINE; `properties` name -> value."""
        c = ET.SubElement(self.element, "testcase", classname=xml_text(classname), name=xml_text(name))
        if source:
            path, _, line = source.rpartition(":")
            c.set("file", xml_text(path))
            c.set("line", line)
        if properties:
            _properties(c, properties)
        self.counts["tests"] += 1
        if outcome is not None:
            self.counts[OUTCOMES[outcome]] += 1
            ET.SubElement(c, outcome, message=xml_text(message)).text = xml_text(text) or None


class JUnit:
    """A <testsuites> document named `name`, built suite by suite."""

    def __init__(self, name: str) -> None:
        self.root = ET.Element("testsuites", name=name)
        self.suites: list[Suite] = []

    def suite(self, name: str, properties: dict | None = None) -> Suite:
        element = ET.SubElement(self.root, "testsuite", name=xml_text(name))
        if properties:
            _properties(element, properties)
        self.suites.append(Suite(element))
        return self.suites[-1]

    def xml(self) -> str:
        """The document, each suite's counts and their totals set."""
        totals = dict.fromkeys(("tests", *OUTCOMES.values()), 0)
        for s in self.suites:
            for k, v in s.counts.items():
                s.element.set(k, str(v))
                totals[k] += v
        for k, v in totals.items():
            self.root.set(k, str(v))
        return ET.tostring(self.root, encoding="unicode", xml_declaration=True)
