"""The model: JSON round trip, the builder, name spellings and the loader's defaults."""

from __future__ import annotations

import json

import pytest

from vkverify.model import dumps, from_dict, ir, load, loads, to_dict
from vkverify.model.errors import InvalidStream
from vkverify.model.builder import Stream

from .conftest import CORPUS

FMT = "vkverify-stream/1"


# ---- round trip ---------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_round_trip_corpus(path):
    s = load(path)
    text = dumps(s)
    back = loads(text)
    assert back == s
    # and the dump is a fixed point: dumping again gives the same document
    assert to_dict(back) == json.loads(text)


def test_round_trip_compact_dump():
    s = load(CORPUS[0])
    assert loads(dumps(s, indent=None)) == s


def test_round_trip_is_not_vacuous():
    """Equality of streams sees a change anywhere in the IR."""
    s = load(CORPUS[0])
    doc = to_dict(s)
    doc["command_buffers"]["cb0"][0]["regions"][0]["size"] -= 1
    assert from_dict(doc) != s


# ---- builder ------------------------------------------------------------------


def built_stream() -> ir.Stream:
    s = Stream("builder-vs-json", description="built with the builder",
               devices=[{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 1}]}])
    s.create_buffer("Staging", 4096, memory="host_coherent")
    s.create_buffer("A", 4096)
    s.create_buffer("B", 2048)
    s.create_buffer("A_hi", alias_of="A", offset=2048, size=2048)
    s.create_semaphore("S")
    s.create_semaphore("T", timeline=True, initial=1)
    s.create_fence("F")
    s.create_fence("G", signaled=True)
    s.declare_shader("transform", ["read", "write"])
    cb = s.allocate_command_buffer("cb0")
    cb.cmd_copy_buffer("Staging", "A", regions=[(0, 0, 1024), (1024, 2048, 512)], id="up", label="upload")
    cb.cmd_fill_buffer("B", 0, 2048, value=7, label="clear B")
    cb.cmd_pipeline_barrier2(src_stage=["copy", "clear"], src_access="transfer_write",
                             dst_stage="compute_shader", dst_access=["shader_storage_read"],
                             buffers=[{"buffer": "A", "offset": 0, "size": 1024},
                                      {"buffer": "B", "src_access": ["transfer_write"],
                                       "dst_access": ["shader_storage_read", "shader_storage_write"]}])
    cb.cmd_dispatch("transform", [{"buffer": "A", "offset": 0, "size": 1024, "access": "read"},
                                  {"buffer": "B", "access": "write"}], groups=(4, 2, 1), push=[1, 2.5])
    cb.cmd_update_buffer("A_hi", 0, 16, data={"pattern": "iota_u32"})
    cb1 = s.allocate_command_buffer("cb1")
    cb1.cmd_pipeline_barrier2(src_stage="all_commands", dst_stage="all_commands")
    cb1.cmd_dispatch("transform", ["B", {"buffer": "A", "access": "write"}])
    s.host_write("Staging", 0, 4096, data={"pattern": "const", "value": 3})
    s.queue_submit("q0", ["cb0"], signal=[{"semaphore": "S"}, {"semaphore": "T", "value": 2}], fence="F",
                   id="first", label="upload and transform")
    s.queue_submit("q1", ["cb1"], wait=[{"semaphore": "S", "stage": "compute_shader"}])
    s.wait_for_fences(["F"])
    s.reset_fences(["F"])
    s.wait_semaphores({"T": 2}, thread="other")
    s.signal_semaphore("T", 3, thread="other")
    s.host_read("Staging", 0, 64, thread="other")
    s.flush_mapped_memory_ranges("Staging", 0, 64)
    s.invalidate_mapped_memory_ranges("Staging")
    s.queue_wait_idle("q1")
    s.device_wait_idle()
    s.destroy_buffer("B")
    return s.build()


