"""The GFXReconstruct importer: a small Vulkan program captured at test time, imported and checked;
bad captures rejected with one line and exit 2; the flag tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import python_path, require_gfxreconstruct

from vkverify.check import check
from vkverify.cli import main
from vkverify.importer import CaptureError, capture_env, import_capture
from vkverify.importer.flags import access_names, memory_kind, stage_names
from vkverify.model import ir
from vkverify.model.data import data_bytes

ROOT = Path(__file__).resolve().parent.parent
# tests/_lavapipe.py runs `add` (c = a + b) with a compute->host barrier after the dispatch and a fence wait.
PROGRAM = """
import numpy as np
from tests._lavapipe import ComputeDevice
from vkverify.shaders import interface, load_spirv, pack_push
d = ComputeDevice()
n = 16
d.run(load_spirv("add"), [np.arange(n, dtype=np.float32)] * 2 + [np.zeros(n, np.float32)],
      pack_push(interface("add"), [n]), (1, 1, 1))
d.close()
"""


def capture(program: str, out: Path, **layer: str) -> Path:
    """`program` run under the capture layer, with the layer settings `layer` on top of capture_env's."""
    require_gfxreconstruct()
    # Compressed, as captures made with the layer's defaults are: the import decompresses them to read
    # the fill bytes and push constants.
    env = {**capture_env(out, os.environ), "GFXRECON_CAPTURE_COMPRESSION_TYPE": "LZ4", "PYTHONPATH": python_path(),
           **layer}
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0 or not out.exists():
        pytest.skip(f"the program did not run under the capture layer: {done.stderr.strip()[-300:]}")
    return out


@pytest.fixture(scope="module")
def add_capture(tmp_path_factory) -> Path:
    return capture(PROGRAM, tmp_path_factory.mktemp("cap") / "add.gfxr")


def test_gfxr_maps_dispatch_barrier_submit_and_host_writes(add_capture):
    stream, summary = import_capture(add_capture)
    (cb,) = [cb for cb in stream.command_buffers if cb.commands]
    dispatch, barrier = cb.commands
    assert dispatch.label.startswith("vkCmdDispatch #")
    # The library's SPIR-V, word for word: the kernel itself, with the push constants the program pushed.
    assert (dispatch.shader, dispatch.push) == ("add", (16,))
    assert [b.access for b in dispatch.bindings] == ["read", "read", "write"]  # from the SPIR-V's decorations
    assert (barrier.src_stage, barrier.src_access) == ({"compute_shader"}, {"shader_write"})
    assert (barrier.dst_stage, barrier.dst_access) == ({"host"}, {"host_read"})
    assert summary.host_ops["submit"] == 1 and summary.host_ops["wait_fences"] == 1
    assert summary.host_ops["host_write"] >= 3  # the three uploads, from the fill-memory records
    first = stream.threads[0].ops[0]
    assert data_bytes(first.data, first.size, first.buffer, "") == np.arange(16, dtype=np.float32).tobytes()
    assert {b.memory for b in stream.buffers} == {"device_host_visible"}  # Lavapipe's one memory type
    assert check(stream) == []


def test_jsonl_assumes_host_writes_and_read_write_without_spirv(add_capture, tmp_path):
    jsonl = tmp_path / "add.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(add_capture)], check=True, capture_output=True)
    stream, summary = import_capture(jsonl)
    assert summary.assumed and "host write of the whole mapped range" in summary.assumed[0]
    assert any("read_write" in w for w in summary.warnings)
    dispatch = next(c for cb in stream.command_buffers for c in cb.commands if c.label.startswith("vkCmdDispatch"))
    assert {b.access for b in dispatch.bindings} == {"read_write"}


def test_cli_import_and_check_accept_captures(add_capture, tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["import", str(add_capture), "-o", str(out)]) == 0
    assert "imported" in capsys.readouterr().err
    assert main(["check", str(out)]) == 0
    assert main(["check", str(add_capture)]) == 0


def test_a_long_import_says_how_far_it_got_unless_quiet(add_capture, tmp_path, capsys, monkeypatch):
    """Progress lines on a capture of PROGRESS_CALLS calls or more (made 20 here: the capture has more)."""
    from vkverify import importer
    from vkverify.importer import translate

    monkeypatch.setattr(translate, "PROGRESS_CALLS", 20)
    monkeypatch.setattr(importer, "PROGRESS_CALLS", 20)
    out = tmp_path / "s.json"
    assert main(["import", str(add_capture), "-o", str(out)]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("import: ")]
    assert lines[:2] == ["import: 20 calls read", "import: 40 calls read"]
    assert lines[-2].endswith("calls read: inferring the host reads, then the stream")
    assert lines[-1] == f"import: writing {out}"
    assert main(["import", "-q", str(add_capture), "-o", str(out)]) == 0
    assert "import: " not in capsys.readouterr().err


