"""syncval's own tests, ported (docs/syncval.md): vkverify agrees with each, and the table names each stream."""

from __future__ import annotations

import json
import re

from vkverify.cli import main

from .conftest import ROOT

STREAMS = sorted((ROOT / "tests" / "syncval").glob("*.json"))
TABLE = (ROOT / "docs" / "syncval.md").read_text()
ROW = re.compile(r"^\| (\w+\.\w+) \| (sync_val\w*\.cpp):(\d+) \| (.+) \|$", re.MULTILINE)


def test_every_stream_agrees_with_its_expect_block(capsys):
    assert len(STREAMS) >= 100
    assert main(["check", "--expect", *map(str, STREAMS)]) == 0
    assert "DISAGREES" not in capsys.readouterr().out


def test_a_changed_expectation_disagrees(tmp_path, capsys):
    """The agreement above can fail: dropping one expected finding makes the CLI report it."""
    path = next(p for p in STREAMS if p.name == "NegativeSyncVal.BufferCopy-1.json")
    doc = json.loads(path.read_text())
    doc["expect"]["findings"] = []
    changed = tmp_path / path.name
    changed.write_text(json.dumps(doc))
    assert main(["check", "--expect", str(changed)]) == 1
    assert "unexpected: war A" in capsys.readouterr().out


def test_the_table_names_every_stream_and_every_stream_its_test():
    rows = ROW.findall(TABLE)
    ported = {name for *_, what in rows if what.startswith("ported: ") for name in re.findall(r"`([^`]+)`", what)}
    assert ported == {p.stem for p in STREAMS}
    for full, _, _, what in rows:
        if what.startswith("ported: "):
            assert all(re.fullmatch(re.escape(full) + r"(-\d+)?", s) for s in re.findall(r"`([^`]+)`", what)), full


def test_every_stream_cites_its_test():
    rows = {full: (file, line) for full, file, line, _ in ROW.findall(TABLE)}
    for path in STREAMS:
        doc = json.loads(path.read_text())
        file, line = rows[path.stem.split("-")[0]]
        assert doc["name"] == path.stem
        assert f"tests/unit/{file}:{line} " in doc["description"], path.name


def test_the_table_has_every_test_and_its_counts():
    total = int(re.search(r": (\d+) TEST_F, (\d+) ported", TABLE).group(1))
    rows = ROW.findall(TABLE)
    assert len(rows) == total == 439
    per_file = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in
                re.finditer(r"^\| (sync_val\w*\.cpp) \| (\d+) \| (\d+) \| \d+ \|$", TABLE, re.MULTILINE)}
    for file, (count, ported) in per_file.items():
        mine = [what for _, f, _, what in rows if f == file]
        assert (len(mine), sum(w.startswith("ported: ") for w in mine)) == (count, ported), file
    assert not [full for full, _, _, what in rows if what == "expressible, not ported yet"]
