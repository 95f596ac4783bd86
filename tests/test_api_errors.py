"""The Python API on misuse: each builder method, loader entry and verb raises a VkverifyError
subclass naming the argument (issue 17), never a built-in error from deep inside, and a stream
built by hand is validated as a file is."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.check.explain import explain
from vkverify.importer import import_capture
from vkverify.model import InvalidStream, StreamError, UsageError, VkverifyError, from_dict, ir, load, loads
from vkverify.model.builder import Stream
from vkverify.sim import simulate

CORPUS = Path(__file__).resolve().parent / "corpus"


def base() -> Stream:
    s = Stream("api")
    s.create_buffer("A", 4096).create_buffer("B", 4096).create_fence("F")
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A").cmd_copy_buffer("A", "B")
    return s


def test_base_builds():
    """The built stream is the one written: the copy reads A with no barrier after the fill."""
    found = check(base().queue_submit("q0", ["cb0"], fence="F").build())
    assert [(f.kind, f.buffer, f.first, f.second, f.range) for f in found] == [("raw", "A", "cb0[0]", "cb0[1]",
                                                                                (0, 4096))]


# (what is called, the argument the message names)
BUILDER_MISUSE = [
    (lambda s: s.queue_submit("q0", "cb0"), "queue_submit(command_buffers)"),
    (lambda s: s.queue_submit("q0", [0]), "queue_submit(command_buffers)[0]"),
    (lambda s: s.queue_submit(7, ["cb0"]), "queue_submit(queue)"),
    (lambda s: s.queue_submit("q0", ["cb0"], wait={"semaphore": "S"}), "queue_submit(wait)"),
    (lambda s: s.queue_submit("q0", ["cb0"], fence=["F"]), "queue_submit(fence)"),
    (lambda s: s.wait_for_fences("F"), "wait_for_fences(fences)"),
    (lambda s: s.reset_fences(None), "reset_fences(fences)"),
    (lambda s: s.wait_semaphores([("T", 1)]), "wait_semaphores(waits)"),
    (lambda s: s.wait_semaphores({"T": "1"}), "wait_semaphores(waits)['T']"),
    (lambda s: s.signal_semaphore("T", 1.0), "signal_semaphore(value)"),
    (lambda s: s.create_buffer("C", "4096"), "create_buffer(size)"),
    (lambda s: s.create_buffer("C", 4096.0), "create_buffer(size)"),
    (lambda s: s.create_buffer("C", True), "create_buffer(size)"),
    (lambda s: s.create_buffer("", 64), "create_buffer(id)"),
    (lambda s: s.create_semaphore("S", timeline="yes"), "create_semaphore(timeline)"),
    (lambda s: s.create_fence("G", signaled=1), "create_fence(signaled)"),
    (lambda s: s.declare_shader("k", "read"), "declare_shader(bindings)"),
    (lambda s: s.allocate_command_buffer(["cb1"]), "allocate_command_buffer(id)"),
    (lambda s: s.host_write("A", offset="0"), "host_write(offset)"),
    (lambda s: s.host_read(("A",)), "host_read(buffer)"),
    (lambda s: s.destroy_buffer("A", id=3), "destroy_buffer(id)"),
    (lambda s: s.queue_wait_idle(None), "queue_wait_idle(queue)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_copy_buffer("A", "B", regions=[(0, 0)]),
     "cmd_copy_buffer(regions)[0]"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_copy_buffer("A", "B", regions="0,0,4"), "cmd_copy_buffer(regions)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_fill_buffer(5), "cmd_fill_buffer(dst)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_fill_buffer("A", value=0.5), "cmd_fill_buffer(value)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_update_buffer("A", data="zeros"), "cmd_update_buffer(data)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_dispatch("k", "A"), "cmd_dispatch(bindings)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_dispatch("k", [3]), "cmd_dispatch(bindings)[0]"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_dispatch("k", ["A"], groups=4), "cmd_dispatch(groups)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_dispatch("k", ["A"], push=["x"]), "cmd_dispatch(push)[0]"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_pipeline_barrier2(src_stage=5), "cmd_pipeline_barrier2(src_stage)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_pipeline_barrier2(dst_access=["host_read", 1]),
     "cmd_pipeline_barrier2(dst_access)[1]"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_pipeline_barrier2(buffers={"buffer": "A"}),
     "cmd_pipeline_barrier2(buffers)"),
    (lambda s: s.allocate_command_buffer("cb0").cmd_fill_buffer("A", label=7), "cmd_fill_buffer(label)"),
    (lambda s: Stream(5), "Stream(name)"),
    (lambda s: Stream("x", description=["d"]), "Stream(description)"),
]


@pytest.mark.parametrize("call, argument", [pytest.param(c, a, id=a) for c, a in BUILDER_MISUSE])
def test_builder_misuse_names_the_argument(call, argument):
    with pytest.raises(UsageError) as raised:
        call(base())
    assert raised.value.argument == argument
    assert str(raised.value).startswith(f"{argument}: expected ")


def test_a_string_is_never_a_list_of_characters():
    with pytest.raises(UsageError, match=r"got the string 'cb0' \(write \['cb0'\]\)"):
        base().queue_submit("q0", "cb0")


@pytest.mark.parametrize("call, argument", [
    (lambda: load(5), "path"),
    (lambda: loads({"format": "vkverify-stream/1"}), "text"),
    (lambda: import_capture(None), "path"),
    (lambda: import_capture(CORPUS / "01-copy-then-dispatch-no-barrier.json", shader_dir=3), "shader_dir"),
    (lambda: check("tests/corpus/01-copy-then-dispatch-no-barrier.json"), "stream"),
    (lambda: explain({"name": "x"}, "cb0[0]", "cb0[1]"), "stream"),
    (lambda: explain(load(CORPUS / "01-copy-then-dispatch-no-barrier.json"), 0, "cb0[1]"), "first"),
    (lambda: simulate(load(CORPUS / "01-copy-then-dispatch-no-barrier.json"), schedules=0), "schedules"),
    (lambda: simulate(load(CORPUS / "01-copy-then-dispatch-no-barrier.json"), seed=-1), "seed"),
])
def test_api_argument_misuse(call, argument):
    with pytest.raises(UsageError) as raised:
        call()
    assert raised.value.argument == argument


RAW = CORPUS / "01-copy-then-dispatch-no-barrier.json"


@pytest.mark.parametrize("call, argument, accepted", [
    (lambda s: check(s, witnesses="5"), "witnesses", "None or an integer of at least 0"),
    (lambda s: check(s, witnesses=-1), "witnesses", "None or an integer of at least 0"),
    (lambda s: check(s, witnesses=True), "witnesses", "None or an integer of at least 0"),
    (lambda s: check(s, witness="nope"), "witness", "one of 'slice', 'full'"),
    (lambda s: check(s, readings="all"), "readings", "a vkverify.check.readings.Readings"),
    (lambda s: check(s, readings=None), "readings", "a vkverify.check.readings.Readings"),
    (lambda s: simulate(s, schedules=10 ** 20), "schedules", "an integer in [1, 100000]"),
    (lambda s: simulate(s, schedules=2.0), "schedules", "an integer in [1, 100000]"),
    (lambda s: simulate(s, findings="raw"), "findings", "None or a list of vkverify.check.Finding"),
    (lambda s: simulate(s, findings=[None]), "findings", "None or a list of vkverify.check.Finding"),
])
def test_verb_arguments_name_the_accepted_values(call, argument, accepted):
    """Issue 30 point 10: a TypeError from inside the checker (witnesses="5"), silently accepted (readings="all",
    witness="nope", witnesses=-1) or a hang (schedules=10**20), before."""
    with pytest.raises(UsageError) as raised:
        call(load(RAW))
    assert raised.value.argument == argument and raised.value.message.startswith(f"expected {accepted}, got ")


@pytest.mark.parametrize("doc, path", [
    (5, "$"),
    ({"format": "vkverify-stream/1", "name": "x", "buffers": [{"id": "A", "size": {1, 2}}]}, "buffers[0].size"),
    ({"format": "vkverify-stream/1", "name": "x", "buffers": [{"id": "A", "size": 4096.0}]}, "buffers[0].size"),
    ({"format": "vkverify-stream/1", "name": "x", "buffers": [{"id": "A\ud800", "size": 4}]}, "buffers[0].id"),
    ({"format": "vkverify-stream/1", "name": "x", "buffers": [{"id": "A", "size": 2 ** 80}]}, "buffers[0].size"),
    ({"format": "vkverify-stream/1", "name": "x", 3: []}, "$"),
    ({"format": "vkverify-stream/1", "name": "x", "buffers": [{"id": "A", "size": 10 ** 5000}]}, "buffers[0].size"),
])
def test_from_dict_misuse_names_the_json_path(doc, path):
    with pytest.raises(StreamError) as raised:
        from_dict(doc)
    assert any(e.path == path for e in raised.value.errors), raised.value.lines()


def test_loader_errors_are_one_hierarchy():
    assert InvalidStream is StreamError and issubclass(StreamError, VkverifyError)
    from vkverify.check.explain import ExplainError
    from vkverify.importer import CaptureError
    assert issubclass(CaptureError, VkverifyError) and issubclass(ExplainError, UsageError)


# ---- a stream built by hand (or edited) is validated the way the loader validates a file ----


def hand_built() -> ir.Stream:
    return load(CORPUS / "01-copy-then-dispatch-no-barrier.json")


@pytest.mark.parametrize("edit, path", [
    (lambda s: replace(s, buffers=(replace(s.buffers[0], size=-4),) + s.buffers[1:]), "buffers[0].size"),
    (lambda s: replace(s, buffers=tuple(replace(b, alias_of=s.buffers[(i + 1) % 2].id) if i < 2 else b
                                        for i, b in enumerate(s.buffers))), "buffers[0].alias_of"),
    (lambda s: replace(s, threads=(replace(s.threads[0], ops=s.threads[0].ops[:1] + (
        replace(s.threads[0].ops[1], queue="q9"),) + s.threads[0].ops[2:]),)), "threads.main[1].queue"),
    (lambda s: replace(s, buffers=(replace(s.buffers[0], size=4096.0),) + s.buffers[1:]), "buffers[0].size"),
])
@pytest.mark.parametrize("verb", [check, lambda s: explain(s, "cb0[0]", "cb0[1]"), lambda s: simulate(s, 2)])
def test_hand_built_ir_is_validated(edit, path, verb):
    stream = edit(hand_built())
    with pytest.raises(StreamError) as raised:
        verb(stream)
    assert any(e.path == path for e in raised.value.errors), raised.value.lines()


def test_hand_built_ir_of_the_wrong_types():
    s = hand_built()
    with pytest.raises(StreamError, match="not a stream"):
        check(replace(s, buffers=(replace(s.buffers[0], devices=5),) + s.buffers[1:]))


def test_valid_hand_built_ir_is_checked():
    """Hand-edited IR is checked as loaded IR is: corpus 01's RAW, the copy to the dispatch."""
    found = check(replace(hand_built(), name="edited"))
    assert [(f.kind, f.buffer, f.first, f.second) for f in found] == [("raw", "A", "cb0[0]", "cb0[1]")]


