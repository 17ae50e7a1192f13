"""The prefix-cache simulator against DeepSeek's documented examples, at the unit level."""

from __future__ import annotations

import itertools

import pytest

from reasonix.testing.prefix_cache import PrefixCache

U = 64


def seq(tag: str, n: int) -> list[str]:
    """``n`` distinct tokens, distinguishable by ``tag``."""
    return [f"{tag}{i}" for i in range(n)]


A = seq("a", 200)  # 3 whole units + 8 tokens
B = seq("b", 150)
C = seq("c", 90)
D = seq("d", 70)


def floor_units(n: int, unit: int = U) -> int:
    return n // unit * unit


def test_first_request_misses() -> None:
    cache = PrefixCache(U)
    outcome = cache.process(A + B)
    assert outcome.hit_tokens == 0
    assert outcome.prompt_tokens == len(A + B)
    assert outcome.miss_tokens == len(A + B)


def test_extension_hits_the_previous_input() -> None:
    """Documented: ``A+B`` then ``A+B+C`` hits ``A+B``."""
    cache = PrefixCache(U)
    cache.process(A + B)
    outcome = cache.process(A + B + C)
    assert outcome.hit_tokens == floor_units(len(A + B))
    assert outcome.miss_tokens == len(A + B + C) - floor_units(len(A + B))


def test_divergence_misses_then_shared_prefix_hits() -> None:
    """Documented: ``A+B`` then ``A+C`` misses; a later ``A+D`` hits ``A``."""
    cache = PrefixCache(U)
    cache.process(A + B)
    assert cache.process(A + C).hit_tokens == 0
    assert cache.process(A + D).hit_tokens == floor_units(len(A))


def test_output_end_is_stored() -> None:
    """A pure-append client replays input + output: it hits everything up to the output's end."""
    cache = PrefixCache(U)
    out = seq("o", 100)
    first = cache.process(A, out)
    assert first.stored_tokens == len(A) + len(out)
    second = cache.process(A + out + C)
    assert second.hit_tokens == floor_units(len(A) + len(out))


def test_output_that_is_not_replayed_falls_back_to_input_end() -> None:
    cache = PrefixCache(U)
    cache.process(A, seq("o", 100))
    assert cache.process(A + seq("x", 100)).hit_tokens == floor_units(len(A))


def test_partial_unit_match_does_not_hit() -> None:
    """The whole stored unit must match: a prompt shorter than a unit never hits."""
    cache = PrefixCache(U)
    cache.process(seq("a", U - 1))
    assert cache.process(seq("a", U - 1) + C).hit_tokens == 0


def test_hits_are_whole_units() -> None:
    cache = PrefixCache(U)
    prompts = [A, A + B, A + B + C, A + B + C + D]
    for prev, nxt in itertools.pairwise(prompts):
        cache.process(prev)
        hit = cache.lookup(nxt)
        assert hit % U == 0
        assert hit == floor_units(len(prev))


def test_lookup_does_not_store() -> None:
    cache = PrefixCache(U)
    assert cache.lookup(A) == 0
    assert cache.lookup(A) == 0
    cache.process(A)
    assert cache.lookup(A + B) == floor_units(len(A))


def test_identical_prompt_hits_whole_units() -> None:
    cache = PrefixCache(U)
    cache.process(A)
    assert cache.process(A).hit_tokens == floor_units(len(A))


def test_count_last_unit_false_drops_the_final_unit_of_a_full_match() -> None:
    """2026 measurement model: the block holding the prompt's last token is not counted."""
    exact = seq("e", 4 * U)
    cache = PrefixCache(U, count_last_unit=False)
    cache.process(exact)
    # the match covers the whole prompt: its final unit is recomputed, not counted
    assert cache.process(exact).hit_tokens == 3 * U
    # a longer prompt: the matched prefix stops before the end, so all of it counts
    assert cache.process(exact + C).hit_tokens == 4 * U


def test_count_last_unit_true_counts_a_full_match() -> None:
    exact = seq("e", 4 * U)
    cache = PrefixCache(U)
    cache.process(exact)
    assert cache.process(exact).hit_tokens == 4 * U


def test_128_token_blocks() -> None:
    cache = PrefixCache(128, count_last_unit=False)
    cache.process(A + B)  # 350 tokens
    assert cache.process(A + B + C).hit_tokens == 256


def test_reset_forgets_everything() -> None:
    cache = PrefixCache(U)
    cache.process(A + B)
    cache.reset()
    assert cache.process(A + B + C).hit_tokens == 0


def test_token_boundaries_matter() -> None:
    """Different tokenisations of the same characters are different prefixes."""
    cache = PrefixCache(2)
    cache.process(["ab", "c", "d", "e"])
    assert cache.process(["a", "bc", "d", "e", "f"]).hit_tokens == 0


def test_pure_append_session_hits_everything_replayed() -> None:
    cache = PrefixCache(U)
    history: list[str] = seq("sys", 300)
    for step in range(6):
        out = seq(f"out{step}-", 37 + step * 11)
        result = cache.process(history, out)
        history = history + out + seq(f"tool{step}-", 53)
        expected = floor_units(result.stored_tokens)
        assert cache.lookup(history) == expected


def test_invalid_unit() -> None:
    with pytest.raises(ValueError, match="unit_tokens"):
        PrefixCache(0)
