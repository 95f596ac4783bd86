"""Image commands replayed on Lavapipe under the validation layer: every digest (buffers, and each image read back
in the model's linear layout) equals the simulator's reference, so the simulator's image semantics and the runtime's
Vulkan calls agree byte for byte."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings

from tests.conftest import CORPUS, ROOT, image_binding_accesses
from tests.differential import SETTINGS, image_streams
from vkverify.check import check
from vkverify.model import InvalidStream, UsageError, from_dict, load
from vkverify.model.data import ref_hash
from vkverify.model.images import COMPRESSED, PLANES, clear_texel
from vkverify.shaders import generic
from vkverify.sim import reference

runtime = pytest.importorskip("vkverify.runtime")
from vkverify.runtime.report import replay_text  # noqa: E402
from vkverify.runtime.syncval import (COMPRESSED_BOXES, SLICES_WIDENED, TRANSITION_OUT_OF_SCOPE,  # noqa: E402
                                      explain_only_layer, explain_only_vkverify)

CLEAR_VALUES = {"unorm": [0.25, 0.5, 1.0, 0.75], "srgb": [0.25, 0.5, 1.0, 0.75], "sfloat": [0.25, -1.5, 3.0, 0.1],
                "uint": [7, 300, 1, 2], "sint": [-7, 5, -200, 3]}


def _barrier(src: str, src_access: str, dst: str, dst_access: str, images: list[dict]) -> dict:
    return {"cmd": "barrier", "src_stage": [src], "src_access": [src_access] if src_access else [],
            "dst_stage": [dst], "dst_access": [dst_access], "images": images}


def image_stream(first_layout: str = "undefined", format: str = "r8g8b8a8_unorm") -> dict:
    """Upload both layers of A's level 0 (one region with a buffer row length wider than the box) and its level 1,
    make A transfer_src_optimal, copy a box of layer 1 to Out, clear layer 0 (transfer_dst_optimal again), then copy
    a box of layer 0 into B, which goes from `first_layout` to transfer_dst_optimal, as A's first barrier does."""
    kind = format.rpartition("_")[2]
    layer = {"base_array_layer": 0, "layer_count": 1}
    return {
        "format": "vkverify-stream/1", "name": f"images-{first_layout}-{format}",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Staging", "size": 4096, "memory": "host_coherent"}, {"id": "Out", "size": 4096}],
        "images": [{"id": "A", "extent": [8, 4], "format": format, "mip_levels": 2, "array_layers": 2},
                   {"id": "B", "extent": [6, 5], "format": format}],
        "command_buffers": {"cb0": [
            _barrier("none", "", "copy", "transfer_write",
                     [{"image": "A", "old_layout": first_layout, "new_layout": "transfer_dst_optimal"}]),
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "A", "regions": [
                {"buffer_offset": 0, "buffer_row_length": 10, "mip_level": 0, "base_array_layer": 0,
                 "layer_count": 2, "image_extent": [8, 4]},
                {"buffer_offset": 2048, "mip_level": 1, "base_array_layer": 0, "layer_count": 2,
                 "image_extent": [4, 2]}]},
            _barrier("copy", "transfer_write", "copy", "transfer_read",
                     [{"image": "A", "old_layout": "transfer_dst_optimal", "new_layout": "transfer_src_optimal"}]),
            {"cmd": "copy_image_to_buffer", "src": "A", "dst": "Out", "regions": [
                {"buffer_offset": 64, "buffer_row_length": 4, "buffer_image_height": 3, "mip_level": 0,
                 "base_array_layer": 1, "layer_count": 1, "image_offset": [3, 1], "image_extent": [4, 3]}]},
            _barrier("copy", "transfer_read", "clear", "transfer_write",
                     [{"image": "A", **layer, "old_layout": "transfer_src_optimal",
                       "new_layout": "transfer_dst_optimal"}]),
            {"cmd": "clear_color_image", "image": "A", "ranges": [{**layer, "base_mip_level": 0, "level_count": 1}],
             "value": CLEAR_VALUES[kind]},
            _barrier("clear", "transfer_write", "copy", "transfer_read",
                     [{"image": "A", **layer, "old_layout": "transfer_dst_optimal",
                       "new_layout": "transfer_src_optimal"},
                      {"image": "B", "old_layout": first_layout, "new_layout": "transfer_dst_optimal",
                       "src_stage": ["none"], "src_access": [], "dst_access": ["transfer_write"]}]),
            {"cmd": "copy_image", "src": "A", "dst": "B", "regions": [
                {"src_mip_level": 0, "src_base_array_layer": 0, "dst_mip_level": 0, "dst_base_array_layer": 0,
                 "layer_count": 1, "src_offset": [1, 1, 0], "dst_offset": [2, 3, 0], "extent": [4, 2, 1]}]},
        ]},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 4096,
             "data": {"pattern": "random", "seed": 5}},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
            {"op": "device_wait_idle"}]},
    }


