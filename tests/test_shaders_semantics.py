"""Properties of the numpy semantics that the device tests cannot show."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vkverify.shaders import SEMANTICS, atomic_addends, checksum, generic, generic_name, generic_plan, mix

words = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=20)


@settings(max_examples=200)
@given(reads=st.lists(words, min_size=1, max_size=4), data=st.data())
def test_every_read_word_changes_every_output(reads, data):
    arrays = [np.array(r, dtype=np.uint32) for r in reads]
    k = data.draw(st.integers(0, len(arrays) - 1))
    i = data.draw(st.integers(0, len(arrays[k]) - 1))
    changed = [a.copy() for a in arrays]
    changed[k][i] ^= np.uint32(1 << data.draw(st.integers(0, 31)))
    before, after = generic(arrays, [50], 7), generic(changed, [50], 7)
    assert np.all(before[0] != after[0])


@given(ref=st.integers(0, 2**32 - 1), other=st.integers(0, 2**32 - 1))
def test_the_reference_changes_every_output(ref, other):
    if ref != other:
        assert np.all(generic([], [40], ref)[0] != generic([], [40], other)[0])


def test_generic_pinned_values():
    # Pins the contract: the simulator, the replay and stored streams rely on these numbers.
    assert checksum([]) == 0x811C9DC5
    assert checksum([np.array([1, 2], np.uint32)]) == checksum([np.array([1], np.uint32), np.array([2], np.uint32)])
    assert int(mix(np.uint32(0), 0, 0)) == 0
    assert [int(v) for v in generic([np.arange(3, dtype=np.uint32)], [3], 5)[0]] == [
        int(mix(np.uint32(i), 5, checksum([np.arange(3, dtype=np.uint32)]))) for i in range(3)]


def test_generic_kernel_keeps_words_past_the_counts():
    out = SEMANTICS["generic_r1_w2"](
        [np.arange(4, dtype=np.uint32), np.zeros(6, np.uint32), np.full(3, 9, np.uint32)], [1, 4, 5, 2], (1, 1, 1))
    expected = generic([np.arange(4, dtype=np.uint32)], [5, 2], 1)
    assert list(out[1]) == [*expected[0], 0] and list(out[2]) == [*expected[1], 9]


def test_zero_groups_write_nothing():
    src = np.arange(8, dtype=np.uint32)
    assert list(SEMANTICS["copy"]([src, np.zeros(8, np.uint32)], [8], (4, 0, 1))[1]) == [0] * 8


def test_generic_plan_puts_read_write_bindings_in_both_lists():
    plan = generic_plan(["write", "read_write", "read", "uniform"])
    assert plan.name == generic_name(3, 2) == "generic_r3_w2"
    assert (plan.read_slots, plan.write_slots) == ((1, 2, 3), (0, 1))


def test_generic_plan_runs_atomic_bindings_apart():
    plan = generic_plan(["atomic", "read", "write", "atomic"])
    assert (plan.name, plan.read_slots, plan.write_slots, plan.atomic_slots) == ("generic_r1_w1", (1,), (2,), (0, 3))
    assert generic_plan(["atomic"]).name is None


def test_atomic_add_adds_the_atomic_addends():
    before = np.arange(6, dtype=np.uint32) + np.uint32(2**32 - 3)
    out = SEMANTICS["atomic_add"]([before], [9, 4], (1, 1, 1))[0]
    assert list(out) == [*(before[:4] + atomic_addends(4, 9)), *before[4:]]


def test_generic_plan_of_a_dispatch_that_only_reads_has_a_kernel_with_one_written_binding():
    """Its reads still run on a replay: the kernel's written binding is the replay's scratch word."""
    plan = generic_plan(["read", "uniform", "atomic"])
    assert (plan.name, plan.read_slots, plan.write_slots, plan.atomic_slots) == ("generic_r2_w1", (0, 1), (), (2,))
