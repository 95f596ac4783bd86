"""pytest plugin (entry point `pytest11: vkverify`): vkverify in an engine's tests with no glue.

    def test_frame(vk_runtime, assert_race_free):
        run_my_engine(vk_runtime)          # a hazard raises HazardError at its submit
        assert_race_free(vk_runtime)       # the whole stream, host reads after the last submit included

The device: `--vk-device`, else the ini key `vk_device`, else VKVERIFY_DEVICE, else Lavapipe (an
index or a part of the name); the report header names it. A failing test's recorded stream is
written to `--vk-streams` (default .vkverify/streams) for `vkverify explain` and `vkverify graph`;
with `--vk-streams-all`, every test's (CI artifacts).
Vulkan is imported only when `vk_runtime` is used, so loading the plugin costs nothing.

Under `vkverify mutate -- CMD` (VKVERIFY_RUNTIME_MUTATE, vkverify/mutations/live.py): the listing run
names the tests collected and their files; a mutant's run keeps only the tests its selection names
(those that reached its call site), and stops at its first failing test, as -x does: the command has
then failed, which is all the mutant's verdict needs. Under VKVERIFY_FORKS the run collects once, then
forks a child per mutant after collection (vkverify/mutations/forks.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

__all__ = ["assert_race_free", "device", "pytest_addoption", "pytest_collection_modifyitems", "pytest_configure",
           "pytest_report_header", "pytest_runtest_makereport", "pytest_terminal_summary", "pytest_unconfigure",
           "vk_runtime"]

DEFAULT_DEVICE = "llvmpipe"
REPORTS = pytest.StashKey[list]()  # a test's reports: its runtime's teardown reads whether it failed
WRITTEN = pytest.StashKey[list]()  # (test id, device, path) of each failing test's recorded stream
SERVING = pytest.StashKey[object]()  # the gate's channel (forks.Channel) where this run forks the mutants' runs


def pytest_addoption(parser) -> None:
    group = parser.getgroup("vkverify")
    group.addoption("--vk-device", default=None,
                    help="Vulkan device of vk_runtime: an index or part of its name (default: ini vk_device, "
                         f"VKVERIFY_DEVICE, else {DEFAULT_DEVICE})")
    group.addoption("--vk-streams", default=None,
                    help="directory for the recorded streams of failing tests (default .vkverify/streams)")
    group.addoption("--vk-streams-all", action="store_true",
                    help="write every test's recorded stream there, the passing ones too (CI artifacts)")
    parser.addini("vk_device", "Vulkan device of vk_runtime (as --vk-device)", default=None)


def device(config) -> tuple[str, str]:
    """(the device asked for, where it was asked)."""
    for value, origin in ((config.getoption("vk_device"), "--vk-device"), (config.getini("vk_device"), "ini vk_device"),
                          (os.environ.get("VKVERIFY_DEVICE"), "VKVERIFY_DEVICE")):
        if value:
            return value, origin
    return DEFAULT_DEVICE, "default"


def pytest_configure(config) -> None:
    config.stash[WRITTEN] = []
    if os.environ.get("VKVERIFY_FORKS"):  # forks.FORKS, not imported unless set
        from vkverify.mutations.forks import channel, refuse

        serving = config.stash[SERVING] = channel()
        if getattr(config.option, "numprocesses", None) or getattr(config.option, "dist", "no") != "no":
            refuse(serving, "pytest-xdist runs the tests in processes of its own")
            pytest.exit("vkverify mutate: pytest-xdist: no forks", returncode=0)


def pytest_report_header(config) -> str:
    name, origin = device(config)
    return f"vkverify: vk_runtime device {name!r} ({origin})"


def _mutation():
    """The gate's selection for this run (live.Selection), None outside `vkverify mutate`."""
    if not os.environ.get("VKVERIFY_RUNTIME_MUTATE"):  # live.ENV, not imported unless set: loading stays cheap
        return None
    from vkverify.mutations.live import selection

    return selection()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected theirs