def test_the_simulator_moves_image_bytes_in_the_linear_layout():
    """The reference's bytes where the stream puts them: A's layer 1 rows from the staging rows 10 texels apart,
    Out's box rows 4 texels apart, layer 0 of level 0 the clear's texel, B's box A's cleared texels, zeros around."""
    stream = from_dict(image_stream())
    result = reference(stream)
    staging = np.frombuffer(result.buffers["Staging"], np.uint8).reshape(-1, 4)
    a = np.frombuffer(result.buffers["A"], np.uint8)
    level0 = a[:2 * 32 * 4].reshape(2, 4, 8, 4)  # layer, row, texel, byte
    for y in range(4):  # layer 1 is 4 rows of the buffer's 10-texel rows, after layer 0's
        assert (level0[1, y] == staging[40 + y * 10:40 + y * 10 + 8]).all()
    texel = np.frombuffer(clear_texel("r8g8b8a8_unorm", (0.25, 0.5, 1.0, 0.75)), np.uint8)
    assert (level0[0] == texel).all() and list(texel) == [64, 128, 255, 191]
    level1 = a[256:].reshape(2, 2, 4, 4)
    assert (level1 == staging[512:528].reshape(2, 2, 4, 4)).all()
    out = np.frombuffer(result.buffers["Out"], np.uint8).reshape(-1, 4)
    for y in range(3):
        assert (out[16 + y * 4:16 + y * 4 + 4] == level0[1, 1 + y, 3:7]).all()
    b = np.frombuffer(result.buffers["B"], np.uint8).reshape(5, 6, 4)
    assert (b[3:5, 2:6] == texel).all() and not b[:3].any() and not b[:, :2].any()


def test_a_storage_image_binding_reads_its_subresources_bytes_level_by_level():
    """An abstract shader's image binding is the bytes of its subresources in the linear layout, in order (level 0
    layer 1, then level 1 layer 1), read as a buffer binding's would be (docs/format.md, Abstract shaders)."""
    doc = image_stream()
    doc["shaders"] = {"k": {"bindings": ["read", "write"]}}
    doc["command_buffers"]["cb0"].append({"cmd": "dispatch", "shader": "k", "bindings": [
        {"image": "A", "base_array_layer": 1, "layer_count": 1, "access": "read"},
        {"buffer": "Out", "access": "write"}]})
    result = reference(from_dict(doc))
    a = result.buffers["A"]
    read = np.frombuffer(a[128:256] + a[288:320], np.uint32)
    [expected] = generic([read], [4096 // 4], ref_hash("cb0[8]"))
    assert result.buffers["Out"] == expected.tobytes()


@pytest.mark.parametrize("first_layout", ["undefined", "general"])
@pytest.mark.parametrize("format", ["r8g8b8a8_unorm", "b8g8r8a8_srgb", "r32_sfloat", "r16g16b16a16_sfloat",
                                    "r8_uint", "r32_sint", "r32g32b32a32_uint"])
def test_image_commands_replay_with_the_simulator_s_digests(device_name, first_layout, format):
    """Upload to two layers and a second level, layout transitions, a copy to a buffer, a clear of one layer and a
    copy between images, with the images' first barriers from `undefined` (contents may be discarded; Lavapipe keeps
    them, as the simulator does) or from `general`: no validation error, and every digest equal to the reference's
    (A's and B's included)."""
    stream = from_dict(image_stream(first_layout, format))
    assert check(stream) == []
    result = runtime.replay(stream, syncval=True)
    errors = [m.text for m in result.messages if m.severity == "error"]
    assert errors == []
    assert {"A", "B", "Out"} <= result.digests.keys()
    assert result.reference == {}, result.reference
    assert check(result.recorded) == [] and result.recorded.images == stream.images
    assert f"  image A: {result.digests['A']}" in replay_text(result)


def test_image_barriers_replay_through_synchronization1_too(device_name, monkeypatch):
    """On a device without synchronization2 (here: the same device, told it has none) image barriers are
    VkImageMemoryBarrier in vkCmdPipelineBarrier, with the union of their stages: same digests, no error."""
    from vkverify.runtime.device import LogicalDevice

    opened = []

    def without_synchronization2(cls, *args, **kwargs):
        device = open_device(*args, **kwargs)
        device.synchronization2 = False
        opened.append(device)
        return device
    open_device = LogicalDevice.open
    monkeypatch.setattr(LogicalDevice, "open", classmethod(without_synchronization2))
    result = runtime.replay(from_dict(image_stream("undefined")), syncval=True)
    assert opened and [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference


IMAGE_BINDING_STREAMS = [p for p in CORPUS + sorted((ROOT / "tests" / "syncval").glob("*.json"))
                         if image_binding_accesses(load(p))]
# Streams that bind a storage image in a layout other than general, as their ports do (corpus 175: in
# shader_read_only_optimal; 176: a view of two layers, one of them still transfer_dst_optimal): the layer's
# messages about the stream's own layouts.
STREAM_LAYOUT_ERRORS = {
    "175-image-transition-before-copy-done": {"VUID-VkWriteDescriptorSet-descriptorType-04152"},
    "176-image-barrier-one-layer": {"VUID-VkDescriptorImageInfo-imageLayout-00344", "VUID-vkCmdDispatch-None-02699"},
}


OLD_LAYER_TRANSITIONS = {"PositiveSyncVal.QSTransitionAndRead", "PositiveSyncVal.QSTransitionWithSrcNoneStage"}
SAMPLED_STREAMS = {"222-sampled-read-barrier-names-storage-read", "223-sampled-read-barrier-names-sampled-read",
                   "224-ownership-image-acquire-without-the-release-semaphore",
                   "225-ownership-image-acquire-after-the-release-semaphore",
                   "NegativeSyncVal.CopyVsShaderDescriptorAccess-1", "NegativeSyncVal.CopyVsShaderDescriptorAccess-2",
                   "NegativeSyncVal.SampledImageDescriptorHazard"}


def test_the_image_binding_streams_are_the_expected_ones():
    """The parametrized test below runs every corpus and syncval stream that binds an image: 13 as storage images,
    7 as sampled ones."""
    sampled = {p.stem for p in IMAGE_BINDING_STREAMS if "sampled" in image_binding_accesses(load(p))}
    assert (len(IMAGE_BINDING_STREAMS), sampled) == (20, SAMPLED_STREAMS)
    assert OLD_LAYER_TRANSITIONS <= {p.stem for p in IMAGE_BINDING_STREAMS}


@pytest.mark.parametrize("path", IMAGE_BINDING_STREAMS, ids=lambda p: p.stem)
def test_image_binding_streams_replay_with_the_simulator_s_digests(device_name, path):
    """The abstract shaders' storage image bindings run through the image kernels (image.glsl), sampled ones through
    the sampled kernels (a combined image sampler read with texelFetch): every digest (the images' included) equals
    the simulator's, and the layer's hazards on the images are vkverify's findings, one for one (its messages name
    the kernels' views and scratch buffers, which stand for their image): a sampled read is the layer's
    SHADER_SAMPLED_READ, which a barrier to shader_storage_read leaves unordered (corpus 222)."""
    stream = load(path)
    assert runtime.replayable(stream) is None
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    assert result.agreement.only_vkverify == []
    # Two positive syncval ports the later layer accepts; this one reports their transition (TRANSITION_OUT_OF_SCOPE).
    # Corpus 225's acquire waits for the release on a timeline semaphore, whose order this layer does not see.
    assert {explain_only_layer(stream, lf, result.messages) for lf in result.agreement.only_layer} == (
        {TRANSITION_OUT_OF_SCOPE} if path.stem in OLD_LAYER_TRANSITIONS else
        {"timeline semaphores: syncval 1.3.239 does not see the ordering their waits give"}
        if path.stem == "225-ownership-image-acquire-after-the-release-semaphore" else set())
    assert len(result.agreement.shared) == len(result.findings)
    errors = {m.id_name for m in result.messages if m.severity == "error" and not m.id_name.startswith("SYNC-HAZARD")}
    assert errors == STREAM_LAYOUT_ERRORS.get(path.stem, set())


def storage_stream(format: str, extent: list[int], levels: int, layers: int, binding: dict,
                   read: str = "read") -> dict:
    """An upload of random bytes to every level of image A, then abstract dispatches through storage image
    bindings: `binding` (a subresource range) of A read_write in place, then read (`read`: as a storage image, or
    `sampled`) into Out and written from Out into B's same range (barriers between all of them)."""
    full = {"cmd": "barrier", "src_stage": ["all_commands"], "src_access": ["memory_write"],
            "dst_stage": ["all_commands"], "dst_access": ["memory_read", "memory_write"]}
    return {
        "format": "vkverify-stream/1", "name": f"storage-{format}",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Staging", "size": 8192, "memory": "host_coherent"}, {"id": "Out", "size": 2048}],
        "images": [{"id": i, "extent": extent, "format": format, "mip_levels": levels, "array_layers": layers}
                   for i in ("A", "B")],
        "shaders": {"x": {"bindings": ["read_write"]}, "rw": {"bindings": ["read", "write"]},
                    "sw": {"bindings": [read, "write"]}},
        "command_buffers": {"cb0": [
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "A", "regions": [
                {"buffer_offset": 2048 * level, "mip_level": level, "layer_count": layers,
                 "image_extent": [max(1, d >> level) for d in extent]} for level in range(levels)]},
            full,
            {"cmd": "dispatch", "shader": "x", "bindings": [{"image": "A", **binding}]},
            full,
            {"cmd": "dispatch", "shader": "sw", "bindings": [{"image": "A", **binding, "access": read},
                                                             {"buffer": "Out"}]},
            full,
            {"cmd": "dispatch", "shader": "rw", "bindings": [{"buffer": "Out"}, {"image": "B", **binding}]},
        ]},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 8192,
             "data": {"pattern": "random", "seed": 9}},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
            {"op": "device_wait_idle"}]},
    }


