"""`vkverify mutate` end to end: the corpus kill score, shards, JUnit, the cache, the cmd reader."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from vkverify.cli import main

from .conftest import CORPUS, EXAMPLES, ROOT

SMALL = [str(ROOT / "tests" / "corpus" / n) for n in
         ("13-barrier-chain.json", "19-fence-wait-then-reuse-staging.json", "44-two-queues-timeline-semaphore.json")]


def _file(prefix: str) -> str:
    return str(next(p for p in CORPUS if p.name.startswith(prefix)))


def mutate(capsys, *args) -> tuple[int, dict]:
    code = main(["mutate", "--format", "json", *map(str, args)])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    """The acceptance run: every target over the corpus and the examples, the checker and the simulator
    as readers (the replay readers run on a few streams below: Lavapipe replays a mutant in ~0.3 s)."""
    out = tmp_path_factory.mktemp("mutate")
    junit = out / "mutants.xml"
    argv = ["mutate", "--format", "json", "-j", "2", "--cache", str(out), "--junit", str(junit),
            "--readers", "checker,sim", "--target", "all", "--fail-under", "0", *map(str, CORPUS + EXAMPLES)]
    with pytest.MonkeyPatch.context() as mp:
        captured = []
        mp.setattr("builtins.print", lambda *a, **k: captured.append(a[0]) if k.get("file") is None else None)
        code = main(argv)
    return code, json.loads(captured[-1]), junit


def test_checker_kills_every_mutant_of_the_hazard_free_streams(corpus_run):
    code, report, _ = corpus_run
    clean = {s["file"] for s in report["streams"] if s["clean"]}
    judged = [m for m in report["mutants"] if m["file"] in clean]
    assert len(clean) > 40 and len(judged) > 150
    survivors = [m["id"] for m in judged if not m["verdicts"]["checker"]["killed"]]
    assert survivors == []
    assert report["score"] == 100.0 and code == 0
    assert {"raw", "waw", "war", "semaphore", "fence", "keepalive", "host"} <= report["matrix"].keys()


def test_simulator_kills_every_mutant_of_the_hazard_free_streams_it_does_not_name_value_coinciding(corpus_run):
    _, report, _ = corpus_run
    clean = {s["file"] for s in report["streams"] if s["clean"]}
    verdicts = [(m["id"], m["verdicts"]["sim"]) for m in report["mutants"] if m["file"] in clean]
    assert [i for i, v in verdicts if not v["killed"] and not v["value_coinciding"]] == []
    coinciding = [v["detail"] for _, v in verdicts if v["value_coinciding"]]
    # Each names the new finding and the simulator's reason; most mutants are killed by a changed digest.
    assert all(d.startswith("value-coinciding: ") and ": " in d.removeprefix("value-coinciding: ") for d in coinciding)
    assert all(v["killed"] is None for _, v in verdicts if v["value_coinciding"])
    assert len(coinciding) < len(verdicts) / 4
    sim = dict(verdicts)
    # A dropped signal blocks its waiter: the simulator sees the waiter's results never appear.
    assert "main[3] never runs" in sim[_file("22-") + ":drop_signal:main[1].batches[0].signal[0]"]["detail"]
    # A fill of zeros into memory that starts as zeros: a stale read sees the same values.
    assert "already held" in sim[_file("37-") + ":drop_barrier:cb0[1]"]["detail"]


def test_junit_has_the_required_fields(corpus_run):
    _, report, junit = corpus_run
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and int(root.get("tests")) == len(report["mutants"])
    assert int(root.get("failures")) == 0
    suites = root.findall("testsuite")
    assert suites and all(s.get("name") and s.get("tests") and s.get("failures") is not None for s in suites)
    cases = root.findall("testsuite/testcase")
    assert len(cases) == len(report["mutants"]) and all(c.get("name") for c in cases)


def test_a_survivor_is_a_junit_failure_and_fails_the_run(capsys, tmp_path):
    junit = tmp_path / "m.xml"
    code = main(["mutate", "--no-cache", "-j", "1", "--readers", "", "--junit", str(junit), SMALL[0],
                 "--", sys.executable, "-c", "0"])
    assert code == 1 and "survivors:" in capsys.readouterr().out
    root = ET.parse(junit).getroot()
    assert int(root.get("failures")) == int(root.get("tests")) > 0
    assert len(root.findall("testsuite/testcase/failure")) == int(root.get("tests"))


def test_survivors_as_github_annotations_and_sarif(capsys, tmp_path):
    """Each survivor is one `::error` annotation and one SARIF result (valid 2.1.0) at its stream file."""
    from tests.test_sarif import VALIDATOR

    sarif = tmp_path / "m.sarif"
    code = main(["mutate", "--no-cache", "-j", "1", "--readers", "", "--format", "github", "--sarif", str(sarif),
                 SMALL[0], "--", sys.executable, "-c", "0"])
    lines = capsys.readouterr().out.splitlines()
    doc = json.loads(sarif.read_text())
    VALIDATOR.validate(doc)
    results = doc["runs"][0]["results"]
    assert code == 1 and lines and all(x.startswith(f"::error file={SMALL[0]},title=VKM001 ") for x in lines)
    assert len(results) == len(lines) and all(r["ruleId"] == "VKM001" and "survived" in r["message"]["text"]
                                              for r in results)


def test_shards_together_run_exactly_the_unsharded_mutants(capsys, tmp_path):
    ids = {}
    for shard in (None, "1/2", "2/2"):
        extra = ["--shard", shard] if shard else []
        code, report = mutate(capsys, "--no-cache", "-j", "1", *extra, *SMALL)
        assert code == 0
        ids[shard] = [m["id"] for m in report["mutants"]]
    assert ids["1/2"] and ids["2/2"] and not set(ids["1/2"]) & set(ids["2/2"])
    assert sorted(ids["1/2"] + ids["2/2"]) == sorted(ids[None])


def test_one_files_hash_keys_the_code_and_the_imports(tmp_path):
    """vkverify's code (the stream verdicts' key) and the user files a command imported (the command gate's
    key) are hashed by one function: a file's path and contents count, a missing file as missing."""
    from vkverify.mutations.runner import code_hash, files_hash

    user = tmp_path / "user.py"
    user.write_text("")
    empty = files_hash([str(user)])
    user.write_text("x = 1\n")
    assert len({empty, files_hash([str(user)]), files_hash([str(tmp_path / "gone.py")])}) == 3
    package = ROOT / "vkverify"
    assert code_hash() == files_hash(sorted(package.rglob("*.py")), package)


