"""The image features the syncval port added (docs/format.md, images). Depth/stencil images: their aspects lie one
after the other in the layout, a range's or a copy region's `aspects` name which, vkCmdClearDepthStencilImage writes
each aspect's bytes. Multisampled images and their resolves, images aliasing one memory. The loader refuses what
Vulkan does (the corpus, 224-231, and tests/syncval judge the hazards)."""

from __future__ import annotations

import numpy as np
import pytest

from vkverify.check import check
from vkverify.model import InvalidStream, from_dict
from vkverify.model.dump import to_dict
from vkverify.model.images import clear_depth_stencil_texel
from vkverify.sim.execute import resolve
from vkverify.sim.machine import Machine
from vkverify.sim.simulate import reference


def _stream(commands: list[dict], fmt: str = "d24_unorm_s8_uint") -> dict:
    """D and E, 4x2 images of `fmt`, and color image C, with `commands` in cb0 on q0."""
    return {"format": "vkverify-stream/1", "name": "ds",
            "images": [{"id": "D", "extent": [4, 2], "format": fmt}, {"id": "E", "extent": [4, 2], "format": fmt},
                       {"id": "C", "extent": [4, 2], "format": "r8g8b8a8_unorm"}],
            "command_buffers": {"cb0": commands},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
                                 {"op": "device_wait_idle"}]}}


BARRIER = {"cmd": "barrier", "src_stage": ["transfer"], "src_access": ["transfer_write"], "dst_stage": ["transfer"],
           "dst_access": ["transfer_read", "transfer_write"]}


def test_the_aspects_lie_one_after_the_other_and_a_clear_writes_each_one_s_bytes():
    """4x2 d24_unorm_s8_uint: depth 4 bytes a texel (X8_D24_UNORM_PACK32 in copies), bytes [0, 32); stencil 1 byte a
    texel, [32, 40). A clear of the stencil aspect writes [32, 40) alone; a copy of both aspects copies both."""
    stream = from_dict(_stream([
        {"cmd": "clear_depth_stencil_image", "image": "D", "depth": 1.0, "stencil": 0x107},
        {"cmd": "clear_depth_stencil_image", "image": "E", "ranges": [{"aspects": ["stencil"]}], "stencil": 9}, BARRIER,
        {"cmd": "copy_image", "src": "D", "dst": "E",
         "regions": [{"aspects": ["depth"], "src_offset": [2, 0], "dst_offset": [2, 0], "extent": [2, 2]}]}]))
    d = stream.index.images["D"]
    assert d.aspects == ("depth", "stencil") and d.memory_view.size == 40
    clear_d, clear_e, _, copy = stream.command_buffers[0].commands
    assert clear_d.ranges == ((0, 40),) and clear_e.ranges == ((32, 40),)
    assert copy.dst_ranges == ((8, 16), (24, 32))  # rows of the depth box: texels 2 and 3 of each row
    result = reference(stream)
    image_d, image_e = (np.frombuffer(result.buffers[i], np.uint8) for i in "DE")
    assert (image_d[:32].view(np.uint32) == 0xFFFFFF).all() and (image_d[32:] == 7).all()
    assert (image_e[32:] == 9).all()
    depth_e = image_e[:32].view(np.uint32).reshape(2, 4)
    assert (depth_e[:, 2:] == 0xFFFFFF).all() and not depth_e[:, :2].any()


def test_depth_values_are_stored_as_copies_read_them():
    assert clear_depth_stencil_texel("d16_unorm_s8_uint", "depth", 0.5, 0) == (32768).to_bytes(2, "little")
    assert clear_depth_stencil_texel("d24_unorm_s8_uint", "depth", 2.0, 0) == (0xFFFFFF).to_bytes(4, "little")
    assert clear_depth_stencil_texel("d32_sfloat_s8_uint", "depth", 0.25, 0) == np.float32(0.25).tobytes()
    assert clear_depth_stencil_texel("s8_uint", "stencil", 0.0, 0x1FF) == b"\xff"


def test_aspects_the_barrier_leaves_out_are_not_made_visible():
    """A clear of both aspects, a barrier of the stencil aspect, a copy of the depth: a raw on the depth bytes alone;
    of both aspects, none (corpus 226-227 in the other direction)."""
    def stream(aspects):
        barrier = {**BARRIER, "images": [{"image": "D", "aspects": aspects}]}
        return from_dict(_stream([{"cmd": "clear_depth_stencil_image", "image": "D"}, barrier,
                                  {"cmd": "copy_image", "src": "D", "dst": "E",
                                   "regions": [{"aspects": ["depth", "stencil"], "extent": [4, 2]}]}]))
    [raw] = check(stream(["stencil"]))
    assert (raw.kind, raw.first, raw.second, raw.range) == ("raw", "cb0[0]", "cb0[2]", (0, 32))
    assert not check(stream(["depth", "stencil"]))


def test_a_depth_stencil_stream_round_trips_through_its_dump():
    stream = from_dict(_stream([
        {"cmd": "clear_depth_stencil_image", "image": "D", "ranges": [{"aspects": ["stencil"]}], "depth": 0.5},
        {**BARRIER, "images": [{"image": "D", "aspects": ["depth"]}]},
        {"cmd": "copy_image", "src": "D", "dst": "E",
         "regions": [{"aspects": ["depth", "stencil"], "extent": [4, 2]}]}]))
    again = from_dict(to_dict(stream))
    assert again.command_buffers == stream.command_buffers and len(again.command_buffers[0].commands[2].regions) == 2