@pytest.mark.parametrize("format, extent, levels, layers, binding", [
    ("r8g8b8a8_unorm", [8, 4], 2, 3, {"base_mip_level": 0, "level_count": 2, "base_array_layer": 1}),
    ("b8g8r8a8_srgb", [5, 3], 2, 2, {"base_mip_level": 1, "base_array_layer": 0, "layer_count": 1}),
    ("r32_uint", [6, 5], 1, 1, {}),
    ("r32_sfloat", [4, 4, 3], 2, 1, {}),
    ("r16g16_sfloat", [7, 2], 1, 2, {"base_array_layer": 1}),
    ("r16g16b16a16_sfloat", [5, 3], 2, 2, {"base_array_layer": 1}),
    ("r32g32b32a32_uint", [4, 2, 3], 2, 1, {}),
    ("bc1_rgba_unorm_block", [12, 8], 2, 2, {"level_count": 2}),
    ("bc7_srgb_block", [10, 6], 2, 1, {"base_mip_level": 1}),
])
@pytest.mark.parametrize("read", ["read", "sampled"])
def test_storage_image_bindings_move_their_subresources_bytes(device_name, format, extent, levels, layers, binding,
                                                              read):
    """A storage image binding's texels are its subresources' bytes in the model's linear layout, level by level
    (docs/format.md): the image kernels read and write them so for any format of 4-, 8- or 16-byte texels (an srgb
    one, which has no storage support of its own, float ones: no conversion; a compressed one's blocks, through a
    view of an uncompressed format, a layer at a time), several levels and layers, a range that starts past level 0
    or layer 0, and a 3D image's slices: the device's A, B and Out equal the simulator's (the uploaded bytes are
    random and every output word hashes every input word, so a texel out of place changes them). A sampled
    binding's texels come so through the sampled kernels (texelFetch on the same view: no filtering, no
    conversion, no decompression)."""
    stream = from_dict(storage_stream(format, extent, levels, layers, binding, read))
    result = runtime.replay(stream, syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference


def test_a_storage_image_binding_without_an_image_kernel_is_refused_saying_where_and_why(device_name):
    """The image kernels move 4-, 8- and 16-byte texels through r32ui, rg32ui and rgba32ui views: a binding of another
    texel size is refused, naming the dispatch, the image and the format."""
    doc = storage_stream("r16_sfloat", [4, 4], 1, 1, {})
    reason = runtime.replayable(from_dict(doc))
    assert reason == ("cb0[2] binds image 'A' as a storage image: r16_sfloat has 2-byte texels: the image kernels "
                      "move 4-, 8- and 16-byte ones")
    with pytest.raises(runtime.Unsupported, match="cb0.2. binds image 'A'"):
        runtime.replay(from_dict(doc))


@settings(max_examples=40, **SETTINGS)
@given(doc=image_streams())
def test_generated_image_streams_replay_with_the_simulator_s_digests(device_name, doc):
    """Streams of tests/differential.py's image_streams (uploads, readbacks, copies, clears, barriers with
    transitions, dispatches binding storage images read, written and read_write, on one queue or two): on Lavapipe,
    which runs one command after another, every digest equals the simulator's, hazards or not.
    benchmarks/replay_generated.py --images runs many more."""
    stream = from_dict(doc)
    assert runtime.replayable(stream) is None
    assert runtime.replay(stream).reference == {}


def volume_stream() -> dict:
    """A 3D image of two levels: an upload with a buffer image height taller than the box (depth slices 4 rows
    apart), and a read of a box at depth offset 1 of level 0 and of all of level 1."""
    return {
        "format": "vkverify-stream/1", "name": "volume",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Staging", "size": 1024, "memory": "host_coherent"}, {"id": "Out", "size": 1024}],
        "images": [{"id": "V", "extent": [4, 3, 3], "format": "r32_uint", "mip_levels": 2}],
        "command_buffers": {"cb0": [
            _barrier("none", "", "copy", "transfer_write",
                     [{"image": "V", "old_layout": "undefined", "new_layout": "transfer_dst_optimal"}]),
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "V", "regions": [
                {"buffer_offset": 0, "buffer_image_height": 4, "mip_level": 0, "image_extent": [4, 3, 3]},
                {"buffer_offset": 512, "mip_level": 1, "image_extent": [2, 1, 1]}]},
            _barrier("copy", "transfer_write", "copy", "transfer_read",
                     [{"image": "V", "old_layout": "transfer_dst_optimal", "new_layout": "transfer_src_optimal"}]),
            {"cmd": "copy_image_to_buffer", "src": "V", "dst": "Out", "regions": [
                {"buffer_offset": 16, "mip_level": 0, "image_offset": [1, 0, 1], "image_extent": [3, 2, 2]},
                {"buffer_offset": 256, "mip_level": 1, "image_extent": [2, 1, 1]}]},
        ]},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 1024, "data": {"pattern": "iota_u32"}},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
            {"op": "device_wait_idle"}]},
    }


