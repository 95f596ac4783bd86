"""model/stages.py: every value of the stage and access table against the `vulkan` package, and
what the loader, checker, importer and runtime derive from it."""

from __future__ import annotations

import pytest

from vkverify.check.scopes import (EARLIER_EVENT_OPERATIONS, EARLIER_TRANSITIONS, LATER_EVENT_OPERATIONS,
                                   LATER_TRANSITIONS, first_execution_scope, second_execution_scope)
from vkverify.importer.flags import access_names, stage_names
from vkverify.model.names import ACCESS_SETS, STAGE_SETS, access_name, stage_name
from vkverify.model.stages import (ACCESSES, COMMAND_STAGES, STAGES, access_mask, access_names_of,
                                   same_or_logically_earlier, stage_mask, stage_names_of)

vk = pytest.importorskip("vulkan")


def constant(prefix: str, name: str) -> int | None:
    """The `vulkan` package's value of VK_<prefix><NAME>_BIT (VK_<prefix>NONE for none), or None."""
    return getattr(vk, f"VK_{prefix}{name.upper()}" + ("" if name == "none" else "_BIT"), None)


@pytest.mark.parametrize("row", STAGES, ids=lambda r: r.name)
def test_stage_bits_are_vulkans(row):
    assert row.sync2 == constant("PIPELINE_STAGE_2_", row.name)
    assert row.sync1 == constant("PIPELINE_STAGE_", row.name)


@pytest.mark.parametrize("row", ACCESSES, ids=lambda r: r.name)
def test_access_bits_are_vulkans(row):
    assert row.sync2 == constant("ACCESS_2_", row.name)
    assert row.sync1 == constant("ACCESS_", row.name)


