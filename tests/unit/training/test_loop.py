"""Length-bucketed batches: every item once, like lengths together, order still random."""

from __future__ import annotations

import random

from appliance.training.loop import length_bucketed_batches


def padded_size(batches: list[list[str]]) -> int:
    return sum(len(batch) * max(map(len, batch)) for batch in batches)


def test_batches_hold_every_item_once_and_pad_less_than_random_batches() -> None:
    rng = random.Random(3)
    items = ["x" * rng.randint(1, 200) + str(i) for i in range(1000)]
    batches = length_bucketed_batches(items, len, 32, random.Random(7))
    assert sorted(item for batch in batches for item in batch) == sorted(items)
    assert all(1 <= len(batch) <= 32 for batch in batches)
    assert len(batches) == (len(items) + 31) // 32
    shuffled = random.Random(7).sample(items, len(items))
    unsorted = [shuffled[i : i + 32] for i in range(0, len(shuffled), 32)]
    assert padded_size(batches) < 0.8 * padded_size(unsorted)


def test_the_same_seed_gives_the_same_batches_and_another_seed_other_ones() -> None:
    items = [str(i) * (i % 17 + 1) for i in range(300)]
    first = length_bucketed_batches(items, len, 16, random.Random(1))
    assert first == length_bucketed_batches(items, len, 16, random.Random(1))
    assert first != length_bucketed_batches(items, len, 16, random.Random(2))