def test_a_3d_image_s_slices_replay_with_the_simulator_s_digests(device_name):
    """Depth slices and a second level of a 3D image: the buffer's slices 4 rows apart land 3 rows apart in the
    layout, and the read box at depth 1 comes back from there; equal on Lavapipe, without a validation error."""
    stream = from_dict(volume_stream())
    ref = reference(stream)
    v = np.frombuffer(ref.buffers["V"], np.uint32)
    assert list(v[12:16]) == list(range(16, 20))  # slice 1, row 0: the buffer's words 16..19 (4 rows per slice)
    assert list(v[36:38]) == [128, 129]  # level 1 after level 0's 36 texels
    out = np.frombuffer(ref.buffers["Out"], np.uint32)
    assert list(out[4:7]) == list(v[13:16])  # slice 1, row 0, texels 1..3
    result = runtime.replay(stream, syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference


def test_a_3d_image_with_array_layers_is_refused_at_load():
    doc = volume_stream()
    doc["images"][0]["array_layers"] = 2
    with pytest.raises(InvalidStream, match=r"images\[0\]\.array_layers: a 3D image \(depth 3\) has one array layer"):
        from_dict(doc)


def test_a_uniform_binding_replays_as_a_uniform_read(device_name):
    """Corpus 146's uniform binding is read by the uniform kernel (a uniform buffer), so a barrier to uniform_read
    orders it for the layer as for vkverify: no message; 145's barrier to shader_read leaves vkverify's RAW, which
    the layer (taking shader_read to cover uniform reads) does not report, and says so."""
    fixed = runtime.replay(load(ROOT / "tests" / "corpus" / "146-uniform-read-after-uniform-read-barrier.json"),
                           syncval=True)
    assert (fixed.reference, [m.text for m in fixed.messages if m.severity == "error"]) == ({}, [])
    stream = load(ROOT / "tests" / "corpus" / "145-uniform-read-after-shader-read-barrier.json")
    broken = runtime.replay(stream, syncval=True)
    assert [(f.kind, f.buffer) for f in broken.agreement.only_vkverify] == [("raw", "U")]
    assert runtime.syncval.explain_only_vkverify(stream, broken.agreement.only_vkverify[0]) == (
        "a uniform read: the layer takes shader_read to cover it")


def test_an_indirect_dispatch_of_no_groups_stores_nothing_to_its_image(device_name):
    """The stores run with the dispatch's own group count, an indirect one's read from its buffer (here 0 0 0): A
    keeps its uploaded bytes, as in the simulator, where a store of the generic kernel's untouched scratch words
    would have zeroed them."""
    doc = storage_stream("r32_uint", [6, 5], 1, 1, {})
    doc["buffers"].append({"id": "Args", "size": 16})
    doc["command_buffers"]["cb0"][2:] = [{"cmd": "dispatch_indirect", "shader": "rw", "indirect": {"buffer": "Args"},
                                          "bindings": [{"buffer": "Out"}, {"image": "A"}]}]
    stream = from_dict(doc)
    ref = reference(stream)
    assert ref.buffers["A"][:120] == ref.buffers["Staging"][:120] != bytes(120)
    result = runtime.replay(stream, syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference


def compressed_stream() -> dict:
    """One r32g32_uint texel uploaded to S, copied to block 1 of C (12x4 bc1_rgba_unorm_block: 3 blocks of 8 bytes),
    then a 4x4 box at (8,0) uploaded to C's block 2 from Staging's bytes 16-24."""
    return {
        "format": "vkverify-stream/1", "name": "compressed",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Staging", "size": 64, "memory": "host_coherent"}],
        "images": [{"id": "S", "extent": [1, 1], "format": "r32g32_uint"},
                   {"id": "C", "extent": [12, 4], "format": "bc1_rgba_unorm_block"}],
        "command_buffers": {"cb0": [
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "S", "regions": [{"image_extent": [1, 1]}]},
            _barrier("copy", "transfer_write", "copy", "transfer_read", []),
            {"cmd": "copy_image", "src": "S", "dst": "C", "regions": [{"dst_offset": [4, 0, 0], "extent": [1, 1, 1]}]},
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "C", "regions": [
                {"buffer_offset": 16, "image_offset": [8, 0], "image_extent": [4, 4]}]},
        ]},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 64,
             "data": {"pattern": "random", "seed": 3}},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
            {"op": "device_wait_idle"}]},
    }


