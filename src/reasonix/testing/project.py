"""A ``reasonix.toml`` that points both roles at fake servers, for offline end-to-end runs of
the real CLI (tests, the demo, the benchmarks, users checking their own setups)."""

from __future__ import annotations

FAKE_KEY_ENV = "REASONIX_FAKE_KEY"


def fake_project_toml(
    executor_url: str,
    planner_url: str,
    *,
    key_env: str = FAKE_KEY_ENV,
    executor_model: str = "deepseek-flash",
    planner_model: str = "deepseek-v4-pro",
    max_steps: int | None = None,
    extra: str = "",
) -> str:
    """The TOML text; ``key_env`` names the (dummy) API-key variable the CLI will require,
    ``extra`` is appended as further tables (e.g. ``[permissions]``)."""
    steps = f"max_steps = {max_steps}\n" if max_steps is not None else ""
    return f"""\
[executor]
provider = "fake-executor"
model = "{executor_model}"
{steps}
[planner]
provider = "fake-planner"
model = "{planner_model}"

[[providers]]
name = "fake-executor"
base_url = "{executor_url}"
api_key_env = "{key_env}"

[[providers]]
name = "fake-planner"
base_url = "{planner_url}"
api_key_env = "{key_env}"
{extra}"""
