"""When compaction pays: the decision as a pure function of prices and sizes, and the account of
what compactions saved.

On DeepSeek a cached token is cheap but not free: a long session pays every step for its whole
history at the cache-hit price. Compacting replaces that history with a summary, which costs
once — the summary's output tokens and, on the request after it, the new shorter prefix at the
cache-miss price — and saves on every step that follows.

With ``P`` the last prompt (tokens), ``A`` what the prompt would be after compacting (the system
prompt and tools, the summary, the recent steps kept verbatim), ``S`` the summary's size and
``N`` the steps still expected, per million tokens at prices ``hit`` / ``miss`` / ``output``:

- one-time cost   ``C = output·S + miss·(A + instruction)`` — the summary request itself re-reads
  ``P`` from the cache, which the step it replaces would have paid anyway;
- saving          ``hit·(P − A)·(N − 1)`` — every later step re-reads ``A`` instead of ``P``.

Compact when the saving exceeds ``margin × C`` (the hysteresis: a compaction must pay for itself
with room to spare, so the decision does not flip back and forth on noise) and at least
``min_steps`` steps are expected. ``N`` is estimated from the session's recent step rate: a
session that has run ``n`` steps since it last started or compacted is expected to run about as
many more (capped at ``horizon``). A short session never compacts: it has not run long enough to
expect the steps that would repay the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CompactionAccount",
    "EconomicInputs",
    "EconomicVerdict",
    "coming_steps",
    "economic_verdict",
]

#: A summary's assumed size (tokens) before the session has produced one.
DEFAULT_SUMMARY_TOKENS = 800
#: The summary instruction's size (tokens, about; it is sent uncached once per compaction).
INSTRUCTION_TOKENS = 80


@dataclass(frozen=True, slots=True)
class EconomicInputs:
    """What the decision reads. Prices are USD per million tokens."""

    prompt_tokens: int
    after_tokens: int
    summary_tokens: int
    coming_steps: int
    hit: float
    miss: float
    output: float


@dataclass(frozen=True, slots=True)
class EconomicVerdict:
    compact: bool
    #: expected saving over the coming steps and the one-time cost, USD
    saving: float
    cost: float
    reason: str


def coming_steps(steps_since_reset: int, horizon: int = 200) -> int:
    """The steps still expected: about as many as the session has run since it started or last
    compacted, at most ``horizon``."""
    return max(0, min(steps_since_reset, horizon))


def economic_verdict(
    inputs: EconomicInputs, *, margin: float = 1.5, min_steps: int = 4
) -> EconomicVerdict:
    """Whether compacting now is expected to save more than it costs (see the module doc)."""
    i = inputs
    removed = i.prompt_tokens - i.after_tokens
    cost = (i.output * i.summary_tokens + i.miss * (i.after_tokens + INSTRUCTION_TOKENS)) / 1e6
    saving = i.hit * max(removed, 0) * max(i.coming_steps - 1, 0) / 1e6
    if i.coming_steps < min_steps:
        return EconomicVerdict(False, saving, cost, f"only {i.coming_steps} steps expected")
    if removed <= 0:
        return EconomicVerdict(False, saving, cost, "nothing to gain: the history is small")
    if saving <= margin * cost:
        return EconomicVerdict(
            False, saving, cost, f"saving ${saving:.6f} does not repay ${cost:.6f}"
        )
    return EconomicVerdict(
        True,
        saving,
        cost,
        f"expected saving ${saving:.6f} over {i.coming_steps} steps exceeds its cost ${cost:.6f}",
    )


@dataclass
class CompactionAccount:
    """What the session's compactions saved, from the requests actually made: each request
    after a compaction would have re-read ``removed`` more tokens at the cache-hit price; against
    that stand the summary requests and the cache misses right after each compaction."""

    hit: float = 0.0
    miss: float = 0.0
    compactions: int = 0
    #: tokens each request no longer carries (the last compaction's, and every earlier one's)
    removed: int = 0
    gross: float = 0.0
    spent: float = 0.0
    _before: int | None = None
    _first_after: bool = False

    def compacted(self, prompt_before: int | None, summary_cost: float) -> None:
        """A compaction was accepted; the last prompt before it was ``prompt_before``."""
        self.compactions += 1
        self.spent += summary_cost
        self._before = prompt_before
        self._first_after = True

    def request(self, prompt_tokens: int) -> None:
        """A request of the session was made (after its usage is known)."""
        if self._first_after:
            self._first_after = False
            if self._before is not None:
                self.removed += max(0, self._before - prompt_tokens)
            # the new prefix is read uncached once
            self.spent += (self.miss - self.hit) * prompt_tokens / 1e6
        self.gross += self.hit * self.removed / 1e6

    @property
    def saved(self) -> float:
        """Net USD saved so far (negative while a compaction has not yet paid for itself)."""
        return self.gross - self.spent
