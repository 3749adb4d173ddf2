"""Stems: which contexts share a beginning, and the order that keeps a family's contexts in one pass."""

from __future__ import annotations

from captrack.backends.context_stems import common_stem, order_by_family


def test_the_common_stem_is_what_every_prefix_shares() -> None:
    assert common_stem([[1, 2, 3, 4], [1, 2, 3, 9], [1, 2, 7]]) == 2
    assert common_stem([[5, 6, 7]]) == 3
    assert common_stem([[5, 6], [7, 6]]) == 0
    assert common_stem([[1, 2], [1, 2, 3]]) == 2  # one prefix is the other's beginning
    assert common_stem([]) == 0


def test_families_stay_together_longest_first() -> None:
    template = [1, 2, 3]
    task_a = [*template, 10, 11, 12, 13, 14]  # a task's instructions after the template
    task_b = [*template, 20, 21, 22]
    contexts = []
    for item in range(6):  # the tasks interleaved, lengths mixed, as the requests arrive
        contexts.append([*task_a, 100 + item] + [7] * (item % 3))
        contexts.append([*task_b, 200 + item] + [8] * ((item + 1) % 4))
    order = order_by_family(contexts, family=4)
    assert sorted(order) == list(range(len(contexts)))
    firsts = [contexts[i][3] for i in order]
    assert firsts == sorted(firsts)  # one family, then the other: never interleaved
    for family in (10, 20):
        lengths = [len(contexts[i]) for i in order if contexts[i][3] == family]
        assert lengths == sorted(lengths, reverse=True)
    assert order == order_by_family(contexts, family=4)  # deterministic


def test_a_beginning_too_few_contexts_share_makes_no_family() -> None:
    shared_by_two = [9, 9, 9, 9, 9, 9]
    contexts = [[1, *shared_by_two, 1], [1, *shared_by_two, 2], [1, 5, 30], [1, 6, 10, 11], [1, 7, 20, 21, 22]]
    order = order_by_family(contexts, family=3)
    # every context's family is the one beginning three of them share ([1]): longest first over all five
    assert [len(contexts[i]) for i in order] == sorted((len(c) for c in contexts), reverse=True)
    pair_first = order_by_family(contexts, family=2)
    assert {pair_first[0], pair_first[1]} == {0, 1} or {pair_first[-2], pair_first[-1]} == {0, 1}