# A program that creates an instance but no device: a capture with nothing to import.
NO_DEVICE = """
import vulkan as vk
instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(), None)
vk.vkEnumeratePhysicalDevices(instance)
vk.vkDestroyInstance(instance, None)
"""


@pytest.fixture(scope="module")
def bad_captures(add_capture, tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("bad")
    truncated = tmp / "cut.gfxr"
    truncated.write_bytes(add_capture.read_bytes()[:3000])
    jsonl = tmp / "full.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(add_capture)], check=True, capture_output=True)
    lines = jsonl.read_text().splitlines()
    other = tmp / "other.jsonl"
    other.write_text("\n".join([lines[0].replace('"json-version":"0.8.0"', '"json-version":"1.0.0"')] + lines[1:]))
    return {"truncated": truncated, "json-version": other, "vkCreateDevice": capture(NO_DEVICE, tmp / "nodev.gfxr")}


@pytest.mark.parametrize("case", ["truncated", "json-version", "vkCreateDevice"])
def test_bad_captures_exit_2_with_one_line(bad_captures, capsys, case):
    path = bad_captures[case]
    with pytest.raises(CaptureError):
        import_capture(path)
    for argv in (["import", str(path)], ["check", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and case.split("-")[0].lower() in err[0].lower() and "Traceback" not in err[0]
    # The installed process too: capsys does not see what gfxrecon-convert or the interpreter write to fd 2.
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "check", str(path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and not done.stdout, done.stderr


def test_flag_tables():
    assert stage_names(0x800 | 0x1000) == ["compute_shader", "transfer"]
    assert stage_names(0x80) == ["none"]  # fragment shader: no compute or transfer work there
    assert stage_names(0x100000000 | 0x800000000) == ["clear", "copy"]
    assert access_names(0x40 | 0x2000) == ["host_read", "shader_write"]
    assert access_names(0x400000000) == ["shader_storage_write"]
    # Sync2's 64-bit masks come as names.
    assert stage_names("VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT|VK_PIPELINE_STAGE_2_COPY_BIT") == [
        "compute_shader", "copy"]
    assert access_names("VK_ACCESS_2_NONE") == ["none"]
    assert [memory_kind(f) for f in (0x1, 0x6, 0x2, 0xF)] == [
        "device_local", "host_coherent", "host_cached", "device_host_visible"]


def _jsonl(path: Path, calls: list[tuple[str, dict]]) -> Path:
    """gfxrecon-convert's JSON lines for `calls` (name, args), numbered from 1, all returning VK_SUCCESS."""
    lines = [{"header": {"json-version": "0.8.0"}}] + [
        {"index": i, "vkFunc": {"name": name, "return": "VK_SUCCESS", "args": args}}
        for i, (name, args) in enumerate(calls, start=1)]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    return path


def _timeline(device: int, handle: int) -> tuple[str, dict]:
    return "vkCreateSemaphore", {"device": device, "pSemaphore": handle, "pCreateInfo": {"pNext": {
        "sType": "VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO", "pNext": None,
        "semaphoreType": "VK_SEMAPHORE_TYPE_TIMELINE", "initialValue": 0}}}


def _submit(queue: int, wait: list[tuple[int, int]], signal: list[tuple[int, int]]) -> tuple[str, dict]:
    def infos(ops):
        return [{"semaphore": s, "value": v, "stageMask": "VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT"} for s, v in ops]
    return "vkQueueSubmit2", {"queue": queue, "fence": "VK_NULL_HANDLE", "pSubmits": [{
        "pWaitSemaphoreInfos": infos(wait), "pCommandBufferInfos": [], "pSignalSemaphoreInfos": infos(signal)}]}


def test_a_wait_captured_before_the_submit_that_ended_it_follows_that_submit(tmp_path):
    # Calls are captured as they return: the host's wait for T=1 (#4) is written before the submit that
    # signals it (#5). Kept in capture order on one thread, the wait would never be satisfied.
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 3}),
             _timeline(2, 4),
             ("vkWaitSemaphores", {"device": 2, "pWaitInfo": {"flags": 0, "semaphoreCount": 1, "pSemaphores": [4],
                                                              "pValues": [1]}}),
             _submit(3, [], [(4, 1)])]
    stream, _ = import_capture(_jsonl(tmp_path / "late.jsonl", calls))
    assert [op.label for op in stream.threads[0].ops] == ["vkQueueSubmit2 #5", "vkWaitSemaphores #4"]
    assert check(stream) == []


def test_a_counter_read_imports_as_what_it_read_and_waits_for_it(tmp_path):
    # A polling loop: #4 reads 0 (nothing), #5 and #6 read 1 (one op: the second adds nothing); captured before
    # the submit that signals 1 (#7), the read follows it, as a wait does.
    read = ("vkGetSemaphoreCounterValue", {"device": 2, "semaphore": 4})
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 3}),
             _timeline(2, 4), (read[0], {**read[1], "pValue": 0}), (read[0], {**read[1], "pValue": 1}),
             (read[0], {**read[1], "pValue": 1}), _submit(3, [], [(4, 1)])]
    stream, _ = import_capture(_jsonl(tmp_path / "poll.jsonl", calls))
    assert [op.label for op in stream.threads[0].ops] == ["vkQueueSubmit2 #7", "vkGetSemaphoreCounterValue #5"]
    counter_read = stream.threads[0].ops[1]
    assert type(counter_read) is ir.GetSemaphoreCounterValue
    assert counter_read.waits == (ir.SemaphoreValue("sem4", 1),)
    assert check(stream) == []