HAND_WRITTEN = {
    "format": FMT, "name": "builder-vs-json", "description": "built with the builder",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 1}]}],
    "buffers": [
        {"id": "Staging", "size": 4096, "memory": "host_coherent"},
        {"id": "A", "size": 4096},
        {"id": "B", "size": 2048, "memory": "device_local", "device": "gpu0"},
        {"id": "A_hi", "alias_of": "A", "offset": 2048, "size": 2048},
    ],
    "semaphores": [{"id": "S"}, {"id": "T", "type": "timeline", "initial": 1}],
    "fences": [{"id": "F"}, {"id": "G", "signaled": True}],
    "shaders": {"transform": {"bindings": ["read", "write"]}},
    "command_buffers": {
        "cb0": [
            {"cmd": "copy", "src": "Staging", "dst": "A", "id": "up", "label": "upload",
             "regions": [{"src_offset": 0, "dst_offset": 0, "size": 1024},
                         {"src_offset": 1024, "dst_offset": 2048, "size": 512}]},
            {"cmd": "fill", "dst": "B", "offset": 0, "size": 2048, "value": 7, "label": "clear B"},
            {"cmd": "barrier", "src_stage": ["clear", "copy"], "src_access": "transfer_write",
             "dst_stage": "compute_shader", "dst_access": ["shader_storage_read"],
             "buffers": [{"buffer": "A", "size": 1024},
                         {"buffer": "B", "src_access": "transfer_write",
                          "dst_access": ["shader_storage_write", "shader_storage_read"]}]},
            {"cmd": "dispatch", "shader": "transform", "groups": [4, 2],  "push": [1, 2.5],
             "bindings": [{"buffer": "A", "size": 1024, "access": "read"}, {"buffer": "B", "access": "write"}]},
            {"cmd": "update", "dst": "A_hi", "offset": 0, "size": 16, "data": {"pattern": "iota_u32"}},
        ],
        "cb1": [
            {"cmd": "barrier", "src_stage": "all_commands", "dst_stage": ["all_commands"]},
            {"cmd": "dispatch", "shader": "transform",
             "bindings": [{"buffer": "B"}, {"buffer": "A", "access": "write"}]},
        ],
    },
    "threads": {
        "main": [
            {"op": "host_write", "buffer": "Staging", "offset": 0, "size": 4096,
             "data": {"pattern": "const", "value": 3}},
            {"op": "submit", "queue": "q0", "id": "first", "label": "upload and transform", "fence": "F",
             "batches": [{"command_buffers": ["cb0"],
                          "signal": [{"semaphore": "S"}, {"semaphore": "T", "value": 2, "stage": "all_commands"}]}]},
            {"op": "submit", "queue": "q1", "wait": [{"semaphore": "S", "stage": ["compute_shader"]}],
             "command_buffers": ["cb1"]},
            {"op": "wait_fences", "fences": ["F"]},
            {"op": "reset_fences", "fences": ["F"]},
            {"op": "flush", "buffer": "Staging", "offset": 0, "size": 64},
            {"op": "invalidate", "buffer": "Staging"},
            {"op": "queue_wait_idle", "queue": "q1"},
            {"op": "device_wait_idle"},
            {"op": "destroy", "buffer": "B"},
        ],
        "other": [
            {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 2}]},
            {"op": "signal_semaphore", "semaphore": "T", "value": 3},
            {"op": "host_read", "buffer": "Staging", "offset": 0, "size": 64},
        ],
    },
}


def test_builder_equals_hand_written_json():
    built = built_stream()
    loaded = loads(json.dumps(HAND_WRITTEN))
    assert built == loaded
    # spot checks that the comparison is about the intended content
    cb0 = loaded.index.command_buffers["cb0"].commands
    assert cb0[0].regions == (ir.Region(0, 0, 1024), ir.Region(1024, 2048, 512))
    barrier = cb0[2]
    assert isinstance(barrier, ir.Barrier)
    assert barrier.src_stage == {"copy", "clear"} and barrier.dst_access == {"shader_storage_read"}
    assert barrier.buffers[0] == ir.BufferBarrier("A", 0, 1024, frozenset({"copy", "clear"}),
                                                  frozenset({"transfer_write"}), frozenset({"compute_shader"}),
                                                  frozenset({"shader_storage_read"}))
    assert barrier.buffers[1].size == 2048  # default: the whole buffer
    assert barrier.buffers[1].dst_access == {"shader_storage_read", "shader_storage_write"}
    assert cb0[3].groups == (4, 2, 1)
    other = loaded.index.threads["other"].ops
    assert other[0] == ir.WaitSemaphores((ir.SemaphoreValue("T", 2),))
    submit = loaded.index.threads["main"].ops[1]
    assert submit.batches[0].signals[1] == ir.SemaphoreOp("T", 2, frozenset({"all_commands"}))
    assert loaded.index.threads["main"].ops[8] == ir.DeviceWaitIdle("gpu0")


