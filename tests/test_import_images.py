"""Images through a capture (issue 25): a program of images (an upload from a buffer, layout transitions by pipeline
barriers and by an event's dependency, copies back to a buffer and between images, clears), replayed on Lavapipe
under the GFXReconstruct capture layer, imports with each image as the program declared it (its debug name its id),
each image command and image barrier as the program's and vkDestroyImage as its destroy (importer/images.py); the
imported stream has the original's findings (a clear racing a copy into the same image, where a barrier is
missing) and replays with its digests, the images' among them. The comparison is tests/test_import_roundtrip.py's.
A program of storage images written with the `vulkan` package (tests/storage_image_program.py), captured on
Lavapipe, imports with its dispatch's bindings as the shader's SPIR-V says (replay has no image load/store kernels:
it is checked, not replayed); what the format cannot hold is refused, and said, in a JSON-lines capture."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from vkverify.check import check
from vkverify.importer import capture_env, import_capture
from vkverify.model import from_dict, ir
from vkverify.model.refs import parse_ref, without_submit

from .conftest import ROOT, python_path, require_gfxreconstruct

from .test_import_roundtrip import round_trips, whole_findings
from .test_replay_images import _barrier, image_stream

runtime = pytest.importorskip("vkverify.runtime")


def program(barrier: bool) -> dict:
    """image_stream's upload, transitions, copies and clear, then B cleared after the copy into it (after a
    barrier from that copy: `barrier`), made transfer_src_optimal by an event's dependency, and copied to Out; A
    destroyed after the device's idle wait."""
    doc = image_stream()
    doc["name"] = "images-" + ("ordered" if barrier else "racing")
    doc["events"] = [{"id": "E"}]
    cb = doc["command_buffers"]["cb0"]
    if barrier:
        cb.append(_barrier("copy", "transfer_write", "clear", "transfer_write", [
            {"image": "B", "old_layout": "transfer_dst_optimal", "new_layout": "transfer_dst_optimal"}]))
    cb.append({"cmd": "clear_color_image", "image": "B", "ranges": [{}], "value": [0.5, 0.25, 0.0, 1.0]})
    to_copy = {"src_stage": ["clear"], "src_access": ["transfer_write"], "dst_stage": ["copy"],
               "dst_access": ["transfer_read"],
               "images": [{"image": "B", "old_layout": "transfer_dst_optimal", "new_layout": "transfer_src_optimal"}]}
    cb += [{"cmd": "set_event", "event": "E", **to_copy}, {"cmd": "wait_events", "events": ["E"], **to_copy},
           {"cmd": "copy_image_to_buffer", "src": "B", "dst": "Out", "regions": [
               {"buffer_offset": 1024, "image_extent": [6, 5]}]}]
    doc["threads"]["main"].append({"op": "destroy", "buffer": "A"})
    return doc


STREAMS = {"ordered": program(barrier=True), "racing": program(barrier=False)}


@pytest.fixture(scope="module")
def trips(tmp_path_factory, device_name):
    return round_trips(tmp_path_factory, STREAMS)


def _region_commands(stream: ir.Stream) -> dict[str, ir.Command]:
    """The program's commands the import holds, by the program's reference (their labels' debug label region)."""
    return {c.label.rpartition(": ")[0]: c for cb in stream.command_buffers for c in cb.commands
            if c.label and ": " in c.label}


def _untagged(c):
    return dataclasses.replace(c, id=None, label=None)


def _entries(images: tuple[ir.ImageBarrier, ...]) -> list[ir.ImageBarrier]:
    """Image barriers with no access named as none (the import names VK_ACCESS_2_NONE)."""
    return [dataclasses.replace(b, src_access=b.src_access - {"none"}, dst_access=b.dst_access - {"none"})
            for b in images]


@pytest.mark.parametrize("name", STREAMS)
def test_imported_images_have_the_original_findings(trips, name):
    # The runtime's zero clear of each fresh image (fenced, before the stream's work) is ordered before the
    # stream's first transition of it: a transition is in the all_commands scopes of the fence and the submit.
    original = whole_findings(trips, name)
    if name == "racing":  # the clear of B races the copy into B's box (rows 3 and 4, texels 2-5: bytes 80-120)
        # and the transition before it (the rest of B: the one barrier before both orders only the copy)
        assert original == {("waw", "B", (0, 104), "cb0[6]", "cb0[8]"), ("waw", "B", (80, 120), "cb0[7]", "cb0[8]")}
    else:
        assert original == set()