def test_json_lines_out_of_index_order_are_read_in_index_order(tmp_path):
    # A hand-made .jsonl may list its calls out of order: the host ops follow the call indices, as a capture's do.
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 3}),
             _timeline(2, 4), _submit(3, [], [(4, 2)]), _submit(3, [], [(4, 1)])]
    path = _jsonl(tmp_path / "shuffled.jsonl", calls)
    header, *lines = path.read_text().splitlines()
    path.write_text("\n".join([header, *lines[:3], lines[4], lines[3]]))  # #5 before #4
    stream, _ = import_capture(path)
    assert [op.label for op in stream.threads[0].ops] == ["vkQueueSubmit2 #4", "vkQueueSubmit2 #5"]


def test_a_semaphore_exported_and_imported_as_an_fd_is_one_semaphore(tmp_path):
    # gpu0 signals its timeline 5; gpu1 imports it as its semaphore 6 and waits on it.
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkCreateDevice", {"physicalDevice": 1, "pDevice": 3}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 7}),
             ("vkGetDeviceQueue", {"device": 3, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 8}),
             _timeline(2, 5), _timeline(3, 6),
             ("vkGetSemaphoreFdKHR", {"device": 2, "pGetFdInfo": {"semaphore": 5}, "pFd": 11}),
             ("vkImportSemaphoreFdKHR", {"device": 3, "pImportSemaphoreFdInfo": {"semaphore": 6, "fd": 11}}),
             _submit(7, [], [(5, 1)]), _submit(8, [(6, 1)], [])]
    stream, _ = import_capture(_jsonl(tmp_path / "fd.jsonl", calls))
    assert [s.id for s in stream.semaphores] == ["sem5"]
    (signal, wait) = stream.threads[0].ops
    assert signal.batches[0].signals[0].semaphore == wait.batches[0].waits[0].semaphore == "sem5"
    assert check(stream) == []  # without the import, gpu1's wait for sem6 is never satisfied


@pytest.mark.parametrize("how", ["win32", "temporary", "outside"])
def test_a_semaphore_imported_as_a_win32_handle_or_not_from_the_capture(tmp_path, how):
    """A Win32 handle exported and imported is one semaphore as an fd is; a temporary import, or one of a handle the
    capture did not export, is not in the stream: the verdict is partial, and the wait is never satisfied."""
    handle = {"semaphore": 6, "handle": 11, "flags": 1 if how == "temporary" else 0}
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 7}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 1, "pQueue": 8}),
             _timeline(2, 5), _timeline(2, 6),
             ("vkGetSemaphoreWin32HandleKHR", {"device": 2, "pGetWin32HandleInfo": {"semaphore": 5},
                                               "pHandle": 12 if how == "outside" else 11}),
             ("vkImportSemaphoreWin32HandleKHR", {"device": 2, "pImportSemaphoreWin32HandleInfo": handle}),
             _submit(7, [], [(5, 1)]), _submit(8, [(6, 1)], [])]
    stream, summary = import_capture(_jsonl(tmp_path / "win32.jsonl", calls))
    (signal, wait) = stream.threads[0].ops
    one = signal.batches[0].signals[0].semaphore == wait.batches[0].waits[0].semaphore
    assert (one, dict(summary.unmodelled)) == (how == "win32", {} if how == "win32" else
                                               {"vkImportSemaphoreWin32HandleKHR": 1})
    assert any("unmodelled: 1 vkImportSemaphoreWin32HandleKHR" in line for line in summary.partial_lines()) == \
        (how != "win32")
    assert {f.kind for f in check(stream)} == (set() if how == "win32" else {"wait_never_satisfied"})


