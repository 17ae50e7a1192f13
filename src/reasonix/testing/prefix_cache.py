"""A small, pure model of DeepSeek's prefix (context) cache, used by the fake server.

DeepSeek documents the cache as best-effort storage of *prefix units*: a unit is stored at the
end of each request's input, at the end of its output, and at prefixes detected as shared between
requests; a later request gets a hit only when its prompt *fully matches* a stored unit, and hit
tokens are reported in whole units. Its own examples:

- ``A+B`` then ``A+B+C``: the second request hits ``A+B``;
- ``A+B`` then ``A+C``: miss (nothing stored ends inside ``A``), but the shared prefix ``A`` is
  now detected and stored, so a later ``A+D`` hits ``A``.

All of these hold here "up to unit rounding": a stored boundary is always rounded *down* to a
whole number of units, so a hit on ``A`` means ``floor(len(A) / unit) * unit`` tokens.

Model
-----
For a token sequence, ``h[k]`` is a chained hash of its first ``k * unit_tokens`` tokens.
``seen`` holds every unit boundary of every sequence ever processed (input followed by output);
``cached`` holds the boundaries that were actually stored. For each request:

1. hit = the largest ``k`` with ``h[k]`` in ``cached`` (so the whole stored unit must match);
2. the longest prefix of this prompt already in ``seen`` was shared with an earlier request:
   store it (``cached``);
3. store the input-end and output-end boundaries (rounded down to a unit);
4. add all boundaries of input + output to ``seen``.

``drop_last_unit=True`` models the 2026-09 measurement on ``deepseek-flash`` that fitted
``cached = 128 * max(0, floor(n / 128) - 1)`` for a prompt of ``n`` tokens whose whole prefix
was stored: the hit is capped at one unit below the prompt's whole units (a prefix under two
units caches nothing).

Fixed-interval storage of very long texts, which DeepSeek also mentions, is not modelled.

``count_last_unit=False`` models a 2026 measurement that fitted "128-token blocks, last block not
counted". Our reading: the block holding the prompt's final token is always recomputed (a model
must run at least one position to produce logits), so the hit never covers the whole prompt. In
practice a matched prefix loses its final unit only when the match covers the entire prompt;
a match that stops earlier is unaffected. Equivalently: ``hit <= largest multiple of the unit
strictly below the prompt length``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CacheOutcome", "PrefixCache"]

_ROOT = b"reasonix-prefix-cache-v1"


@dataclass(frozen=True, slots=True)
class CacheOutcome:
    """What one request got from the cache and what it left behind."""

    prompt_tokens: int
    hit_tokens: int
    #: length of input + output: what a pure-append next request replays before its new part
    stored_tokens: int

    @property
    def miss_tokens(self) -> int:
        return self.prompt_tokens - self.hit_tokens


class PrefixCache:
    """Simulates DeepSeek's prefix cache over token sequences (see the module docstring).

    Not thread-safe by itself: the fake server calls it under its own lock.
    """

    def __init__(
        self, unit_tokens: int = 64, count_last_unit: bool = True, *, drop_last_unit: bool = False
    ) -> None:
        if unit_tokens < 1:
            raise ValueError("unit_tokens must be at least 1")
        self.unit_tokens = unit_tokens
        self.count_last_unit = count_last_unit
        self.drop_last_unit = drop_last_unit
        self._seen: set[bytes] = set()
        self._cached: set[bytes] = set()

    def reset(self) -> None:
        """Forget everything (as if the cache had expired)."""
        self._seen.clear()
        self._cached.clear()

    def _chain(self, tokens: Sequence[str]) -> list[bytes]:
        """``chain[k-1]`` = hash of the first ``k`` whole units of ``tokens``."""
        unit = self.unit_tokens
        out: list[bytes] = []
        prev = _ROOT
        for start in range(0, len(tokens) - unit + 1, unit):
            h = hashlib.blake2b(prev, digest_size=16)
            for token in tokens[start : start + unit]:
                data = token.encode("utf-8")
                # length-prefix each token so ("ab","c") and ("a","bc") hash differently
                h.update(len(data).to_bytes(4, "big"))
                h.update(data)
            prev = h.digest()
            out.append(prev)
        return out

    def _best_hit_units(self, chain: list[bytes], prompt_len: int) -> int:
        for k in range(len(chain), 0, -1):
            if chain[k - 1] in self._cached:
                if self.drop_last_unit:
                    # the measured fit: never more than floor(n / unit) - 1 units of a prompt
                    return min(k, max(0, prompt_len // self.unit_tokens - 1))
                if not self.count_last_unit and k * self.unit_tokens >= prompt_len:
                    return k - 1
                return k
        return 0

    def lookup(self, prompt: Sequence[str]) -> int:
        """Hit tokens ``prompt`` would get now, without storing anything."""
        return self._best_hit_units(self._chain(prompt), len(prompt)) * self.unit_tokens

    def process(self, prompt: Sequence[str], output: Sequence[str] = ()) -> CacheOutcome:
        """Serve one request: compute its hit, then store what the request leaves behind."""
        full = list(prompt) + list(output)
        chain = self._chain(full)
        prompt_units = len(prompt) // self.unit_tokens
        prompt_chain = chain[:prompt_units]
        hit_units = self._best_hit_units(prompt_chain, len(prompt))

        # Shared prefix detection: the longest prefix of this prompt some earlier request also had.
        for k in range(len(prompt_chain), 0, -1):
            if prompt_chain[k - 1] in self._seen:
                self._cached.add(prompt_chain[k - 1])
                break
        if prompt_chain:
            self._cached.add(prompt_chain[-1])  # end of input, rounded down
        if chain:
            self._cached.add(chain[-1])  # end of output, rounded down
        self._seen.update(chain)
        return CacheOutcome(len(prompt), hit_units * self.unit_tokens, len(full))
