"""Operation references: one parser and formatter (vkverify/model/refs.py)."""

from __future__ import annotations

import pytest

from vkverify.model.refs import (Ref, format_ref, map_positions, owner_of, parse_ref, sort_key, split_ref,
                                 split_submit, with_submit, without_submit)


@pytest.mark.parametrize("text, ref", [
    ("cb0[2]", Ref("cb0", 2)),
    ("main[15]", Ref("main", 15)),
    ("cb0[2]@main[5]", Ref("cb0", 2, Ref("main", 5))),
    ("my.cb-1[0]", Ref("my.cb-1", 0)),
])
def test_parse_and_format_round_trip(text, ref):
    assert parse_ref(text) == ref
    assert str(ref) == text == format_ref(ref.owner, ref.index, ref.submit)


@pytest.mark.parametrize("text", ["copy_a", "cb0", "cb0[x]", "cb0[2]x", "cb0[2]@sub1", "cb0[2]@", "[2]",
                                  "cb0[2].buffers[1]"])
def test_not_a_positional_reference(text):
    assert parse_ref(text) is None


def test_parts():
    assert split_submit("cb0[2]@main[5]") == ("cb0[2]", "main[5]") and split_submit("main[1]") == ("main[1]", "")
    assert without_submit("cb0[2]@main[5]") == "cb0[2]" and without_submit("an_id") == "an_id"
    assert owner_of("cb0[2]@main[5]") == "cb0" and owner_of("main[3].batches[0].wait[1]") == "main"
    assert with_submit("cb0[2]", "main[5]") == "cb0[2]@main[5]" and with_submit("cb0", None) == "cb0"
    assert split_ref("main[3].batches[0].wait[1]") == (Ref("main", 3), ".batches[0].wait[1]")
    assert split_ref("cb0[2]@main[5]") == (Ref("cb0", 2), "@main[5]") and split_ref("an_id") is None


def test_sort_key_orders_positions_as_numbers():
    assert sorted(["main[10]", "cb0[1]", "main[9]"], key=sort_key) == ["cb0[1]", "main[9]", "main[10]"]


def test_map_positions_rewrites_every_reference_in_text():
    moved = {"main": {2: 3, 4: 5}}
    change = lambda owner, i: format_ref(owner, moved[owner][i]) if owner in moved else None  # noqa: E731
    assert map_positions("cb0[0]@main[4]", change) == "cb0[0]@main[5]"
    assert map_positions("read main[2].batches[0]", change) == "read main[3].batches[0]"


def test_map_positions_reads_owners_with_dots():
    """The uploader's command buffers are `upload.cb0`: their references in text map as a whole (optimize maps
    findings back through this; read as `cb0`, a pair inside one upload was taken as ordered by nothing)."""
    moved = {"upload.cb0": {1: 2}}
    change = lambda owner, i: format_ref(owner, moved[owner][i]) if owner in moved else None  # noqa: E731
    assert map_positions("waw upload.cb0[1]@main[3]", change) == "waw upload.cb0[2]@main[3]"
    assert map_positions("upload.cb0[1].x[1]", change) == "upload.cb0[2].x[1]"
