"""syncval's own tests, ported (docs/syncval.md): vkverify agrees with each, and the table names each stream."""

from __future__ import annotations

import importlib.util
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


def _table_tool():
    spec = importlib.util.spec_from_file_location("syncval_table", ROOT / "tools" / "syncval_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = """struct PositiveSyncVal : public VkSyncValTest {};

TEST_F(PositiveSyncVal, HostThreads) {
    std::atomic<bool> bailout{false};
    semaphore.Signal(1);
}

TEST_F(PositiveSyncVal, Atomics) {
    const char* cs_source = "void main(){ atomicAdd(data[0], 1); }";
    vkt::Event unused;
    vk::CmdWriteTimestamp(m_command_buffer, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, query_pool, 0);
}
"""


def test_the_table_tool_reads_each_test_and_its_reason():
    tool = _table_tool()
    tests = list(tool.tests_of(SOURCE))
    assert [(fixture, name, line) for fixture, name, line, _ in tests] == [
        ("PositiveSyncVal", "HostThreads", 3), ("PositiveSyncVal", "Atomics", 8)]
    assert tests[0][3].endswith("semaphore.Signal(1);\n}")
    (_, _, _, threads), (_, _, _, atomics) = tests
    assert tool.reason("sync_val_positive.cpp", "PositiveSyncVal.HostThreads", threads) == tool.NOT_YET
    # The first use in the list's order names the reason; a shader atomic, an event and a timestamp are none since
    # the format has atomic bindings, events and query result copies (docs/format.md)
    assert tool.reason("sync_val_positive.cpp", "PositiveSyncVal.Atomics", atomics) == tool.NOT_YET
    with_image = atomics + "\nvkt::Image image;\nvk::CmdDraw(cb, 3, 1, 0, 0);"
    assert tool.reason("sync_val_positive.cpp", "PositiveSyncVal.Atomics", with_image) == tool.GRAPHICS
    assert tool.reason("sync_val_positive.cpp", "PositiveSyncVal.Atomics", with_image.replace("CmdDraw", "")) \
        == "needs images"
    assert tool.reason("sync_val_wsi_positive.cpp", "PositiveSyncVal.HostThreads", threads) \
        == "presentation (swapchains)"
    assert tool.reason("sync_val.cpp", "NegativeSyncVal.BadDestroy", threads).startswith("no synchronization")