@pytest.mark.parametrize("name", STREAMS)
def test_images_and_image_commands_import_as_the_program_s(trips, name):
    """The images as declared (ids from their debug names, extent, format, levels, layers, memory, sharing); each
    copy and clear equal to the program's, each image barrier's entries too (stages, accesses, subresources,
    layouts), whether recorded by vkCmdPipelineBarrier2 or as the event's dependency (vkCmdSetEvent2 /
    vkCmdWaitEvents2)."""
    trip, _ = trips[name]
    assert trip.imported.images == trip.original.images
    imported = _region_commands(trip.imported)
    original = dict(zip((f"cb0[{i}]" for i in range(99)), trip.original.command_buffers[0].commands))
    assert imported.keys() == original.keys()
    for ref, c in original.items():
        got = imported[ref]
        if isinstance(c, ir.Barrier):
            assert _entries(got.images) == _entries(c.images), ref
        elif isinstance(c, ir.SetEvent):
            assert _entries(got.dependency.images) == _entries(c.dependency.images)
        elif isinstance(c, ir.WaitEvents):
            assert [_entries(d.images) for d in got.dependencies] == [_entries(d.images) for d in c.dependencies]
        else:
            assert _untagged(got) == _untagged(c), ref
    kinds = {type(c).__name__ for c in imported.values()}
    assert {"CopyBufferToImage", "CopyImageToBuffer", "CopyImage", "ClearColorImage"} <= kinds
    destroys = [op for t in trip.imported.threads for op in t.ops if isinstance(op, ir.Destroy)]
    assert [(op.buffer, op.label.partition(" #")[0]) for op in destroys] == [("A", "vkDestroyImage")]


@pytest.mark.parametrize("name", STREAMS)
def test_imported_images_replay_with_the_original_digests(trips, name):
    trip, _ = trips[name]
    digests = runtime.replay(trip.imported).digests
    assert {"B", "Out"} <= trip.digests.keys() and "A" not in trip.digests  # A is destroyed
    assert {b: digests.get(b) for b in trip.digests} == trip.digests


REMAINING = 2**32 - 1


def _image(handle: int, format: str = "VK_FORMAT_R32_UINT", samples: str = "VK_SAMPLE_COUNT_1_BIT",
           depth: int = 1, layers: int = 2) -> tuple[str, dict]:
    return "vkCreateImage", {"device": 2, "pImage": handle, "pCreateInfo": {
        "flags": 0, "imageType": "VK_IMAGE_TYPE_3D" if depth > 1 else "VK_IMAGE_TYPE_2D", "format": format,
        "extent": {"width": 4, "height": 4, "depth": depth}, "mipLevels": 3, "arrayLayers": layers,
        "samples": samples, "tiling": "VK_IMAGE_TILING_OPTIMAL", "usage": 0xB,
        "sharingMode": "VK_SHARING_MODE_EXCLUSIVE"}}


def _view(handle: int, image: int, aspect: int = 1, kind: str = "VK_IMAGE_VIEW_TYPE_2D_ARRAY") -> tuple[str, dict]:
    return "vkCreateImageView", {"device": 2, "pView": handle, "pCreateInfo": {
        "image": image, "viewType": kind, "subresourceRange": {
            "aspectMask": aspect, "baseMipLevel": 1, "levelCount": REMAINING, "baseArrayLayer": 1,
            "layerCount": 1}}}


