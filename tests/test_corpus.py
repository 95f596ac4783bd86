"""The corpus is a test suite: every stream's findings equal its `expect` block."""

from __future__ import annotations

import json

import pytest

from vkverify.check import check
from vkverify.check.expect import compare
from vkverify.cli import main
from vkverify.model import from_dict, load

from .conftest import CORPUS, EXAMPLES


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS + EXAMPLES, ids=lambda p: p.name)
def test_stream_agrees_with_expect(path):
    stream = load(path)
    assert stream.expect is not None, "every corpus stream carries an expect block"
    assert stream.description, "every corpus stream says why"
    agreement = compare(stream, check(stream))
    assert agreement.agrees, (agreement.missing, agreement.unexpected)


def test_cli_expect_over_whole_corpus(capsys):
    assert main(["check", "--expect", *map(str, CORPUS)]) == 0
    assert "DISAGREES" not in capsys.readouterr().out


def test_cli_expect_fails_on_a_wrong_expectation(tmp_path, capsys):
    doc = json.loads(CORPUS[0].read_text())
    assert doc["expect"]["findings"], "the first corpus stream has a finding to drop"
    doc["expect"]["findings"] = []
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps(doc))
    assert main(["check", "--expect", str(bad)]) == 1
    assert "unexpected: raw" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", [[0, 1], [2048, 4095], [2047, 4096]])
def test_an_expected_range_is_compared(wrong):
    """Corpus 09's RAW covers bytes [2048, 4096) exactly: an `expect` range off by a byte disagrees."""
    path = next(p for p in CORPUS if p.name.startswith("09-"))
    doc = json.loads(path.read_text())
    assert doc["expect"]["findings"][0]["range"] == [2048, 4096]
    stream = load(path)
    assert compare(stream, check(stream)).agrees
    doc["expect"]["findings"][0]["range"] = wrong
    stream = from_dict(doc)
    agreement = compare(stream, check(stream))
    assert not agreement.agrees and [e.range for e in agreement.missing] == [tuple(wrong)]