def test_a_compressed_image_s_layout_holds_texel_blocks():
    """The simulator moves whole blocks: one source texel is one BC1 block (spec 20.3), and a 4x4 box one block of the
    buffer (20.4); the two copies into C touch different blocks, so the checker finds no race between them."""
    stream = from_dict(compressed_stream())
    assert stream.index.images["C"].memory_view.size == 24
    assert check(stream) == []
    result = reference(stream)
    staging, c = result.buffers["Staging"], result.buffers["C"]
    assert c == bytes(8) + staging[:8] + staging[16:24]


def test_a_compressed_image_replays_and_its_clear_is_refused_at_load(device_name):
    """C's blocks replay as the simulator moves them (zero-filled by a copy, as vkCmdClearColorImage takes no
    compressed format, and read back block by block), with a second level (6x2: two blocks, after level 0's
    three) uploaded too; a clear of C is an error at load."""
    doc = compressed_stream()
    doc["images"][1]["mip_levels"] = 2
    doc["command_buffers"]["cb0"].append({"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "C", "regions": [
        {"buffer_offset": 32, "mip_level": 1, "image_extent": [6, 2]}]})
    stream = from_dict(doc)
    assert reference(stream).buffers["C"][24:] == reference(stream).buffers["Staging"][32:48]
    result = runtime.replay(stream, syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference
    doc = compressed_stream()
    doc["command_buffers"]["cb0"].append({"cmd": "clear_color_image", "image": "C"})
    with pytest.raises(InvalidStream, match="VUID-vkCmdClearColorImage-image-00007"):
        from_dict(doc)


SYNCVAL = sorted((ROOT / "tests" / "syncval").glob("*.json"))
# Streams with a compressed image or a 2d_array_compatible one, and those with a multi-planar image.
FORMAT_STREAMS = [p for p in CORPUS + SYNCVAL if any(i.format in COMPRESSED or i.slices_are_layers
                                                     for i in load(p).images)]
PLANAR_STREAMS = [p for p in CORPUS + SYNCVAL if any(i.format in PLANES for i in load(p).images)]


def test_the_format_streams_are_the_expected_ones():
    assert [p.stem for p in FORMAT_STREAMS] == [
        "NegativeSyncVal.CopyToCompressedImage-1", "NegativeSyncVal.CopyToCompressedImage-2",
        "PositiveSyncVal.CopyBufferToCompressedImage", "PositiveSyncVal.CopyBufferToCompressedImageASTC",
        "PositiveSyncVal.CopyBufferToCompressedImageASTC2", "PositiveSyncVal.CopyBufferToCompressedImageASTC3",
        "PositiveSyncVal.Maintenance9LayerTransitionTestUpdate",
        "PositiveSyncVal.Maintenance9LayerTransitionTestValidation",
        "PositiveSyncVal.Maintenance9TransitionWithMultipleMips"]
    assert len(PLANAR_STREAMS) == 10


def _device_refusal(stream) -> str | None:
    """Why the device cannot hold one of the stream's images (Runtime.format_refusal), or None."""
    with runtime.Runtime() as rt:
        return next(filter(None, (rt.format_refusal(i.format) for i in stream.images)), None)


@pytest.mark.parametrize("path", FORMAT_STREAMS, ids=lambda p: p.stem)
def test_compressed_and_2d_array_compatible_streams_replay_with_the_simulator_s_digests(device_name, path):
    """Compressed images replay where the device has their format (Lavapipe: BC, no ASTC: the replay refuses those
    naming the format and the device, and the test skips with that reason); 2d_array_compatible images with
    barriers over every slice (no VK_KHR_maintenance9). Every digest equals the simulator's, and the layer's
    hazards are vkverify's but for 1.3.239's compressed boxes (COMPRESSED_BOXES)."""
    stream = load(path)
    assert runtime.replayable(stream) is None
    refusal = _device_refusal(stream)
    if refusal is not None:
        with pytest.raises(runtime.Unsupported, match=re.escape(refusal)):
            runtime.replay(stream)
        pytest.skip(refusal)
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    assert result.agreement.only_vkverify == []
    assert {explain_only_layer(stream, lf, result.messages) for lf in result.agreement.only_layer} == (
        {COMPRESSED_BOXES} if path.stem == "PositiveSyncVal.CopyBufferToCompressedImage" else set())
    assert len(result.agreement.shared) == len(result.findings)
    assert [m.text for m in result.messages if m.severity == "error" and not m.id_name.startswith("SYNC-HAZARD")] == []


def test_multi_planar_streams_are_refused_saying_why():
    for path in PLANAR_STREAMS:
        stream = load(path)
        image = next(i for i in stream.images if i.format in PLANES)
        assert runtime.replayable(stream) == (
            f"image {image.id!r} is {image.format}: multi-planar images are not replayed (the runtime's images are "
            "one plane: create_image takes no multi-planar format)")


def test_create_image_refuses_what_it_cannot_hold_naming_the_argument(device_name):
    """A multi-planar format and a 2d_array_compatible 2D image are usage errors naming the argument (and the formats
    it takes); a format the device lacks is Unsupported, naming the format and the device."""
    with runtime.Runtime() as rt:
        with pytest.raises(UsageError, match=r"format: expected one of 'r8_unorm', .*'bc1_rgb_unorm_block', .*"
                                             r"'astc_12x12_srgb_block', got 'g8_b8_r8_3plane_420_unorm'$"):
            rt.create_image("P", (16, 8, 1), "g8_b8_r8_3plane_420_unorm")
        with pytest.raises(UsageError, match="create_flags: 2d_array_compatible is a 3D image's flag"):
            rt.create_image("F", (16, 8, 1), create_flags=["2d_array_compatible"])
        refusal = rt.format_refusal("astc_4x4_unorm_block")
        if refusal is None:
            pytest.skip(f"{rt.device.name} has ASTC")
        assert refusal == f"{rt.device.name} has no transfer_src, transfer_dst, sampled_image support for " \
                          "astc_4x4_unorm_block (optimal tiling)"
        with pytest.raises(runtime.Unsupported, match=re.escape(f"image 'A': {refusal}")):
            rt.create_image("A", (16, 8, 1), "astc_4x4_unorm_block")
        assert "A" not in rt.images


def sliced_stream(last_copy: int | None = None) -> dict:
    """A 2d_array_compatible 8x4x3 image of 2 levels: an upload of both levels, a barrier of level 0's slices 1-2
    (transfer_dst -> transfer_src), a read of those slices into Out, then a barrier of level 1 and a second upload of
    it. `last_copy`: then a global barrier between the copies, a barrier of level 0's slice 0 alone, a transition
    with no destination stage, and a copy into slice `last_copy` of level 0."""
    def barrier(src, src_access, dst, dst_access, image) -> dict:
        return _barrier(src, src_access, dst, dst_access, [{"image": "I", **image}])
    commands = [
        barrier("none", "", "copy", "transfer_write",
                {"old_layout": "undefined", "new_layout": "transfer_dst_optimal"}),
        {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "I", "regions": [
            {"image_extent": [8, 4, 3]}, {"buffer_offset": 1024, "mip_level": 1, "image_extent": [4, 2, 1]}]},
        barrier("copy", "transfer_write", "copy", "transfer_read", {
            "level_count": 1, "base_array_layer": 1, "layer_count": 2, "old_layout": "transfer_dst_optimal",
            "new_layout": "transfer_src_optimal"}),
        {"cmd": "copy_image_to_buffer", "src": "I", "dst": "Out", "regions": [
            {"image_offset": [0, 0, 1], "image_extent": [8, 4, 2]}]},
        barrier("copy", "transfer_write", "copy", "transfer_write", {
            "base_mip_level": 1, "old_layout": "transfer_dst_optimal", "new_layout": "transfer_dst_optimal"}),
        {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "I", "regions": [
            {"buffer_offset": 1536, "mip_level": 1, "image_extent": [4, 2, 1]}]}]
    if last_copy is not None:
        commands += [
            _barrier("copy", "transfer_write", "copy", "transfer_write", []),
            {**barrier("copy", "transfer_write", "none", "", {
                "level_count": 1, "layer_count": 1, "old_layout": "transfer_dst_optimal", "new_layout": "general"}),
             "dst_access": []},
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "I", "regions": [
                {"image_offset": [0, 0, last_copy], "image_extent": [8, 4, 1]}]}]
    return {
        "format": "vkverify-stream/1", "name": f"slices-{last_copy}",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Staging", "size": 2048, "memory": "host_coherent"}, {"id": "Out", "size": 2048}],
        "images": [{"id": "I", "extent": [8, 4, 3], "format": "r32_uint", "mip_levels": 2,
                    "create_flags": ["2d_array_compatible"]}],
        "command_buffers": {"cb0": commands},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 2048,
             "data": {"pattern": "random", "seed": 4}},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
            {"op": "device_wait_idle"}]},
    }