def _calls() -> list[tuple[str, dict]]:
    """Images 20 (depth), 22 (4 samples) and 23 (3D) with 21 (r32_uint, 3 levels, 2 layers), each bound to memory of
    its own; 24 never bound; buffers 70 and 71 in 21's memory, 71 over 21's bytes (its requirements' size). Storage
    views of 21 (levels 1-2 of layer 1), of its stencil aspect, and a 2D array of 23's slices, the first as a
    combined image sampler too, and 20's depth aspect as a sampled image. Recorded: a depth clear of 20, a color
    clear of 22 and of 24, a copy of 20 to buffer 70 and of 22 to 21, a blit of 21, a transition of 21 to an
    attachment layout (sync1) and of 20 (sync2), a clear of 21, a dispatch (no SPIR-V) with the five descriptors
    bound, then vkCmdCopyBufferToImage2 and vkCmdCopyImage2 into 21."""
    whole = {"aspectMask": 1, "baseMipLevel": 0, "levelCount": REMAINING, "baseArrayLayer": 0, "layerCount": 1}
    images = [_image(20, "VK_FORMAT_D32_SFLOAT"), _image(21), _image(22, samples="VK_SAMPLE_COUNT_4_BIT"),
              _image(23, depth=4, layers=1), _image(24)]
    memory = [call for h in (20, 21, 22, 23) for call in (
        ("vkAllocateMemory", {"device": 2, "pMemory": h + 100, "pAllocateInfo": {
            "allocationSize": 4096, "memoryTypeIndex": 0, "pNext": None}}),
        ("vkBindImageMemory", {"device": 2, "image": h, "memory": h + 100, "memoryOffset": 0}))]
    memory += [("vkGetImageMemoryRequirements", {"device": 2, "image": 21, "pMemoryRequirements": {"size": 512}}),
               *(("vkCreateBuffer", {"device": 2, "pBuffer": b, "pCreateInfo": {
                   "size": 256, "usage": 2, "sharingMode": "VK_SHARING_MODE_EXCLUSIVE"}}) for b in (70, 71)),
               ("vkBindBufferMemory", {"device": 2, "buffer": 70, "memory": 121, "memoryOffset": 1024}),
               ("vkBindBufferMemory", {"device": 2, "buffer": 71, "memory": 121, "memoryOffset": 256})]
    storage = {"descriptorType": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE", "descriptorCount": 1}
    descriptors = [
        _view(40, 21), _view(41, 21, aspect=4), _view(42, 23), _view(43, 20, aspect=2),
        ("vkCreateDescriptorSetLayout", {"pSetLayout": 50, "pCreateInfo": {"pBindings": [
            *({"binding": b, **storage} for b in range(3)),
            {"binding": 3, "descriptorType": "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER", "descriptorCount": 1},
            {"binding": 4, "descriptorType": "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", "descriptorCount": 1}]}}),
        ("vkAllocateDescriptorSets", {"pAllocateInfo": {"descriptorPool": 51, "pSetLayouts": [50]},
                                      "pDescriptorSets": [52]}),
        ("vkUpdateDescriptorSets", {"pDescriptorCopies": None, "pDescriptorWrites": [
            {"dstSet": 52, "dstBinding": b, "dstArrayElement": 0, "descriptorType": kind,
             "pImageInfo": [{"sampler": 0, "imageView": v, "imageLayout": "VK_IMAGE_LAYOUT_GENERAL"}]}
            for b, (v, kind) in enumerate(((40, storage["descriptorType"]), (41, storage["descriptorType"]),
                                           (42, storage["descriptorType"]),
                                           (40, "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER"),
                                           (43, "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE")))]}),
        ("vkCreateComputePipelines", {"pPipelines": [60], "pCreateInfos": [
            {"stage": {"module": 61, "pName": "main", "pSpecializationInfo": None}}]})]
    transition = {"sType": "VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER", "srcAccessMask": 0, "dstAccessMask": 0,
                  "oldLayout": "VK_IMAGE_LAYOUT_GENERAL", "newLayout": "VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL",
                  "srcQueueFamilyIndex": REMAINING, "dstQueueFamilyIndex": REMAINING, "image": 21,
                  "subresourceRange": whole}
    color = {"float32": [0.5, 0, 0, 0], "int32": [7, 0, 0, 0], "uint32": [7, 0, 0, 0]}
    layers = {"aspectMask": 1, "mipLevel": 0, "baseArrayLayer": 0, "layerCount": 1}
    origin, box = {"x": 0, "y": 0, "z": 0}, {"width": 4, "height": 4, "depth": 1}
    depth_barrier = {"srcStageMask": "VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT", "srcAccessMask": "VK_ACCESS_2_NONE",
                     "dstStageMask": "VK_PIPELINE_STAGE_2_COPY_BIT", "dstAccessMask": "VK_ACCESS_2_NONE",
                     **{k: v for k, v in transition.items() if k not in ("srcAccessMask", "dstAccessMask")},
                     "image": 20}
    commands = [("vkBeginCommandBuffer", {"commandBuffer": 30}),
                ("vkCmdClearDepthStencilImage", {"commandBuffer": 30, "image": 20}),
                ("vkCmdClearColorImage", {"commandBuffer": 30, "image": 22, "pColor": color, "pRanges": [whole]}),
                ("vkCmdClearColorImage", {"commandBuffer": 30, "image": 24, "pColor": color, "pRanges": [whole]}),
                ("vkCmdCopyImageToBuffer", {"commandBuffer": 30, "srcImage": 20, "dstBuffer": 70, "pRegions": [
                    {"bufferOffset": 0, "bufferRowLength": 0, "bufferImageHeight": 0, "imageSubresource": layers,
                     "imageOffset": origin, "imageExtent": box}]}),
                ("vkCmdCopyImage", {"commandBuffer": 30, "srcImage": 22, "dstImage": 21, "pRegions": [
                    {"srcSubresource": layers, "srcOffset": origin, "dstSubresource": layers, "dstOffset": origin,
                     "extent": box}]}),
                ("vkCmdBlitImage", {"commandBuffer": 30, "srcImage": 21, "dstImage": 21,
                                    "filter": "VK_FILTER_CUBIC_EXT", "pRegions": []}),
                ("vkCmdPipelineBarrier", {"commandBuffer": 30, "srcStageMask": 0x1000, "dstStageMask": 0x1000,
                                          "pMemoryBarriers": None, "pBufferMemoryBarriers": None,
                                          "pImageMemoryBarriers": [transition]}),
                ("vkCmdPipelineBarrier2", {"commandBuffer": 30, "pDependencyInfo": {
                    "pMemoryBarriers": None, "pBufferMemoryBarriers": None, "pImageMemoryBarriers": [depth_barrier]}}),
                ("vkCmdClearColorImage", {"commandBuffer": 30, "image": 21, "pColor": color, "pRanges": [whole]}),
                ("vkCmdBindPipeline", {"commandBuffer": 30, "pipelineBindPoint": "VK_PIPELINE_BIND_POINT_COMPUTE",
                                       "pipeline": 60}),
                ("vkCmdBindDescriptorSets", {"commandBuffer": 30, "pipelineBindPoint": "VK_PIPELINE_BIND_POINT_COMPUTE",
                                             "firstSet": 0, "pDescriptorSets": [52], "pDynamicOffsets": None}),
                ("vkCmdDispatch", {"commandBuffer": 30, "groupCountX": 1, "groupCountY": 1, "groupCountZ": 1}),
                ("vkCmdCopyBufferToImage2", {"commandBuffer": 30, "pCopyBufferToImageInfo": {
                    "srcBuffer": 70, "dstImage": 21, "pRegions": [
                        {"bufferOffset": 64, "bufferRowLength": 8, "bufferImageHeight": 0,
                         "imageSubresource": {**layers, "baseArrayLayer": 1}, "imageOffset": {"x": 1, "y": 0, "z": 0},
                         "imageExtent": {"width": 2, "height": 2, "depth": 1}}]}}),
                ("vkCmdCopyImage2", {"commandBuffer": 30, "pCopyImageInfo": {"srcImage": 21, "dstImage": 21,
                                                                             "pRegions": [
                    {"srcSubresource": layers, "srcOffset": origin, "dstSubresource": {**layers, "mipLevel": 1},
                     "dstOffset": origin, "extent": {"width": 2, "height": 2, "depth": 1}}]}}),
                ("vkEndCommandBuffer", {"commandBuffer": 30})]
    return [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
            ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 3}),
            *images, *memory, *descriptors, *commands]