# Two histogram dispatches (the library's kernel: its bins only through atomicAdd) on q0 and q1 with nothing
# between them, then a plain read of the bins (copy) after q0's compute -> compute barrier alone.
HISTOGRAMS = """
import numpy as np
from vkverify.runtime import Runtime
n, nbins = 1024, 16
with Runtime(("q0", "q1"), check=False) as rt:
    rt.create_buffer("Src", 4 * n, "host_coherent")
    rt.create_buffer("Bins", 4 * nbins, "host_coherent")
    rt.create_buffer("Out", 4 * nbins)
    rt.create_fence("F0")
    rt.create_fence("F1")
    rt.host_write("Src", np.arange(n, dtype=np.uint32).tobytes())
    rt.host_write("Bins", bytes(4 * nbins))
    cb0 = rt.command_buffer("cb0")
    cb0.cmd_dispatch("histogram", ["Src", "Bins"], (4, 1, 1), push=[n, nbins])
    cb0.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "compute_shader", "shader_storage_read")
    cb0.cmd_dispatch("copy", ["Bins", "Out"], (1, 1, 1), push=[nbins])
    cb1 = rt.command_buffer("cb1")
    cb1.cmd_dispatch("histogram", ["Src", "Bins"], (4, 1, 1), push=[n, nbins])
    rt.submit("q1", ["cb1"], fence="F1")
    rt.submit("q0", ["cb0"], fence="F0")
    rt.wait_fences(["F0", "F1"])
"""


def test_atomic_bindings_import_as_atomic_and_race_only_with_the_plain_read(tmp_path):
    """The histogram's bins come out "atomic" (shaders/uses.py: only OpAtomic* touch them), so the two
    unordered histograms give no finding (docs/format.md rule 10); the copy's plain read of the bins is ordered
    after q0's histogram only: one raw, from q1's."""
    stream, _ = import_capture(capture(HISTOGRAMS, tmp_path / "histograms.gfxr"))
    assert {q.id for d in stream.devices for q in d.queues} >= {"q0", "q1"}
    dispatches = {cb.id: [c for c in cb.commands if isinstance(c, ir.Dispatch)] for cb in stream.command_buffers}
    histograms = [c for cs in dispatches.values() for c in cs if c.shader == "histogram"]
    assert [[b.access for b in c.bindings] for c in histograms] == [["read", "atomic"]] * 2
    found = [(f.kind, f.first, f.second) for f in check(stream)]
    (cb0,) = [cb for cb, cs in dispatches.items() if [c.shader for c in cs] == ["histogram", "copy"]]
    (cb1,) = [cb for cb, cs in dispatches.items() if [c.shader for c in cs] == ["histogram"]]
    assert found == [("raw", f"{cb1}[0]", f"{cb0}[2]")]


def test_a_host_wait_for_a_value_another_thread_saw_first_is_kept(tmp_path):
    """Each capture thread's waits stand on their own: the reader's wait for the value the main thread saw first
    is what orders its write of S after the copy that read S (with one table of values seen for every thread,
    the wait was dropped, and the kept-apart threads gave a false war and waw on S)."""
    program = (Path(__file__).parent / "two_waiters_program.py").read_text()
    stream, _ = import_capture(capture(program, tmp_path / "two_waiters.gfxr"), threads=True)
    (reader,) = [t for t in stream.threads if t.id != "main"]
    assert [type(op).__name__ for op in reader.ops][:2] == ["WaitSemaphores", "HostAccess"]
    write = reader.ops[1]
    assert write.op == "host_write"
    # The program's join of the reader before its teardown is not in the capture: the teardown's destroys may
    # come first in some schedule (docs/format.md, "Several host threads"). Nothing else is found.
    found = check(stream)
    assert found and {(f.kind, f.second) for f in found} <= {("use_after_destroy", f"main[{i}]") for i in range(9)}