def test_a_2d_array_compatible_image_replays_with_barriers_over_every_slice(device_name):
    """Barriers of some slices and of one level replay over every slice of their levels, in general: the bytes
    (random: I's two levels, and Out's read of slices 1-2) equal the simulator's, with no validation error."""
    stream = from_dict(sliced_stream())
    assert check(stream) == []
    assert np.frombuffer(reference(stream).buffers["Out"], np.uint32)[:64].all()  # slices 1-2: 64 random words
    result = runtime.replay(stream, syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference


def test_a_2d_array_compatible_image_read_back_midway_stays_in_general(device_name):
    """A read back leaves a 2d_array_compatible image in general, where the replay's barriers of it take it to be:
    the stream's command buffer submitted after one runs without a validation error (a read back that left it
    transfer_src_optimal gave five), and the second read back holds its uploads."""
    from vkverify.runtime.create import create_objects, queue_requests

    stream = from_dict(sliced_stream())
    with runtime.Runtime(queue_requests(stream, stream.devices[0]), validation=True) as rt:
        create_objects(stream, {"gpu0": rt})
        assert rt.read_back("I") == bytes(stream.index.images["I"].memory_view.size)
        rt.host_write("Staging", np.arange(512, dtype=np.uint32).tobytes())
        rt.submit("q0", ["cb0"])
        rt.device_idle()
        words = np.frombuffer(rt.read_back("I"), np.uint32)
        assert [m.text for m in rt.instance.messages if m.severity == "error"] == []
    assert list(words[:96]) == list(range(96)) and list(words[96:104]) == list(range(384, 392))


def test_a_transition_of_one_slice_is_replayed_without_it_and_the_comparison_says_so(device_name):
    """A barrier of slice 0 alone with no destination stage: its transition and a later copy into slice 0 are a
    WAW for vkverify, which the replay (no transition: Recorder.image_fields) does not show the layer (the global
    barrier orders the copies), and the comparison names why; a copy into slice 1 meets no transition (syncval's
    Maintenance9LayerTransition tests). The digests are the simulator's either way."""
    racing = from_dict(sliced_stream(last_copy=0))
    [waw] = check(racing)
    assert (waw.kind, waw.buffer, waw.second_access) == ("waw", "I", "copy/transfer_write")
    result = runtime.replay(racing, syncval=True)
    assert [explain_only_vkverify(racing, f) for f in result.agreement.only_vkverify] == [SLICES_WIDENED]
    assert (result.reference, result.agreement.only_layer) == ({}, [])
    apart = from_dict(sliced_stream(last_copy=1))
    assert check(apart) == []
    result = runtime.replay(apart, syncval=True)
    assert (result.reference, result.findings, result.agreement.only_layer) == ({}, [], [])


def blit_stream(filter: str = "nearest") -> dict:
    """Upload 8x8 texels to both layers of A, then blit: layer 0 whole to B's left half mirrored in x and y (scale 1),
    layer 1 whole down to a 4x4 box of B's right half (2:1), and A's 2x2 corner of layer 0 up to a 4x4 box below it."""
    def region(src_layer: int, src: list, dst: list) -> dict:
        return {"src_base_array_layer": src_layer, "layer_count": 1, "src_offsets": src, "dst_offsets": dst}
    return {
        "format": "vkverify-stream/1", "name": f"blit-{filter}",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Staging", "size": 512, "memory": "host_coherent"}],
        "images": [{"id": "A", "extent": [8, 8], "array_layers": 2}, {"id": "B", "extent": [16, 8]}],
        "command_buffers": {"cb0": [
            _barrier("none", "", "copy", "transfer_write",
                     [{"image": "A", "old_layout": "undefined", "new_layout": "transfer_dst_optimal"}]),
            {"cmd": "copy_buffer_to_image", "src": "Staging", "dst": "A", "regions": [
                {"layer_count": 2, "image_extent": [8, 8]}]},
            _barrier("copy", "transfer_write", "blit", "transfer_read",
                     [{"image": "A", "old_layout": "transfer_dst_optimal", "new_layout": "transfer_src_optimal"},
                      {"image": "B", "old_layout": "undefined", "new_layout": "transfer_dst_optimal",
                       "src_stage": ["none"], "src_access": [], "dst_access": ["transfer_write"]}]),
            {"cmd": "blit_image", "src": "A", "dst": "B", "filter": filter, "regions": [
                region(0, [[0, 0, 0], [8, 8, 1]], [[8, 8, 0], [0, 0, 1]]),
                region(1, [[0, 0, 0], [8, 8, 1]], [[8, 0, 0], [12, 4, 1]]),
                region(0, [[0, 0, 0], [2, 2, 1]], [[8, 4, 0], [12, 8, 1]])]},
        ]},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 512,
             "data": {"pattern": "random", "seed": 9}},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
            {"op": "device_wait_idle"}]},
    }


