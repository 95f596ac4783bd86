"""The syncval agreement table: vkverify's findings beside the Khronos
validation layer's (1.3.239, synchronization validation with the
queue-submit checks) over every corpus stream the device can run."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import CORPUS
from vkverify.model import load

runtime = pytest.importorskip("vkverify.runtime")
from vkverify.runtime.syncval import explain_only_layer, explain_only_vkverify  # noqa: E402


def test_agreement_table(capsys):
    try:
        runtime.Runtime(validation=True).close()
    except runtime.NoDevice as error:
        pytest.skip(f"no Vulkan ICD or validation layer: {error}")
    shared, only_v, only_l = Counter(), Counter(), Counter()
    rows, skipped = [], []
    for path in CORPUS:
        stream = load(path)
        if runtime.replayable(stream) is not None:
            skipped.append(path.stem)
            continue
        try:
            result = runtime.replay(stream, syncval=True)
        except runtime.Unsupported:
            skipped.append(path.stem)
            continue
        a = result.agreement
        shared[path.stem] += len(a.shared)
        for f in a.only_vkverify:
            only_v[explain_only_vkverify(stream, f)] += 1
            # The corpus states each disagreement with the layer in the stream's own description.
            assert explain_only_vkverify(stream, f) in stream.description, (path.stem, f.kind, f.buffer)
            rows.append(f"  {path.stem}: only vkverify {f.kind} {f.buffer} {f.first} -> {f.second}")
        for lf in a.only_layer:
            only_l[explain_only_layer(stream, lf, result.messages)] += 1
            assert explain_only_layer(stream, lf, result.messages) in stream.description, (path.stem, lf.kind)
            rows.append(f"  {path.stem}: only layer {lf.kind} {lf.buffer or ''} at {lf.second}")
    with capsys.disabled():
        print(f"\nsyncval agreement over {len(CORPUS) - len(skipped)} streams "
              f"({len(skipped)} not runnable here: {', '.join(s[:2] for s in skipped)})")
        print(f"  shared: {sum(shared.values())}   only vkverify: {sum(only_v.values())}   "
              f"only the layer: {sum(only_l.values())}")
        for why, n in only_v.most_common():
            print(f"  only vkverify x{n}: {why}")
        for why, n in only_l.most_common():
            print(f"  only the layer x{n}: {why}")
        print("\n".join(rows))
    assert sum(shared.values()) > 0
    # Every disagreement falls in an explained category.
    assert "not reported by the layer" not in only_v and "reported by the layer only" not in only_l
