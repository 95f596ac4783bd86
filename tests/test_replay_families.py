"""What replays on NVIDIA's H200 showed that Lavapipe, with one queue family of every capability, hides.

Which queue family the replay asks for: a transfer-only family cannot run a dispatch, a query result copy, a clear
of a color image or a blit (their command pools "must support graphics, or compute operations"), nor the zero clear
the runtime makes of each image before the stream runs. On a device with a transfer-only family (NVIDIA's family 1),
a stream of image copies on q0 replayed on it: the layer reports VUID-vkCmdClearColorImage-commandBuffer-cmdpool,
and the H200 lost the device."""

from __future__ import annotations

import pytest

from tests.conftest import CORPUS, ROOT
from vkverify.model import load

runtime = pytest.importorskip("vkverify.runtime")
from vkverify.runtime.create import queue_requests  # noqa: E402
from vkverify.runtime.device import QueueRequest, assign_families  # noqa: E402

SYNCVAL = ROOT / "tests" / "syncval"


def _asks_compute(name: str) -> dict[str, bool]:
    (path,) = [p for p in CORPUS if p.name.startswith(f"{name}-")] or [SYNCVAL / f"{name}.json"]
    stream = load(path)
    return {q: r.compute for q, r in queue_requests(stream, stream.devices[0]).items()}


def test_image_streams_ask_their_first_family_to_clear_and_buffer_copies_do_not():
    assert _asks_compute("177") == {"q0": True}  # image copies only: the runtime's zero clear of I
    assert _asks_compute("220") == {"q0": True}  # a blit
    assert _asks_compute("11") == {"q0": False}  # buffer copies: a transfer-only family will do
    # Events on both queues, no dispatch: VUID-vkCmdSetEvent-commandBuffer-cmdpool and kin on the H200.
    assert _asks_compute("NegativeSyncVal.QSBufferEvents-2") == {"q0": True, "q1": True}


def test_a_queue_asking_compute_gets_the_general_family_of_a_device_with_a_transfer_only_one():
    import vulkan as vk

    general = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT | vk.VK_QUEUE_TRANSFER_BIT
    families = [general, vk.VK_QUEUE_TRANSFER_BIT, vk.VK_QUEUE_COMPUTE_BIT | vk.VK_QUEUE_TRANSFER_BIT]
    assert assign_families(families, [QueueRequest("q0", 0, compute=False)], vk) == {0: 1}
    assert assign_families(families, [QueueRequest("q0", 0, compute=True)], vk) == {0: 0}


def test_an_image_barrier_names_the_layout_the_replay_left_the_image_in():
    """The syncval port starts where the test's set-up left I (transfer_dst_optimal); the replay's image is in general
    (its zero clear): the barrier's old layout is the one I is in, not the stream's, or the layer reports
    VUID-VkImageMemoryBarrier2-oldLayout-01197 (Lavapipe and the H200 alike)."""
    stream = load(SYNCVAL / "PositiveSyncVal.ChainGlobalBarrierWithTransition.json")
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}
    assert [m.id_name for m in result.messages if m.severity == "error"] == []