def pytest_collection_modifyitems(config, items) -> None:
    serving = config.stash.get(SERVING, None)
    if serving is not None:
        from vkverify.mutations.forks import serve

        # Children run at once: each captures into files of its own, never the server's.
        capture = config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.stop_global_capturing()
        if not serve(serving):  # the gate closed the channel: this process runs no test
            items[:] = []
            return
        if capture is not None:
            capture.start_global_capturing()
            capture.suspend_global_capture()  # as collection left it
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if hasattr(reporter, "_session_start"):  # its summary line times this run, not the server's (pytest >= 8.4)
            reporter._session_start = type(reporter._session_start)()
    chosen = _mutation()
    if chosen is None:
        return
    if chosen.target == "list":
        from vkverify.mutations.live import list_tests

        list_tests(chosen.file, {item.nodeid: str(item.path) for item in items})
    elif chosen.tests:
        keep = set(chosen.tests)
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in keep])
        items[:] = [item for item in items if item.nodeid in keep]
        if not items:
            raise pytest.UsageError(f"vkverify mutate: none of the tests this mutant runs was collected: "
                                    f"{', '.join(chosen.tests)}")


def pytest_unconfigure(config) -> None:
    chosen = _mutation()
    if chosen is not None and chosen.target == "list":
        from vkverify.mutations.live import list_modules

        list_modules(chosen.file, _runner_packages(config))


def _runner_packages(config) -> set[str]:
    """The test runner's top-level packages: pytest's, vkverify's and those of each plugin's distribution."""
    found = {"_pytest", "pytest", "pluggy", "vkverify", "vulkan"}  # vulkan: the runtime's bindings
    for _, dist in config.pluginmanager.list_plugin_distinfo():
        found.update(name for name in (Path(f).parts[0].removesuffix(".py") for f in dist.files or ())
                     if name.isidentifier())
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    item.stash.setdefault(REPORTS, []).append(report)
    if report.failed and (chosen := _mutation()) is not None and chosen.target != "list":
        item.session.shouldfail = "vkverify mutate: the mutant's first failing test ends its run"
    return report


@pytest.fixture
def vk_runtime(request):
    """A Runtime on the device the options name with queues q0 and q1 (they share a VkQueue where
    the device has one), online checking on unless VKVERIFY_CHECK=0; closed after the test, its
    recorded stream written to a file when the test failed. Skips the test when there is no device."""
    from vkverify.runtime import NoDevice, Runtime

    try:
        rt = Runtime(("q0", "q1"), device=device(request.config)[0],
                     check=os.environ.get("VKVERIFY_CHECK", "1") == "1", name="vk_runtime")
    except NoDevice as error:
        pytest.skip(f"no Vulkan device: {error}")
    try:
        yield rt
    finally:
        try:
            failed = any(r.failed for r in request.node.stash.get(REPORTS, []))
            if failed or request.config.getoption("vk_streams_all"):
                _write_stream(request, rt)
        finally:
            rt.close()


def _write_stream(request, rt) -> None:
    from vkverify.model import dumps

    directory = Path(request.config.getoption("vk_streams") or request.config.rootpath / ".vkverify" / "streams")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (re.sub(r"[^\w.-]+", "_", request.node.nodeid) + ".json")
    path.write_text(dumps(rt.stream()))
    request.config.stash[WRITTEN].append((request.node.nodeid, rt.device.name, path))


def pytest_terminal_summary(terminalreporter, config) -> None:
    for nodeid, name, path in config.stash.get(WRITTEN, []):
        terminalreporter.write_line(f"vkverify: {nodeid} failed on {name}; its recorded stream: {path} "
                                    f"(vkverify explain {path} FIRST SECOND; vkverify graph {path})")


@pytest.fixture
def assert_race_free():
    """A callable taking a stream or a Runtime: fails the test with the checker's findings as text,
    each operation named with the program's file:line."""
    def check_stream(subject) -> None:
        from vkverify.check import check
        from vkverify.report import FileResult, format_text

        if hasattr(subject, "happens_before"):  # a Runtime: its incremental state, no re-check
            findings, name = subject.findings(), subject.doc["name"]
        else:
            stream = subject.stream() if hasattr(subject, "stream") else subject
            findings, name = check(stream), stream.name
        if findings:
            loaded = subject.stream() if hasattr(subject, "happens_before") else stream  # the lines of its ops
            pytest.fail(format_text([FileResult("<recorded>", name, findings, loaded=loaded)]), pytrace=False)
    return check_stream