def test_a_blit_imports_as_blit_image(tmp_path):
    """vkCmdBlitImage with the nearest filter: its regions' subresources and corners (a 2:1 downscale, mirrored in x)
    as the format's blit_image."""
    from .test_import import _jsonl

    layers = {"aspectMask": 1, "mipLevel": 0, "baseArrayLayer": 1, "layerCount": 1}
    blit = ("vkCmdBlitImage", {"commandBuffer": 30, "srcImage": 21, "dstImage": 21, "filter": "VK_FILTER_NEAREST",
                               "pRegions": [{"srcSubresource": layers,
                                             "srcOffsets": [{"x": 0, "y": 0, "z": 0}, {"x": 4, "y": 4, "z": 1}],
                                             "dstSubresource": {**layers, "mipLevel": 1},
                                             "dstOffsets": [{"x": 2, "y": 0, "z": 0}, {"x": 0, "y": 2, "z": 1}]}]})
    calls = [blit if name == "vkCmdBlitImage" else (name, a) for name, a in _calls()]
    stream, summary = import_capture(_jsonl(tmp_path / "blit.jsonl", calls))
    [found] = [c for c in stream.command_buffers[0].commands if isinstance(c, ir.BlitImage)]
    [region] = found.regions
    assert (found.src, found.dst, found.filter) == ("img21", "img21", "nearest")
    assert (region.src_mip_level, region.src_base_array_layer, region.dst_mip_level, region.layer_count) == (0, 1, 1, 1)
    assert (region.src_offsets, region.dst_offsets) == (((0, 0, 0), (4, 4, 1)), ((2, 0, 0), (0, 2, 1)))
    assert not any(name == "vkCmdBlitImage" for name, _ in summary.left_out)