def test_builder_differs_when_json_differs():
    doc = json.loads(json.dumps(HAND_WRITTEN))
    doc["command_buffers"]["cb0"][1]["value"] = 8
    assert built_stream() != loads(json.dumps(doc))


def test_builder_round_trip():
    s = built_stream()
    assert loads(dumps(s)) == s


# ---- names --------------------------------------------------------------------


def barrier_stream(**masks) -> ir.Barrier:
    doc = {"format": FMT, "name": "names", "buffers": [{"id": "A", "size": 64}],
           "command_buffers": {"cb0": [{"cmd": "barrier", **masks}]}}
    return from_dict(doc).command_buffers[0].commands[0]


@pytest.mark.parametrize("spelling,canonical", [
    ("VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT", "compute_shader"),
    ("VK_PIPELINE_STAGE_2_COPY_BIT", "copy"),
    ("VK_PIPELINE_STAGE_2_COPY_BIT_KHR", "copy"),
    ("VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT", "all_commands"),
    ("VK_PIPELINE_STAGE_2_NONE", "none"),
    ("VK_PIPELINE_STAGE_TRANSFER_BIT", "transfer"),
    ("VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT", "compute_shader"),
    ("VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT", "bottom_of_pipe"),
    ("VK_PIPELINE_STAGE_HOST_BIT", "host"),
])
def test_vulkan_stage_spellings(spelling, canonical):
    b = barrier_stream(src_stage=[spelling], dst_stage=spelling)
    assert b.src_stage == {canonical}
    assert b.dst_stage == {canonical}
    assert b == barrier_stream(src_stage=[canonical], dst_stage=[canonical])


@pytest.mark.parametrize("spelling,canonical", [
    ("VK_ACCESS_SHADER_WRITE_BIT", "shader_write"),
    ("VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT", "shader_storage_write"),
    ("VK_ACCESS_2_SHADER_STORAGE_READ_BIT_KHR", "shader_storage_read"),
    ("VK_ACCESS_TRANSFER_READ_BIT", "transfer_read"),
    ("VK_ACCESS_MEMORY_WRITE_BIT", "memory_write"),
    ("VK_ACCESS_2_INDIRECT_COMMAND_READ_BIT", "indirect_command_read"),
    ("VK_ACCESS_HOST_READ_BIT", "host_read"),
])
def test_vulkan_access_spellings(spelling, canonical):
    b = barrier_stream(src_access=[spelling], dst_access=spelling)
    assert b.src_access == {canonical}
    assert b.dst_access == {canonical}


def test_vulkan_spellings_in_semaphore_stage_and_buffer_barrier():
    doc = {"format": FMT, "name": "n", "buffers": [{"id": "A", "size": 64}],
           "semaphores": [{"id": "S"}],
           "command_buffers": {"cb0": [{"cmd": "barrier", "buffers": [
               {"buffer": "A", "src_stage": ["VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT"],
                "src_access": ["VK_ACCESS_SHADER_WRITE_BIT"], "dst_stage": ["VK_PIPELINE_STAGE_TRANSFER_BIT"],
                "dst_access": ["VK_ACCESS_2_TRANSFER_READ_BIT"]}]}]},
           "host": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"],
                     "signal": [{"semaphore": "S", "stage": ["VK_PIPELINE_STAGE_2_COPY_BIT"]}]}]}
    s = from_dict(doc)
    bb = s.command_buffers[0].commands[0].buffers[0]
    assert (bb.src_stage, bb.src_access, bb.dst_stage, bb.dst_access) == (
        {"compute_shader"}, {"shader_write"}, {"transfer"}, {"transfer_read"})
    assert s.threads[0].ops[0].batches[0].signals[0].stage == {"copy"}


def test_vulkan_spelling_round_trips_as_canonical():
    b = barrier_stream(src_stage=["VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT"], src_access=["VK_ACCESS_SHADER_WRITE_BIT"])
    doc = {"format": FMT, "name": "names", "buffers": [{"id": "A", "size": 64}],
           "command_buffers": {"cb0": [{"cmd": "barrier", "src_stage": ["VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT"],
                                        "src_access": ["VK_ACCESS_SHADER_WRITE_BIT"]}]}}
    dumped = to_dict(from_dict(doc))
    cmd = dumped["command_buffers"]["cb0"][0]
    assert cmd["src_stage"] == ["compute_shader"] and cmd["src_access"] == ["shader_write"]
    assert from_dict(dumped).command_buffers[0].commands[0] == b