def test_sync1_masks_stand_in_for_the_bits_sync1_lacks():
    """copy, blit and clear are TRANSFER, the storage accesses SHADER_READ / SHADER_WRITE; an empty or
    `none` stage mask is TOP_OF_PIPE as source, BOTTOM_OF_PIPE as destination (7.6.1)."""
    assert stage_mask({"copy", "blit", "clear", "all_transfer"}, False, True) == vk.VK_PIPELINE_STAGE_TRANSFER_BIT
    assert stage_mask({"copy", "clear"}, True, True) == \
        vk.VK_PIPELINE_STAGE_2_COPY_BIT | vk.VK_PIPELINE_STAGE_2_CLEAR_BIT
    assert stage_mask(set(), False, True) == stage_mask({"none"}, False, True) == vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
    assert stage_mask({"none"}, False, False) == vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT
    assert stage_mask({"none"}, True, False) == vk.VK_PIPELINE_STAGE_2_NONE
    assert access_mask({"shader_storage_read", "shader_storage_write"}, False) == (
        vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
    assert access_mask({"none"}, False) == access_mask(set(), True) == 0


@pytest.mark.parametrize("row", [r for r in STAGES if r.in_format and r.name != "none"], ids=lambda r: r.name)
def test_a_stage_name_round_trips_through_its_mask(row):
    """The importer decodes what the runtime submits: transfer for all_transfer (one bit)."""
    name = "transfer" if row.name == "all_transfer" else row.name
    assert stage_names_of(stage_mask({row.name}, True, True)) == [name]
    assert stage_names(f"VK_PIPELINE_STAGE_2_{row.name.upper()}_BIT") == [name]


@pytest.mark.parametrize("row", [r for r in ACCESSES if r.name != "none"], ids=lambda r: r.name)
def test_an_access_name_round_trips_through_its_mask(row):
    assert access_names_of(access_mask({row.name}, True)) == [row.name]
    assert access_names(f"VK_ACCESS_2_{row.name.upper()}_BIT") == [row.name]


def test_all_graphics_decodes_but_is_no_name_of_the_format():
    """A captured ALL_GRAPHICS holds, of the format's stages, draw_indirect; a stream may not name it."""
    assert stage_names(vk.VK_PIPELINE_STAGE_2_ALL_GRAPHICS_BIT) == ["draw_indirect"]
    assert stage_names("VK_PIPELINE_STAGE_2_ALL_GRAPHICS_BIT") == ["draw_indirect"]
    assert stage_name("VK_PIPELINE_STAGE_2_ALL_GRAPHICS_BIT") is None and "all_graphics" not in STAGE_SETS
    assert stage_name("VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT") == "all_transfer"
    # vk.xml: SHADER_READ is sampled, storage and binding table reads, never a uniform buffer's (UNIFORM_READ).
    assert access_name("VK_ACCESS_SHADER_READ_BIT") == "shader_read" and ACCESS_SETS["shader_read"] == {
        "shader_sampled_read", "shader_storage_read"}


def test_execution_scopes_follow_the_pipeline_orders():
    """7.6.1: compute is draw_indirect then compute_shader; copy and clear are unordered; TOP_OF_PIPE is
    NONE as source and ALL_COMMANDS as destination, BOTTOM_OF_PIPE the reverse; host stands alone. ALL_COMMANDS
    also holds every layout transition and every event set or reset, by a name of each side's (7.6: "all operations
    performed by all commands")."""
    first, second = (lambda *s: first_execution_scope(frozenset(s))), (lambda *s: second_execution_scope(frozenset(s)))
    assert first("compute_shader") == {"draw_indirect", "compute_shader"}
    assert second("draw_indirect") == {"draw_indirect", "compute_shader"}
    assert first("copy") == {"copy"} and second("clear") == {"clear"}
    assert first("transfer") == {"copy", "blit", "resolve", "clear"}
    assert first("top_of_pipe") == second("bottom_of_pipe") == set()
    assert first("bottom_of_pipe") == first("all_commands") == COMMAND_STAGES | {EARLIER_TRANSITIONS,
                                                                                 EARLIER_EVENT_OPERATIONS}
    assert second("top_of_pipe") == second("all_commands") == COMMAND_STAGES | {LATER_TRANSITIONS,
                                                                               LATER_EVENT_OPERATIONS}
    assert first("host") == second("host") == {"host"}


@pytest.mark.parametrize("earlier, later, ordered", [
    ("compute_shader", "compute_shader", True), ("top_of_pipe", "compute_shader", True),
    ("draw_indirect", "compute_shader", True), ("compute_shader", "draw_indirect", False),
    ("transfer", "compute_shader", False), ("compute_shader", "copy", False), ("copy", "transfer", True),
    ("transfer", "copy", False), ("all_commands", "compute_shader", False), ("compute_shader", "all_commands", True),
    ("transfer", "bottom_of_pipe", True), ("bottom_of_pipe", "top_of_pipe", False)])
def test_same_or_logically_earlier_follows_the_pipeline_orders(earlier, later, ordered):
    """7.6.1, as a buffer marker write's implicit dependency reads it (copies.adoc: an earlier marker that
    "specified either the same pipelineStage or a stage that is logically earlier")."""
    assert same_or_logically_earlier({earlier}, {later}) is ordered


def test_device_accesses_are_what_commands_perform():
    """DEVICE_ACCESSES, derived from the table's supported stages (7.7.1), is exactly the (stage, access)
    pairs the format's commands perform: a copy, a fill, an update and a dispatch of every binding kind,
    indirect, a sampled image binding, an image blit and a resolve."""
    from vkverify.model import from_dict
    from vkverify.model.accesses import DEVICE_ACCESSES, command_accesses
    from vkverify.model.builder import Stream

    s = Stream("every command").create_buffer("A", 4096).create_buffer("B", 4096)
    s.declare_shader("k", ["read", "write", "read_write", "uniform"])
    s.allocate_command_buffer("cb").cmd_copy_buffer("A", "B").cmd_fill_buffer("A").cmd_update_buffer("B", 0, 16) \
        .cmd_dispatch("k", ["A", "B", "A", "B"], indirect={"buffer": "A", "offset": 0})
    images = from_dict({"format": "vkverify-stream/1", "name": "images",
                        "images": [{"id": "I", "extent": [4, 4]}, {"id": "M", "extent": [4, 4], "samples": 2}],
                        "shaders": {"sample": {"bindings": ["sampled"]}},
                        "command_buffers": {"cb": [{"cmd": "blit_image", "src": "I", "dst": "I", "regions": [
                            {"src_offsets": [[0, 0, 0], [2, 2, 1]], "dst_offsets": [[2, 2, 0], [4, 4, 1]]}]},
                            {"cmd": "resolve_image", "src": "M", "dst": "I", "regions": [{"extent": [4, 4]}]},
                            {"cmd": "dispatch", "shader": "sample", "bindings": [{"image": "I"}]}]}})
    performed = {(stage, access) for c in (*s.build().command_buffers[0].commands, *images.command_buffers[0].commands)
                 for stage, reads, write, *_ in command_accesses(c) for access in (*reads, *([write] if write else []))}
    assert performed == set(DEVICE_ACCESSES) and len(DEVICE_ACCESSES) == len(performed)
    assert set(DEVICE_ACCESSES) <= {(s, a.name) for a in ACCESSES for s in a.stages}