def test_what_the_format_cannot_hold_is_refused_and_said(tmp_path):
    """A depth image and a multisampled one are refused at their vkCreateImage, with a warning; copies from them to a
    buffer or an image the stream holds, a cubic blit and a transition to an attachment layout of an image it holds are
    left out, each counted with its reason, and make the verdict partial; clears of a refused image or of one bound
    to no memory touch nothing the stream holds (skipped). Each barrier keeps its execution dependency. The stream
    holds 21 and 23, and 21's clear with the uint32 value."""
    from .test_import import _jsonl

    stream, summary = import_capture(_jsonl(tmp_path / "refusals.jsonl", _calls()))
    assert [(i.id, i.extent, i.format, i.mip_levels, i.array_layers) for i in stream.images] == [
        ("img21", (4, 4, 1), "r32_uint", 3, 2), ("img23", (4, 4, 4), "r32_uint", 3, 1)]
    # 21 is bound at offset 0 of its memory and takes 512 bytes: buffer 71 at 256 aliases it, 70 at 1024 does not.
    assert [w for w in summary.warnings if w.startswith("image")] == [
        ("image img21 (vkBindImageMemory #11) shares bytes of memory 121 with buf71: the stream gives an image "
         "memory of its own, so hazards between them are missing")]
    refused = [w for w in summary.warnings if w.startswith("vkCreateImage")]
    assert len(refused) == 2 and "VK_FORMAT_D32_SFLOAT: the import does not map compressed, multi-planar or " \
        "depth/stencil images yet" in refused[0] and "VK_SAMPLE_COUNT_4_BIT: the import does not map multisampled " \
        "images yet" in refused[1]
    assert (summary.skipped["vkCmdClearDepthStencilImage"], summary.skipped["vkCmdClearColorImage"]) == (1, 2)
    assert set(summary.left_out) == {
        ("vkCmdCopyImageToBuffer", ("it touches image img20, which the stream does not hold (VK_FORMAT_D32_SFLOAT: "
                                    "the import does not map compressed, multi-planar or depth/stencil images "
                                    "yet)")),
        ("vkCmdCopyImage", ("it touches image img22, which the stream does not hold (VK_SAMPLE_COUNT_4_BIT: "
                            "the import does not map multisampled images yet)")),
        ("vkCmdBlitImage", "it blits with VK_FILTER_CUBIC_EXT, which the format's blit_image does not have"),
        ("vkCmdPipelineBarrier", ("its image barrier of img21 from VK_IMAGE_LAYOUT_GENERAL to "
                                  "VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL names a layout the format does not have"))}
    assert summary.partial
    assert any(line.startswith("left out: 1 vkCmdBlitImage call (first #") for line in summary.partial_lines())
    sync1, sync2, clear, dispatch, upload, copy = stream.command_buffers[0].commands
    # vkCmdCopyBufferToImage2 and vkCmdCopyImage2: their regions as the first versions' (buffer rows 8 texels apart).
    assert (upload.src, upload.dst, upload.regions, upload.src_ranges) == (
        "buf70", "img21", (ir.ImageRegion(64, 8, 0, 0, 1, 1, (1, 0, 0), (2, 2, 1)),), ((64, 72), (96, 104)))
    assert (copy.src, copy.dst, copy.regions) == (
        "img21", "img21", (ir.ImageCopyRegion(0, 0, 1, 0, 1, (0, 0, 0), (0, 0, 0), (2, 2, 1)),))
    assert (sync1.src_stage, sync1.dst_stage, sync1.images) == ({"transfer"}, {"transfer"}, ())
    assert (sync2.src_stage, sync2.dst_stage, sync2.src_access, sync2.images) == (
        {"compute_shader"}, {"copy"}, frozenset(), ())
    assert (clear.image, clear.value, clear.subresources) == ("img21", (7, 0, 0, 0), (ir.Subresources(0, 3, 0, 1),))
    # The view of 21's levels 1-2 (VK_REMAINING_MIP_LEVELS) of layer 1 is a storage image binding (read_write: no
    # SPIR-V), the combined image sampler of that view a sampled one; the stencil view and the 2D array of 23's
    # slices are not: the dispatch is unresolved for them. The sampled depth image 20 is none of the stream's: nothing
    # of it is missing.
    assert [(b.buffer, b.subresources, b.access) for b in dispatch.bindings] == [
        ("img21", ir.Subresources(1, 2, 1, 1), "read_write"), ("img21", ir.Subresources(1, 2, 1, 1), "sampled")]
    assert sorted(summary.unresolved) == [
        ("shader module 61 uses set 0, binding 1: a view of aspect mask 0x4 of image img21 (only the color aspect is "
         "held); that access is left out"),
        ("shader module 61 uses set 0, binding 2: a VK_IMAGE_VIEW_TYPE_2D_ARRAY of the depth slices of 3D image "
         "img23 (slices as layers are not held); that access is left out")]