# ---- defaults -----------------------------------------------------------------


def test_default_device_and_queue():
    s = from_dict({"format": FMT, "name": "d", "buffers": [{"id": "A", "size": 16}]})
    assert s.devices == (ir.Device("gpu0", (ir.Queue("q0", 0),)),)
    assert s.buffers[0].devices == ("gpu0",)
    assert s.buffers[0].memory == "device_local"


def test_device_without_queues_gets_q0():
    s = from_dict({"format": FMT, "name": "d", "devices": [{"id": "gpuX"}]})
    assert s.devices == (ir.Device("gpuX", (ir.Queue("q0", 0),)),)


def test_host_list_is_thread_main():
    host = [{"op": "host_write", "buffer": "A", "offset": 0, "size": 16},
            {"op": "device_wait_idle"}]
    base = {"format": FMT, "name": "h", "buffers": [{"id": "A", "size": 16, "memory": "host_coherent"}]}
    s = from_dict({**base, "host": host})
    assert [t.id for t in s.threads] == ["main"]
    assert s.threads[0].ops == (ir.HostAccess("host_write", "A", 0, 16), ir.DeviceWaitIdle("gpu0"))
    assert s == from_dict({**base, "threads": {"main": host}})


def test_binding_without_offset_size_covers_whole_buffer():
    doc = {"format": FMT, "name": "b", "buffers": [{"id": "A", "size": 4096}, {"id": "B", "size": 1000}],
           "shaders": {"k": {"bindings": ["read", "write"]}},
           "command_buffers": {"cb0": [
               {"cmd": "dispatch", "shader": "k", "bindings": [{"buffer": "A"}, {"buffer": "B", "offset": 200}]}]}}
    d = from_dict(doc).command_buffers[0].commands[0]
    # access comes from the declared shader, range from the buffer
    assert d.bindings == (ir.Binding("A", 0, 4096, "read"), ir.Binding("B", 200, 800, "write"))
    assert d.groups == (1, 1, 1)


def test_copy_without_regions_copies_the_smaller_size():
    doc = {"format": FMT, "name": "c", "buffers": [{"id": "Big", "size": 4096}, {"id": "Small", "size": 1024}],
           "command_buffers": {"cb0": [{"cmd": "copy", "src": "Big", "dst": "Small"},
                                       {"cmd": "copy", "src": "Small", "dst": "Big"}]}}
    a, b = from_dict(doc).command_buffers[0].commands
    assert a.regions == (ir.Region(0, 0, 1024),)
    assert b.regions == (ir.Region(0, 0, 1024),)


def test_fill_and_host_ops_default_to_whole_buffer():
    doc = {"format": FMT, "name": "f", "buffers": [{"id": "A", "size": 512, "memory": "host_cached"}],
           "command_buffers": {"cb0": [{"cmd": "fill", "dst": "A"}, {"cmd": "fill", "dst": "A", "offset": 12}]},
           "host": [{"op": "host_read", "buffer": "A"}, {"op": "flush", "buffer": "A", "offset": 100}]}
    s = from_dict(doc)
    f0, f1 = s.command_buffers[0].commands
    assert (f0.offset, f0.size, f0.value) == (0, 512, 0)
    assert (f1.offset, f1.size) == (12, 500)
    assert s.threads[0].ops == (ir.HostAccess("host_read", "A", 0, 512), ir.HostAccess("flush", "A", 100, 412))


def test_barrier_defaults():
    """No masks: an execution-only all_commands -> all_commands barrier; buffer entries inherit the masks."""
    b = barrier_stream()
    assert (b.src_stage, b.src_access, b.dst_stage, b.dst_access) == (
        {"all_commands"}, frozenset(), {"all_commands"}, frozenset())
    b = barrier_stream(src_stage=["copy"], src_access=["transfer_write"], dst_stage=["compute_shader"],
                       dst_access=["shader_read"], buffers=[{"buffer": "A", "offset": 16}])
    assert b.buffers == (ir.BufferBarrier("A", 16, 48, frozenset({"copy"}), frozenset({"transfer_write"}),
                                          frozenset({"compute_shader"}), frozenset({"shader_read"})),)


