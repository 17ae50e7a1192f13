from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest

from reasonix.control.plan import submit_plan_tool
from reasonix.errors import ToolDefinitionError
from reasonix.tools.registry import (
    Permission,
    PermissionDecision,
    Tool,
    ToolContext,
    ToolRegistry,
    cap_output,
    tool,
)


@dataclass
class Edit:
    old: str
    new: str
    replace_all: bool = False


@tool(read_only=True)
def greet(name: Annotated[str, "who to greet"], times: int = 1) -> str:
    """Say hello."""
    return " ".join([f"hello {name}"] * times)


@tool
def apply(path: str, edits: list[Edit], mode: Literal["a", "b"] = "a") -> str:
    """Apply edits."""
    return f"{path}:{len(edits)}:{edits[0].old}->{edits[0].new}:{mode}"


@tool
async def boom(ctx: ToolContext) -> str:
    """Always fails."""
    raise RuntimeError(f"kaboom in {ctx.workspace.name}")


@tool(timeout=0.05)
async def slow() -> str:
    """Sleeps too long."""
    await asyncio.sleep(5)
    return "never"


def ctx() -> ToolContext:
    return ToolContext(workspace=Path("/tmp/ws"))


def test_schema_is_generated_from_signature() -> None:
    schema = greet.schema()["function"]
    assert schema["name"] == "greet"
    assert schema["description"] == "Say hello."
    params = schema["parameters"]
    assert params["required"] == ["name"]
    assert params["properties"]["name"] == {"type": "string", "description": "who to greet"}
    assert params["properties"]["times"] == {"type": "integer"}
    edits = apply.parameters["properties"]["edits"]
    assert edits["items"]["required"] == ["old", "new"]
    assert apply.parameters["properties"]["mode"] == {"enum": ["a", "b"], "type": "string"}
    assert boom.context_param == "ctx"
    assert "ctx" not in boom.parameters["properties"]


def test_schema_order_is_independent_of_registration_order() -> None:
    a = ToolRegistry([greet, apply, boom])
    b = ToolRegistry([boom, apply, greet])
    assert a.schema_bytes() == b.schema_bytes()
    assert a.names == ["apply", "boom", "greet"]
    assert a.read_only().names == ["greet"]


def test_bad_tool_names_and_untyped_params_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="not allowed"):
        Tool.from_function(lambda: None, name="bad name!")

    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolDefinitionError, match="type hint"):
        Tool.from_function(untyped)


async def test_execute_reports_model_mistakes_as_results() -> None:
    reg = ToolRegistry([greet, apply, boom, slow])
    ok = await reg.execute("greet", '{"name": "ann", "times": 2}', ctx())
    assert (ok.content, ok.is_error) == ("hello ann hello ann", False)
    assert ok.effects and ok.effects[0].kind == "call"

    unknown = await reg.execute("nope", "{}", ctx())
    assert unknown.is_error and "Unknown tool 'nope'" in unknown.content
    assert "greet" in unknown.content

    broken = await reg.execute("greet", '{"name": "ann"', ctx())
    assert broken.is_error and "not valid JSON" in broken.content

    mismatch = await reg.execute("greet", '{"name": 3, "extra": 1}', ctx())
    assert mismatch.is_error
    assert "expected string" in mismatch.content and "unknown property 'extra'" in mismatch.content

    missing = await reg.execute("greet", "{}", ctx())
    assert missing.is_error and "missing required property 'name'" in missing.content

    raised = await reg.execute("boom", "{}", ctx())
    assert raised.is_error and "RuntimeError: kaboom in ws" in raised.content

    timed = await reg.execute("slow", "", ctx())
    assert timed.is_error and "timed out" in timed.content


async def test_nested_dataclass_arguments_are_coerced() -> None:
    reg = ToolRegistry([apply])
    args = json.dumps({"path": "x.py", "edits": [{"old": "a", "new": "b"}], "mode": "b"})
    result = await reg.execute("apply", args, ctx())
    assert result.content == "x.py:1:a->b:b"
    bad = await reg.execute("apply", json.dumps({"path": "x", "edits": [{}], "mode": "c"}), ctx())
    assert bad.is_error
    assert "edits[0]: missing required property 'old'" in bad.content
    assert "is not one of" in bad.content


async def test_permission_policy_can_refuse() -> None:
    class DenyWrites:
        async def check(self, t: Tool, arguments: object, c: ToolContext) -> PermissionDecision:
            if t.read_only:
                return PermissionDecision(Permission.ALLOW)
            return PermissionDecision(Permission.DENY, "writes are off in plan mode")

    reg = ToolRegistry([greet, apply], policy=DenyWrites())
    assert not (await reg.execute("greet", '{"name": "a"}', ctx())).is_error
    denied = await reg.execute("apply", '{"path": "x", "edits": []}', ctx())
    assert denied.is_error and "writes are off in plan mode" in denied.content


def test_cap_output_keeps_head_and_tail_and_says_what_was_cut() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    capped = cap_output(text, 200)
    assert capped.startswith("line 0\n")
    assert capped.endswith("line 999")
    assert "output capped" in capped and "characters" in capped
    assert cap_output("short", 200) == "short"


async def test_null_for_an_optional_argument_means_left_out() -> None:
    # Before: ``"risks": null`` or a step's ``"verify": null`` failed validation ("expected
    # array, got null"), and two such submit_plan errors fail the whole planning round.
    reg = ToolRegistry([submit_plan_tool()])
    ctx = ToolContext(Path.cwd())
    args = {
        "objective": "o",
        "steps": [{"title": "t", "verify": None, "files": None}],
        "risks": None,
        "assumptions": None,
    }
    result = await reg.execute("submit_plan", json.dumps(args), ctx)
    assert not result.is_error, result.content
    plan = ctx.state["submitted_plan"]
    assert plan.risks == ()
    assert plan.steps[0].files == []
    assert plan.steps[0].verify == ""

    @tool
    def f(a: int, b: list[str] | None = None, c: int = 5, d: dict[str, Any] | None = None) -> str:
        """F."""
        return f"{a} {b} {c} {d}"

    reg2 = ToolRegistry([f])
    out = await reg2.execute("f", '{"a": 1, "b": null, "c": null, "d": {"k": null}}', ctx)
    assert out.content == "1 None 5 {'k': None}"  # a free-form object keeps its nulls
    missing = await reg2.execute("f", '{"a": null}', ctx)  # a required one is still required
    assert missing.is_error
    assert "expected integer, got null" in missing.content