def defined_exceptions() -> dict[str, type]:
    """Every exception class a vkverify module defines, by `module.Name`."""
    import importlib
    import inspect
    import pkgutil

    import vkverify

    found = {}
    for info in pkgutil.walk_packages(vkverify.__path__, "vkverify."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return found


def test_every_error_derives_from_vkverify_error_and_says_who_sees_it():
    """`except VkverifyError` catches every error vkverify raises on purpose, and each class's
    docstring says who should see it (hypothesis' errors.py does the same)."""
    found = defined_exceptions()
    # Not vacuous: the walk reaches the runtime, the shader library, the reference and the importer.
    assert {"vkverify.runtime.errors.RuntimeFault", "vkverify.shaders.reflect.SpirvError",
            "vkverify.check.reference.OutsideReference", "vkverify.importer.translate.UnreadableCall"} <= set(found)
    # A BaseException that is no Exception (a stop signal, as KeyboardInterrupt is) is meant to pass every handler.
    outside = sorted(name for name, cls in found.items()
                     if issubclass(cls, Exception) and not issubclass(cls, VkverifyError))
    assert not outside, f"not under VkverifyError: {outside}"
    mute = sorted(name for name, cls in found.items()
                  if not re.search(r"\b(see|sees|seen)\b", cls.__doc__ or "", re.IGNORECASE))
    assert not mute, f"docstring says no one sees it: {mute}"


# ---- the runtime's API (issue 28): a typo names the argument and what it takes --------------------------

RUNTIME_MISUSE = [
    (lambda rt: rt.create_buffer("X", 64, "host_visible"), "memory", "'device_local', 'host_coherent'"),
    (lambda rt: rt.create_buffer("X", 64, sharing="shared"), "sharing", "'concurrent', 'exclusive'"),
    (lambda rt: rt.create_buffer("X", 64, alias_of="Nope"), "alias_of", "'A'"),
    (lambda rt: rt.submit("q9", []), "queue", "'q0'"),
    (lambda rt: rt.submit("q0", [], wait=[{"semaphre": "T", "value": 1}]), "wait/signal", "'semaphore', 'value'?"),
    (lambda rt: rt.submit("q0", [], signal=[{"semaphore": "U", "value": 1}]), "semaphore", "'T'"),
]


@pytest.mark.parametrize("call, argument, accepted", RUNTIME_MISUSE)
def test_runtime_misuse_names_the_argument_and_the_accepted_values(device_name, call, argument, accepted):
    from vkverify.runtime import Runtime

    with Runtime() as rt:
        rt.create_buffer("A", 64)
        rt.create_semaphore("T", timeline=True)
        with pytest.raises(UsageError) as raised:
            call(rt)
        assert raised.value.argument == argument and accepted in str(raised.value), str(raised.value)
        assert rt.stream().threads == () or all(not t.ops for t in rt.stream().threads)  # nothing recorded


def test_host_access_to_device_local_memory_is_refused_on_every_device(device_name):
    """Lavapipe maps device_local memory too: refused anyway, before it is recorded, as a GPU would refuse it."""
    from vkverify.runtime import Runtime, Unsupported

    with Runtime() as rt:
        rt.create_buffer("D", 64)
        rt.create_buffer("H", 64, "host_coherent")
        for access in (lambda: rt.host_write("D", b"\1" * 4), lambda: rt.host_read("D")):
            with pytest.raises(Unsupported, match="'D', whose memory \\(device_local\\) is not host-visible"):
                access()
        rt.host_write("H", b"\1" * 4)
        assert [op.op for t in rt.stream().threads for op in t.ops] == ["host_write"]


def test_an_unknown_shader_lists_the_shaders_there_are():
    s = base()
    s.allocate_command_buffer("cb1").cmd_dispatch("ad", ["A", "B"])
    with pytest.raises(StreamError, match=r"unknown shader 'ad': not in `shaders` \(none\) nor in the shader "
                                          r"library \(.*\badd\b.*\)"):
        s.queue_submit("q0", ["cb1"]).build()