def test_semaphore_and_fence_defaults():
    doc = {"format": FMT, "name": "s", "semaphores": [{"id": "S"}, {"id": "T", "type": "timeline"}],
           "fences": [{"id": "F"}],
           "host": [{"op": "submit", "queue": "q0", "signal": [{"semaphore": "S"}, {"semaphore": "T", "value": 1}],
                     "fence": "F"}]}
    s = from_dict(doc)
    assert s.semaphores == (ir.Semaphore("S", "binary", 0), ir.Semaphore("T", "timeline", 0))
    assert s.fences == (ir.Fence("F", False),)
    sub = s.threads[0].ops[0]
    assert sub.batches == (ir.Batch((), (), (ir.SemaphoreOp("S", None, frozenset({"all_commands"})),
                                             ir.SemaphoreOp("T", 1, frozenset({"all_commands"})))),)


def test_a_semaphore_importing_a_payload_is_named_by_the_payload_s():
    """payload_of (docs/format.md, "semaphores"): waits and signals through the importing handle are the
    payload's semaphore's, host ops too; the declaration keeps it (a dump writes it back)."""
    doc = {"format": FMT, "name": "s", "semaphores": [{"id": "T", "type": "timeline"},
                                                     {"id": "I", "type": "timeline", "payload_of": "T"},
                                                     {"id": "J", "type": "timeline", "payload_of": "I"}],
           "host": [{"op": "submit", "queue": "q0", "signal": [{"semaphore": "J", "value": 1}]},
                    {"op": "wait_semaphores", "waits": [{"semaphore": "I", "value": 1}]},
                    {"op": "signal_semaphore", "semaphore": "I", "value": 2}]}
    s = from_dict(doc)
    submit, wait, signal = s.threads[0].ops
    assert (submit.batches[0].signals[0].semaphore, wait.waits[0].semaphore, signal.semaphore) == ("T", "T", "T")
    assert s.semaphores[1] == ir.Semaphore("I", "timeline", 0, "T")
    assert from_dict(to_dict(s)) == s


@pytest.mark.parametrize("semaphore, words", [
    ({"id": "I", "type": "timeline", "payload_of": "X"}, "unknown semaphore 'X'"),
    ({"id": "I", "type": "binary", "payload_of": "T"}, "'I' is binary, the payload it imports ('T') timeline"),
    ({"id": "I", "type": "timeline", "payload_of": "T", "initial": 3}, "no `initial` of its own"),
    ({"id": "I", "type": "timeline", "payload_of": "I"}, "imports its own payload"),
])
def test_a_payload_import_is_checked(semaphore, words):
    doc = {"format": FMT, "name": "s", "semaphores": [{"id": "T", "type": "timeline"}, semaphore]}
    with pytest.raises(InvalidStream) as raised:
        from_dict(doc)
    assert any(words in e.message and e.path.startswith("semaphores[1]") for e in raised.value.errors), \
        raised.value.lines()