def test_the_simulator_blits_each_destination_texel_from_the_nearest_source_texel():
    """B's left half is A's layer 0 turned half a circle, its top right A's layer 1 at every other texel (the texel
    each 2x2 block's center maps to: the block's lower right one), its bottom right A's corner each texel doubled."""
    result = reference(from_dict(blit_stream()))
    a = np.frombuffer(result.buffers["A"], np.uint8).reshape(2, 8, 8, 4)
    b = np.frombuffer(result.buffers["B"], np.uint8).reshape(8, 16, 4)
    assert (b[:, :8] == a[0, ::-1, ::-1]).all()
    assert (b[:4, 8:12] == a[1, 1::2, 1::2]).all()
    assert (b[4:, 8:12] == a[0, :2, :2].repeat(2, 0).repeat(2, 1)).all()
    assert not b[:, 12:].any()


def test_a_blit_replays_with_the_simulator_s_digests(device_name):
    stream = from_dict(blit_stream())
    assert check(stream) == []
    result = runtime.replay(stream, syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference


def test_a_linear_blit_is_refused_by_the_simulator_saying_why():
    with pytest.raises(InvalidStream, match=r"cb0\[3\]: the simulator blits with the nearest filter, not 'linear'"):
        reference(from_dict(blit_stream("linear")))


def test_a_sampled_binding_on_a_buffer_is_refused_at_load():
    """`sampled` on a buffer (a uniform texel buffer) is not in the format; on an image it replays (corpus 223)."""
    doc = json.loads(next(p for p in CORPUS if p.name.startswith("223-")).read_text())
    doc["command_buffers"]["cb0"][2]["bindings"][1]["access"] = "sampled"
    doc["shaders"]["transform"]["bindings"][1] = "sampled"
    with pytest.raises(InvalidStream, match="a sampled binding is an image's"):
        from_dict(doc)


def test_a_2d_array_compatible_3d_image_s_barrier_layers_are_its_slices():
    """On a 16x16x2 image of 3 levels, layer 1 of a barrier is level 0's second slice, bytes [1024, 2048);
    left out, the layers are every slice of every level; the flag on a 2D image is an error at load."""
    doc = json.loads((ROOT / "tests" / "syncval" / "PositiveSyncVal.Maintenance9TransitionWithMultipleMips.json")
                     .read_text())
    [barrier] = from_dict(doc).command_buffers[0].commands
    assert barrier.images[0].ranges == ((0, 2048 + 256 + 64),)  # level 0: 16x16x2, 1: 8x8x1, 2: 4x4x1
    doc["command_buffers"]["cb0"][0]["images"][0].update(level_count=1, base_array_layer=1, layer_count=1)
    stream = from_dict(doc)
    assert stream.command_buffers[0].commands[0].images[0].ranges == ((1024, 2048),)
    # A subset of slices is of the base level's (level 1 of 16x16x2 has one, of 16x16x4 two), and of one level
    # (maintenance9's VUIDs).
    for depth, wrong, vuid in ((2, {"base_mip_level": 1}, "10798"),
                               (4, {"base_mip_level": 1, "base_array_layer": 0, "layer_count": 3}, "10800"),
                               (2, {"base_array_layer": 0, "level_count": 2}, "10799")):
        bad = json.loads(json.dumps(doc))
        bad["images"][0]["extent"][2] = depth
        bad["command_buffers"]["cb0"][0]["images"][0].update(wrong)
        with pytest.raises(InvalidStream, match=f"maintenance9-{vuid}"):
            from_dict(bad)
    doc["images"][0]["extent"] = [16, 16]
    with pytest.raises(InvalidStream, match="VUID-VkImageCreateInfo-flags-00950"):
        from_dict(doc)


def test_a_multi_planar_image_s_planes_lie_one_after_the_other():
    """16x8 g8_b8_r8_3plane_420_unorm: plane 0 is 128 bytes, planes 1 and 2 8x4 (32 bytes each). A copy of a box of A's
    plane 0 to B's plane 2 writes the box's rows of plane 2 (from byte 160, 8 a row); the replay refuses the image,
    and a clear of it is an error at load."""
    doc = compressed_stream()
    doc["images"] = [{"id": n, "extent": [16, 8], "format": "g8_b8_r8_3plane_420_unorm"} for n in "AB"]
    doc["command_buffers"]["cb0"] = [
        {"cmd": "clear_color_image", "image": "A"},
        _barrier("copy", "transfer_write", "copy", "transfer_read", []),
        {"cmd": "copy_image", "src": "A", "dst": "B", "regions": [
            {"src_offset": [2, 0], "dst_plane": 2, "dst_offset": [4, 1], "extent": [4, 3]}]}]
    with pytest.raises(InvalidStream, match="'A' is multi-planar"):
        from_dict(doc)
    doc["command_buffers"]["cb0"][0] = {"cmd": "copy_image", "src": "C", "dst": "A", "regions": [{"extent": [16, 8]}]}
    doc["images"].append({"id": "C", "extent": [16, 8], "format": "r8_unorm", "memory": "host_coherent"})
    stream = from_dict(doc)
    assert stream.index.images["A"].memory_view.size == 128 + 32 + 32
    assert stream.command_buffers[0].commands[2].dst_ranges == tuple((160 + 8 * y + 4, 160 + 8 * y + 8)
                                                                       for y in (1, 2, 3))
    assert runtime.replayable(stream) == ("image 'A' is g8_b8_r8_3plane_420_unorm: multi-planar images are not "
                                          "replayed (the runtime's images are one plane: create_image takes no "
                                          "multi-planar format)")



def test_an_image_ownership_transfer_replays_with_the_simulator_s_digests(device_name):
    """PositiveSyncVal.QueueFamilyOwnershipTransfer's release on family 1 and acquire on family 0, both transitioning
    the image (7.7.4: the transition runs once): the replay records both barriers (as ignored families where the
    device has one family for both), every digest equals the simulator's, and the layer reports nothing, as vkverify."""
    stream = load(ROOT / "tests" / "syncval" / "PositiveSyncVal.QueueFamilyOwnershipTransfer.json")
    assert runtime.replayable(stream) is None
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    assert result.findings == [] and result.agreement.only_layer == [] and result.agreement.shared == []


def test_an_image_made_with_the_alias_flag_replays_with_the_simulator_s_digests(device_name):
    """NegativeSyncVal.CopyOptimalImageHazards makes its images with VK_IMAGE_CREATE_ALIAS_BIT, each bound to memory
    of its own (no `alias_of`): the runtime takes the flag (create_image refused it, and the port was not replayed),
    the recorded stream declares it, every digest equals the simulator's and the layer reports the WAR vkverify does."""
    stream = load(ROOT / "tests" / "syncval" / "NegativeSyncVal.CopyOptimalImageHazards-1.json")
    assert any(i.create_flags == {"alias"} and i.alias_of is None for i in stream.images)
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    assert {i.id for i in result.recorded.images if "alias" in i.create_flags} == \
        {i.id for i in stream.images if "alias" in i.create_flags}
    assert [(f.kind, f.first, f.second) for f, _ in result.agreement.shared] == [("war", "cb0[3]", "cb0[4]")]
    assert result.agreement.only_layer == []
