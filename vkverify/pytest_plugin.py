"""pytest plugin (entry point `pytest11: vkverify`): vkverify in an engine's tests with no glue.

    def test_frame(vk_runtime, assert_race_free):
        run_my_engine(vk_runtime)          # a hazard raises HazardError at its submit
        assert_race_free(vk_runtime)       # the whole stream, host reads after the last submit included

Vulkan is imported only when `vk_runtime` is used, so loading the plugin costs nothing.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def vk_runtime():
    """A Runtime on VKVERIFY_DEVICE (default: Lavapipe, the CPU device) with queues q0 and q1
    (they share a VkQueue where the device has one), online checking on unless VKVERIFY_CHECK=0;
    closed after the test. Skips the test when there is no Vulkan device."""
    from vkverify.runtime import NoDevice, Runtime

    try:
        rt = Runtime(("q0", "q1"), device=os.environ.get("VKVERIFY_DEVICE", "llvmpipe"),
                     check=os.environ.get("VKVERIFY_CHECK", "1") == "1", name="vk_runtime")
    except NoDevice as error:
        pytest.skip(f"no Vulkan device: {error}")
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture
def assert_race_free():
    """A callable taking a stream or a Runtime: fails the test with the checker's findings as text."""
    def check_stream(subject) -> None:
        from vkverify.check import check
        from vkverify.report import FileResult, format_text

        if hasattr(subject, "happens_before"):  # a Runtime: its incremental state, no re-check
            findings, name = subject.findings(), subject.doc["name"]
        else:
            stream = subject.stream() if hasattr(subject, "stream") else subject
            findings, name = check(stream), stream.name
        if findings:
            pytest.fail(format_text([FileResult("<recorded>", name, findings)]), pytrace=False)
    return check_stream