def test_the_cache_skips_unchanged_mutants(capsys, tmp_path):
    _, first = mutate(capsys, "--cache", tmp_path, "-j", "1", *SMALL)
    _, second = mutate(capsys, "--cache", tmp_path, "-j", "1", *SMALL)
    assert first["stats"] == {"executed": len(first["mutants"]), "cached": 0}
    assert second["stats"] == {"executed": 0, "cached": len(first["mutants"])}
    assert [m["verdicts"] for m in second["mutants"]] == [m["verdicts"] for m in first["mutants"]]


def test_cmd_reader_kills_when_the_command_fails(capsys, tmp_path):
    # Fails exactly when given a mutant: reads the mutated stream and exits 1 if the checker finds anything.
    script = ("import os, sys; from vkverify.check import check; from vkverify.model import load; "
              "sys.exit(1 if check(load(os.environ['VKVERIFY_MUTANT_STREAM'])) else 0)")
    code, report = mutate(capsys, "--no-cache", "-j", "2", "--target", "semaphore", SMALL[2],
                          "--", sys.executable, "-c", script)
    assert code == 0 and report["readers"] == ["checker", "cmd"]
    killed = {"killed": True, "detail": "exit 1", "value_coinciding": False, "killed_by": None}
    assert report["mutants"] and all(m["verdicts"]["cmd"] == killed for m in report["mutants"])
    n = len(report["mutants"])
    assert report["matrix"]["semaphore"] == {"mutants": n, "checker": n, "checker/judged": n, "cmd": n, "cmd/judged": n}


def test_cmd_reader_gets_the_selector_of_each_mutant(capsys, tmp_path):
    log = tmp_path / "log"
    script = f"import os; open({str(log)!r}, 'a').write(os.environ.get('VKVERIFY_MUTATE', 'clean') + '\\n')"
    mutate(capsys, "--no-cache", "-j", "1", "--target", "fence", SMALL[1], "--", sys.executable, "-c", script)
    assert log.read_text().split() == ["clean", "fence:0", "fence:1"]


def test_a_failing_clean_run_is_an_error(capsys):
    code = main(["mutate", "--no-cache", SMALL[0], "--", sys.executable, "-c", "raise SystemExit(3)"])
    assert code == 2 and "must pass" in capsys.readouterr().err


def test_missing_reader_packages_are_skipped_with_the_reason(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "vkverify.sim", None)  # import fails as if not installed
    code, report = mutate(capsys, "--no-cache", "-j", "1", "--readers", "checker,sim", SMALL[0])
    assert code == 0 and "vkverify.sim is not available" in report["skipped"]["sim"]
    assert report["matrix"]["all"]["sim"] is None and report["matrix"]["all"]["checker"] == len(report["mutants"])


def test_text_report_is_the_kill_matrix_and_names_redundant_operations(capsys):
    stream = str(ROOT / "examples" / "staged-upload.json")
    assert main(["mutate", "--no-cache", "-j", "1", "--report-redundant", stream]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["target", "mutants", "checker"]
    assert "up0[1]: waw main[0] -> main[6] on Staging is also ordered without it" in out


def test_the_kill_matrix_has_a_column_per_reader(capsys, device_name):
    """Checker, simulator, Lavapipe replay with and without the validation layer, on two streams
    Lavapipe runs. The replay's digests mostly hide the races (one queue, dispatches in order; how
    many show varies from run to run), the layer reports most of them."""
    streams = [SMALL[0], _file("41-")]
    code = main(["mutate", "--no-cache", "-j", "2", "--readers", "checker,sim,replay,replay+syncval", *streams])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0].split() == ["target", "mutants", "checker", "sim", "replay", "replay+syncval"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:lines.index("reader cells: killed/judged")]}
    assert rows.keys() == {"raw", "war", "all"}
    n = int(rows["all"][0])
    killed = dict(zip(["checker", "sim", "replay", "replay+syncval"],
                      (tuple(map(int, c.split("/"))) for c in rows["all"][1:])))
    assert killed["checker"] == killed["sim"] == (n, n) and killed["replay"][1] == killed["replay+syncval"][1] == n
    assert killed["replay+syncval"][0] >= n - 1


def test_options_after_files_mean_the_same(capsys, tmp_path):
    before = main(["mutate", "--format", "json", "--no-cache", SMALL[0]]), capsys.readouterr().out
    after = main(["mutate", SMALL[0], "--format", "json", "--no-cache"]), capsys.readouterr().out
    assert after == before and before[0] == 0 and json.loads(before[1])["mutants"]


def test_the_cache_folder_ignores_itself(tmp_path, capsys):
    """A cache directory made by vkverify carries a .gitignore of `*`: never committed by accident."""
    cache = tmp_path / "deep" / ".vkverify-cache"
    assert main(["mutate", "--cache", str(cache), SMALL[0]]) == 0
    assert (cache / ".gitignore").read_text() == "*\n"
