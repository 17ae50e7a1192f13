"""The usage part of a session (``session.usage``): what it cost, how full its context is and
what fills it (``/context``), the provider balance, and its subagents' figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reasonix.control.cost import RoleCost, format_cost_table

if TYPE_CHECKING:
    from reasonix.app.context_report import RoleContext
    from reasonix.app.session import AgentSession

__all__ = ["ContextUse", "SessionUsage"]


@dataclass(frozen=True, slots=True)
class ContextUse:
    """The last request's prompt size for a role against its model's context window."""

    role: str
    model: str
    prompt_tokens: int
    context_window: int

    @property
    def fraction(self) -> float:
        return self.prompt_tokens / self.context_window if self.context_window else 0.0


class SessionUsage:
    """What the session spent and how full its context is; ``session.usage``."""

    def __init__(self, session: AgentSession) -> None:
        self._s = session

    def context_use(self) -> list[ContextUse]:
        """Per role, the last prompt size against the model's context window."""
        out = []
        for role, model in self._s.models().items():
            window = self._s.config.model_info(model).context_window
            tokens = self._s._events.last_prompt.get(role)
            if tokens is None:
                # Nothing measured since the history last changed shape (new, resumed,
                # rewound, compacted): estimate from its size rather than show a stale figure.
                ctrl = self._s._controller
                agent = ctrl.executor if role == "executor" else ctrl.planner
                chars = (
                    sum(len(str(getattr(m, "content", ""))) for m in agent.session.snapshot())
                    if agent
                    else 0
                )
                tokens = chars // 4
            out.append(ContextUse(role, model, tokens, window))
        return out

    def context_report(self) -> list[RoleContext]:
        """``/context``: per role, what fills its window (system prompt, tool schemas, the
        conversation by kind), estimated, with the last measured prompt size."""
        from reasonix.app.context_report import context_report

        return context_report(self._s)

    def context_lines(self) -> list[str]:
        """``/context`` as text (the subagents' windows too)."""
        from reasonix.app.context_report import context_lines

        return context_lines(self._s)

    def cost(self) -> dict[str, RoleCost]:
        """This run's totals keyed by who spent them: ``executor``, ``planner``,
        ``compaction`` (and any other usage source, such as subagents, as it appears)."""
        return self._s._controller.cost.snapshot()

    def compaction_savings(self) -> dict[str, Any]:
        """What this run's compactions saved, net of their summaries and the cache misses after
        them (USD, from the requests actually made), per role that compacted and in total."""
        agents = [self._s._controller.executor, self._s._controller.planner]
        roles = {
            a.role: {
                "compactions": a.compaction_account.compactions,
                "saved_usd": round(a.compaction_account.saved, 8),
            }
            for a in agents
            if a is not None and a.compaction_account.compactions
        }
        total = sum(r["saved_usd"] for r in roles.values())
        return {"roles": roles, "saved_usd": round(total, 8)}

    def subagents(self) -> list[dict[str, Any]]:
        """Every subagent (``task``) of this run: its description, status, tokens and cost."""
        delegator = self._s._controller.delegator
        return delegator.figures() if delegator is not None else []

    def session_cost(self) -> float:
        """USD the whole session has spent, earlier runs included (what the budget counts)."""
        return self._s._controller.cost.session_cost

    def cost_table(self) -> str:
        """Per-role table for this run; plus the stored totals when resuming added earlier
        runs of the same session."""
        here = self.cost()
        table = format_cost_table(here, self._s.config.ui.currency)
        saved = self.compaction_savings()
        if saved["roles"]:
            count = sum(r["compactions"] for r in saved["roles"].values())
            table += (
                f"\nCompaction saved ${saved['saved_usd']:.6f} net ({count} compaction"
                f"{'s' if count != 1 else ''}: the shorter history re-read each step, less the "
                "summaries and the cache misses after them)."
            )
        children = self.subagents()
        if children:
            lines = []
            for c in children:
                prompt = c["prompt_tokens"]
                hit = c["cache_hit_tokens"] / prompt if prompt else 0.0
                kind = [c["profile"]] if c.get("profile") else []
                if not c.get("read_only", True):
                    kind.append("writer, applied" if c.get("applied") else "writer")
                tag = f" ({', '.join(kind)})" if kind else ""
                lines.append(
                    f"  {c['id']:<8} {c['status']:<10} {c['requests']:>4} reqs "
                    f"{prompt:>10,} in {hit:>6.1%} hit  ${c['cost_usd']:.6f}  "
                    f"{c['description']}{tag}"
                )
            table += "\n\nSubagents (the subagent row above, per child):\n" + "\n".join(lines)
        stored = self._s.store.usage_summary(self._s.session_id)
        if sum(t.requests for t in stored.values()) > sum(c.requests for c in here.values()):
            whole = {
                k: RoleCost(v.requests, v.usage, v.cost, image_tokens=v.image_tokens)
                for k, v in stored.items()
            }
            # the store keeps USD costs only
            table += "\n\nWhole session (all runs, USD):\n" + format_cost_table(whole)
        return table

    async def balance(self) -> str:
        """``Balance: ...`` of each role's provider account (DeepSeek's ``GET /user/balance``),
        one line per endpoint; one without a balance endpoint says so."""
        from reasonix.providers.balance import Balance

        lines: list[str] = []
        seen: set[str] = set()
        for provider in self._s._providers.values():
            fetch = getattr(provider, "balance", None)
            url = str(getattr(provider, "url", ""))
            if fetch is None or url in seen:
                continue
            seen.add(url)
            balance = await fetch()
            text = balance.describe() if isinstance(balance, Balance) else f"({balance})"
            lines.append(f"Balance: {text}")
        return "\n".join(lines)