@pytest.mark.parametrize("cmd, bad", [
    ({"cmd": "copy", "src": "A", "dst": "B", "regions": [{"src_offset": 0, "dst_offset": 0, "size": 16}]},
     {"size": 16}),
    ({"cmd": "fill", "dst": "A", "value": 1}, {"regions": []}),
    ({"cmd": "dispatch", "shader": "k", "bindings": [{"buffer": "A"}]}, {"groups": "many"}),
    ({"cmd": "barrier"}, {"src_stage": 7}),
])
def test_each_command_kind_is_validated_by_its_own_schema(cmd, bad):
    """The fast validator checks a command by the schema of its `cmd` (loader._operation_validator): a field that
    schema refuses is an error at the command's path, as the whole schema says."""
    doc = {"format": ir.FORMAT, "buffers": [{"id": "A", "size": 64}, {"id": "B", "size": 64}],
           "shaders": {"k": {"bindings": ["read_write"]}}, "command_buffers": {"cb0": [cmd]},
           "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}}
    from_dict(doc)
    with pytest.raises(InvalidStream) as raised:
        from_dict({**doc, "command_buffers": {"cb0": [{**cmd, **bad}]}})
    assert all(e.path.startswith("command_buffers.cb0[0]") for e in raised.value.errors), raised.value.lines()


# ---- repeated operations: each distinct one is checked and built once ---------------------------


def _repeated(commands: dict) -> dict:
    return {"format": FMT, "buffers": [{"id": "A", "size": 64}], "command_buffers": commands,
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": list(commands)}]}}


@pytest.mark.parametrize("bad, words", [
    ({"cmd": "fill", "dst": "X"}, "unknown buffer 'X'"),  # the builder's check
    ({"cmd": "fill", "dst": "A", "size": -1}, "must be >= 0"),  # the schema's
    ({"cmd": "fill", "dst": "A", "value": 2 ** 70}, "past Vulkan's 64"),  # the value checks'
])
def test_a_repeated_error_is_reported_at_each_path(bad, words):
    good = {"cmd": "fill", "dst": "A"}
    doc = _repeated({"cb0": [good, dict(bad), good, dict(bad)], "cb1": [dict(bad)]})
    with pytest.raises(InvalidStream) as raised:
        from_dict(doc)
    paths = {e.path.partition("]")[0] + "]" for e in raised.value.errors if words in e.message}
    assert paths == {"command_buffers.cb0[1]", "command_buffers.cb0[3]", "command_buffers.cb1[0]"}, \
        raised.value.lines()


@pytest.mark.parametrize("valid, invalid", [("0", "0.0"), ("1", "true")])
def test_equal_in_python_is_not_equal_json(valid, invalid):
    """0 == 0.0 == False in Python: a float or a boolean after an equal integer is still refused."""
    text = json.dumps(_repeated({"cb0": [{"cmd": "fill", "dst": "A", "offset": "VALID"},
                                         {"cmd": "fill", "dst": "A", "offset": "INVALID"}]}))
    text = text.replace('"VALID"', valid).replace('"INVALID"', invalid)
    with pytest.raises(InvalidStream) as raised:
        loads(text)
    assert [e.path for e in raised.value.errors] == ["command_buffers.cb0[1].offset"], raised.value.lines()


def test_one_json_value_as_command_and_as_host_op():
    """A host op's JSON in a command buffer is refused there, though the same JSON is a valid host op."""
    submit = {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}
    doc = {"format": FMT, "command_buffers": {"cb0": [dict(submit)]}, "threads": {"main": [dict(submit)]}}
    with pytest.raises(InvalidStream) as raised:
        from_dict(doc)
    assert [(e.path, e.message) for e in raised.value.errors] == \
        [("command_buffers.cb0[0]", "'cmd' is a required property")]


def test_equal_commands_are_one_object_and_the_document_is_left_as_it_was():
    fill = {"cmd": "fill", "dst": "A", "value": 7}
    doc = _repeated({"cb0": [fill, dict(fill), {**fill, "value": 8}]})
    before = json.loads(json.dumps(doc))
    second = doc["command_buffers"]["cb0"][1]
    commands = from_dict(doc).command_buffers[0].commands
    assert commands[0] is commands[1] and commands[1] == ir.Fill("A", 0, 64, 7) and commands[2].value == 8
    assert doc == before and doc["command_buffers"]["cb0"][1] is second


def test_operations_in_a_tuple_are_checked_as_in_a_list():
    """A Python document may hold its commands in a tuple: each is checked by its kind's schema all the same."""
    fill = {"cmd": "fill", "dst": "A"}
    assert from_dict(_repeated({"cb0": (fill, fill)})) == from_dict(_repeated({"cb0": [fill, fill]}))
    with pytest.raises(InvalidStream):
        from_dict(_repeated({"cb0": (fill, {**fill, "size": -1})}))


def test_compile_schema_compiles_every_operations_schema_ahead():
    """What the mutation gate's forking server does once for all its children: afterwards loading a stream
    compiles nothing."""
    from vkverify.model import loader

    loader.compile_schema()
    defs = loader.schema()["$defs"]
    kinds = sum(len(defs[name]["properties"][kind]["enum"]) for kind, name in (("cmd", "command"), ("op", "host_op")))
    compiled = loader._operation_validator.cache_info().currsize
    assert compiled == kinds and loader._fast_validator.cache_info().currsize == 1
    load(CORPUS[0])
    assert loader._operation_validator.cache_info().currsize == compiled