@pytest.mark.parametrize(("command", "message"), [
    ({"cmd": "clear_color_image", "image": "D"}, "'D' is a depth/stencil image"),
    ({"cmd": "clear_depth_stencil_image", "image": "C"}, "VUID-vkCmdClearDepthStencilImage-image-00014"),
    ({"cmd": "clear_depth_stencil_image", "image": "D", "ranges": [{"aspects": ["color"]}]},
     "has the aspects depth, stencil, not color"),
    ({"cmd": "copy_image", "src": "D", "dst": "C", "regions": [{"aspects": ["depth"], "extent": [4, 2]}]},
     "'depth' is not an aspect of both"),
    ({"cmd": "copy_image", "src": "D", "dst": "E", "regions": [{"aspects": ["depth"], "src_plane": 1,
                                                                 "extent": [4, 2]}]}, "not both"),
    ({"cmd": "copy_image_to_buffer", "src": "D", "dst": "B", "regions": [{"image_extent": [4, 2]}]},
     "only copy_image, clear_depth_stencil_image and barriers take it"),
])
def test_what_vulkan_refuses_of_a_depth_stencil_image_is_an_error_at_load(command, message):
    doc = _stream([command])
    doc["buffers"] = [{"id": "B", "size": 64}]
    with pytest.raises(InvalidStream, match=message):
        from_dict(doc)


def test_the_replay_refuses_a_depth_stencil_image():
    runtime = pytest.importorskip("vkverify.runtime")
    stream = from_dict(_stream([{"cmd": "clear_depth_stencil_image", "image": "D"}]))
    assert runtime.replayable(stream) == ("image 'D' is d24_unorm_s8_uint: depth/stencil images are not replayed (the "
                                          "runtime creates, uploads and reads back color images only)")


def _resolve_stream(**m) -> dict:
    """M, a 4x2 image of 2 samples (or as `m` says), resolved into R; C and its alias C2."""
    image = {"extent": [4, 2], "format": "r8g8b8a8_unorm"}
    return {"format": "vkverify-stream/1", "name": "resolve",
            "images": [{"id": "M", **image, "samples": 2, "memory": "host_coherent", **m}, {"id": "R", **image},
                       {"id": "C", **image, "create_flags": ["alias"]},
                       {"id": "C2", **image, "create_flags": ["alias"], "alias_of": "C"}],
            "command_buffers": {"cb0": [{"cmd": "resolve_image", "src": "M", "dst": "R", "regions": [
                {"src_offset": [1, 0], "dst_offset": [1, 1], "extent": [2, 1]}]}]},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
                                 {"op": "device_wait_idle"}]}}


def test_a_texel_s_samples_lie_together_and_a_resolve_reads_them_all():
    """M's texels are 8 bytes (2 samples of 4): the resolve reads texels 1 and 2 of row 0, bytes [8, 24), and
    writes R's texels 1 and 2 of row 1, bytes [20, 28), each its sample 0 in the simulator. C2 is C's memory: one
    root, the same bytes."""
    stream = from_dict(_resolve_stream())
    assert stream.index.images["M"].memory_view.size == 64
    [resolve_op] = stream.command_buffers[0].commands
    assert (resolve_op.src_ranges, resolve_op.dst_ranges) == (((8, 24),), ((20, 28),))
    assert stream.index.root("C2") == ("C", 0)
    machine = Machine(stream)
    machine.memory["M"][:] = np.arange(64, dtype=np.uint8)  # texel t's two samples: bytes 8t .. 8t+7
    resolve(machine, "cb0[0]", resolve_op)
    r = machine.memory["R"].reshape(2, 4, 4)
    # Sample 0 (the first 4 bytes) of texels 1 and 2 of row 0, in texels 1 and 2 of row 1; nothing else written.
    assert (r[1, 1:3] == np.arange(64, dtype=np.uint8).reshape(2, 4, 2, 4)[0, 1:3, 0]).all()
    assert not r[0].any() and not r[1, [0, 3]].any()
    assert reference(stream).buffers["R"]  # the simulator runs a stream with a resolve


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["images"][0].update(samples=1), "VUID-vkCmdResolveImage-srcImage-00257"),
    (lambda d: d["images"][1].update(format="r8g8b8a8_uint"), "-srcImage-01386"),
    (lambda d: d["command_buffers"]["cb0"].append({"cmd": "copy_image", "src": "M", "dst": "R",
                                                    "regions": [{"extent": [1, 1]}]}),
     "VUID-vkCmdCopyImage-srcImage-00136"),
    (lambda d: d["command_buffers"]["cb0"].append({"cmd": "blit_image", "src": "M", "dst": "R", "regions": [
        {"src_offsets": [[0, 0, 0], [1, 1, 1]], "dst_offsets": [[0, 0, 0], [1, 1, 1]]}]}),
     "'M' has 2 samples: only copy_image, resolve_image"),
    (lambda d: d["images"][3].update(extent=[4, 4]), "their creation parameters must be identical"),
    (lambda d: d["images"][3].update(create_flags=[]), "with create flag `alias`"),
    (lambda d: d["images"][3].update(alias_of="C2"), "'C2' is not an image of this stream that aliases none"),
])
def test_what_vulkan_refuses_of_multisampled_and_aliased_images_is_an_error_at_load(change, message):
    doc = _resolve_stream()
    change(doc)
    with pytest.raises(InvalidStream, match=message):
        from_dict(doc)


def test_the_replay_refuses_aliased_and_multisampled_images():
    runtime = pytest.importorskip("vkverify.runtime")
    doc = _resolve_stream()
    assert runtime.replayable(from_dict(doc)) == ("image 'C2' aliases 'C': aliased images are not replayed (the "
                                                  "runtime binds each image to memory of its own)")
    del doc["images"][2:]
    assert runtime.replayable(from_dict(doc)) == ("image 'M' has 2 samples: multisampled images are not replayed (the "
                                                  "runtime uploads and reads back single-sampled images)")