def test_an_image_destroyed_while_its_commands_may_run_is_a_use_after_destroy(tmp_path):
    """vkDestroyImage of 21 right after the submit of the commands that clear it and bind it, with no wait: a
    destroy op of img21, which ends its lifetime while they may still use it."""
    from .test_import import _jsonl

    submit = ("vkQueueSubmit", {"queue": 3, "fence": 0, "pSubmits": [
        {"pWaitSemaphores": None, "pWaitDstStageMask": None, "pCommandBuffers": [30], "pSignalSemaphores": None}]})
    destroy = ("vkDestroyImage", {"device": 2, "image": 21})
    stream, _ = import_capture(_jsonl(tmp_path / "destroyed.jsonl", [*_calls(), submit, destroy]))
    assert [(op.buffer, op.label) for t in stream.threads for op in t.ops if isinstance(op, ir.Destroy)] == [
        ("img21", f"vkDestroyImage #{len(_calls()) + 2}")]
    # (The recording has its own hazards: no barrier orders its commands.)
    assert {f.buffer for f in check(stream) if f.kind == "use_after_destroy"} == {"img21"}


def storage_program(race: bool) -> dict:
    """The stream tests/storage_image_program.py runs (`race`: without the barrier between the dispatch and the
    copy of D)."""
    def barrier(src: str, dst: str, *images: dict) -> dict:
        return {"cmd": "barrier", "src_stage": [src], "dst_stage": [dst], "images": list(images)}

    def entry(image: str, src: list[str], dst: list[str], old: str, new: str) -> dict:
        return {"image": image, "src_access": src, "dst_access": dst, "old_layout": old, "new_layout": new}
    box = [{"image_extent": [4, 4]}]
    readback = [] if race else [barrier("compute_shader", "transfer", entry(
        "D", ["shader_write"], ["transfer_read"], "general", "transfer_src_optimal"))]
    return {
        "format": "vkverify-stream/1", "name": "storage-images",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "Up", "size": 64, "memory": "host_coherent"},
                    {"id": "Down", "size": 64, "memory": "host_coherent"}],
        "images": [{"id": "S", "extent": [4, 4], "format": "r32_uint"},
                   {"id": "D", "extent": [4, 4], "format": "r32_uint"}],
        "fences": [{"id": "F"}], "shaders": {"inc": {"bindings": ["read", "write"]}},
        "command_buffers": {"cb0": [
            barrier("top_of_pipe", "all_commands",
                    entry("S", [], ["transfer_write"], "undefined", "transfer_dst_optimal"),
                    entry("D", [], ["shader_write"], "undefined", "general")),
            {"cmd": "copy_buffer_to_image", "src": "Up", "dst": "S", "regions": box},
            barrier("transfer", "compute_shader",
                    entry("S", ["transfer_write"], ["shader_read"], "transfer_dst_optimal", "general")),
            {"cmd": "dispatch", "shader": "inc", "bindings": [{"image": "S"}, {"image": "D"}]},
            *readback,
            {"cmd": "copy_image_to_buffer", "src": "D", "dst": "Down", "regions": box},
            barrier("compute_shader", "transfer",
                    entry("S", ["shader_read"], ["transfer_write"], "general", "transfer_dst_optimal")),
            {"cmd": "clear_color_image", "image": "S"},
            {"cmd": "barrier", "src_stage": ["transfer"], "src_access": ["transfer_write"], "dst_stage": ["host"],
             "dst_access": ["host_read"]}]},
        "threads": {"main": [
            {"op": "host_write", "buffer": "Up", "offset": 0, "size": 64},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
            {"op": "wait_fences", "fences": ["F"]},
            {"op": "host_read", "buffer": "Down", "offset": 0, "size": 64},
            *({"op": "destroy", "buffer": x} for x in ("S", "D", "Up", "Down"))]}}


# How tests/storage_image_program.py is run: its options.
STORAGE = {"ordered": [], "racing": ["--race"], "template": ["--template"], "push": ["--push"]}


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    """STORAGE's name -> the import of tests/storage_image_program.py's capture, run so."""
    require_gfxreconstruct()
    out = {}
    for name, options in STORAGE.items():
        capture = tmp_path_factory.mktemp("storage") / "storage.gfxr"
        done = subprocess.run([sys.executable, "-m", "tests.storage_image_program", *options],
                              env={**capture_env(capture, os.environ), "PYTHONPATH": python_path()}, cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
        out[name] = import_capture(capture)
    return out


def _shapes(stream: ir.Stream, ids: dict[str, str]) -> set[tuple]:
    """Each finding as (kind, the program's id of its resource, range, what each side is: a command's kind, a host
    op's): the program names nothing, so the import's ids are its handles (`ids` maps them)."""
    def side(ref: str) -> str:
        named = parse_ref(without_submit(ref))
        owner = stream.index.command_buffers.get(named.owner) or stream.index.threads[named.owner]
        return type((owner.commands if hasattr(owner, "commands") else owner.ops)[named.index]).__name__
    return {(f.kind, ids.get(f.buffer, f.buffer), f.range, side(f.first), side(f.second)) for f in check(stream)}


@pytest.mark.parametrize("name", STORAGE)
def test_a_captured_program_s_storage_images_import_with_the_shader_s_accesses(storage, name):
    """tests/storage_image_program.py on Lavapipe: its two images as created (r32_uint 4x4), its upload, transitions,
    copy back and clear, and its dispatch binding S as read and D as written, as the shader's `readonly` and
    `writeonly` say in its SPIR-V, whether vkUpdateDescriptorSets, a descriptor update template or a push wrote
    them; its findings are those of the stream it runs (the RAW of the dispatch's write of D and the copy's read
    where the barrier is missing)."""
    stream, summary = storage[name]
    race = name == "racing"
    assert not summary.partial, summary.partial_lines()
    original = from_dict(storage_program(race))
    ids = dict(zip((i.id for i in stream.images), ("S", "D"))) | dict(zip((b.id for b in stream.buffers),
                                                                          ("Up", "Down")))
    assert [(ids[i.id], i.extent, i.format, i.mip_levels, i.array_layers) for i in stream.images] == [
        (i.id, i.extent, i.format, i.mip_levels, i.array_layers) for i in original.images]
    [cb] = stream.command_buffers
    assert [type(c).__name__ for c in cb.commands] == [type(c).__name__ for c in original.command_buffers[0].commands]
    [dispatch] = [c for c in cb.commands if isinstance(c, ir.Dispatch)]
    assert [(ids[b.buffer], b.access, b.subresources, b.size) for b in dispatch.bindings] == [
        ("S", "read", ir.Subresources(), 64), ("D", "write", ir.Subresources(), 64)]
    found = _shapes(stream, ids)
    assert found == _shapes(original, {})
    assert found == ({("raw", "D", (0, 64), "Dispatch", "CopyImageToBuffer")} if race else set())


def test_compressed_multi_planar_and_depth_stencil_images_are_held_by_the_format_but_not_imported_yet():
    """The stream format holds them (docs/format.md, images); the import does not map their copies' regions."""
    from vkverify.importer.images import _refusal

    info = {"samples": "VK_SAMPLE_COUNT_1_BIT", "flags": 0}
    for format in ("VK_FORMAT_BC1_RGBA_UNORM_BLOCK", "VK_FORMAT_G8_B8_R8_3PLANE_420_UNORM",
                   "VK_FORMAT_D24_UNORM_S8_UINT"):
        assert _refusal({**info, "format": format}) == \
            f"{format}: the import does not map compressed, multi-planar or depth/stencil images yet"
    assert _refusal({**info, "format": "VK_FORMAT_R8G8B8A8_UNORM"}) is None
