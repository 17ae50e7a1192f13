"""The ``[sandbox]`` keys: the README's example loads, a project file cannot set them (they are
listed as ignored), a flag can, and they reach the confinement that bash runs under."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reasonix.config import load_config
from reasonix.errors import ConfigError
from reasonix.safety.confinement import BwrapConfiner, NoConfiner, confinement_for

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_sandbox_block() -> str:
    text = README.read_text()
    block = re.search(r"```toml\n(\[sandbox\].*?)```", text, re.DOTALL)
    assert block is not None, "the README shows a [sandbox] example"
    return block.group(1)


def test_the_readme_example_is_valid_user_config(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text(readme_sandbox_block())
    config = load_config(tmp_path, user_config=user)
    assert config.sandbox.bash == "auto" and config.sandbox.network is False
    assert config.sandbox.allow_read == ("~/.gitconfig", "~/datasets")
    assert config.provenance["sandbox.bash"].startswith("user:")


def test_a_project_file_cannot_set_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "reasonix.toml").write_text('[sandbox]\nbash = "off"\nnetwork = true\n')
    config = load_config(tmp_path, user_config=tmp_path / "none.toml")
    assert config.sandbox.bash == "auto" and config.sandbox.network is False
    assert any("sandbox.bash" in note for note in config.ignored), config.ignored


def test_a_flag_sets_the_sandbox_and_bad_values_say_what_is_valid(tmp_path: Path) -> None:
    config = load_config(
        tmp_path, user_config=tmp_path / "none.toml", overrides={"sandbox.bash": "off"}
    )
    assert config.sandbox.bash == "off"
    with pytest.raises(ConfigError, match="auto, bwrap, off"):
        load_config(tmp_path, user_config=tmp_path / "none.toml", overrides={"sandbox.bash": "on"})


def test_settings_reach_the_confiner(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('[sandbox]\nnetwork = true\nmax_processes = 64\nallow_read = ["~/data"]\n')
    (tmp_path / "home" / "data").mkdir(parents=True)
    config = load_config(tmp_path, user_config=user)
    environ = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    bash = confinement_for(config.sandbox, data_dir=tmp_path / "data", environ=environ)
    confiner = bash.confiner
    if isinstance(confiner, BwrapConfiner):
        assert confiner.network and confiner.max_processes == 64
        assert (tmp_path / "home" / "data").resolve() in confiner.allow_read
        assert (tmp_path / "data").resolve() in confiner.private
        argv = confiner.wrap(["sh", "-c", "true"], workspace=tmp_path, roots=[tmp_path])
        assert "--share-net" in argv and "ulimit -u 64" in " ".join(argv)
    else:
        assert isinstance(confiner, NoConfiner) and bash.notice is not None
    off = confinement_for(
        load_config(tmp_path, user_config=user, overrides={"sandbox.bash": "off"}).sandbox,
        environ=environ,
    )
    assert not off.confiner.confined and off.acknowledged
    assert off.unattended_error("--yes") is None


async def test_every_frontend_saying_yes_needs_confinement_or_an_acknowledgement(
    tmp_path: Path,
) -> None:
    """The façade refuses an approver that answers without a person (run --yes, batch --yes)
    when bash would run unconfined and the user has not accepted that."""
    from reasonix.app import AgentSession
    from reasonix.app.headless import YesApprover
    from reasonix.store import SessionStore
    from reasonix.testing import FakeDeepSeekServer
    from tests.security.support import path_without
    from tests.support.project import KEY_ENV, project_toml

    environ = {KEY_ENV: "sk-test", "PATH": path_without(tmp_path, "bwrap"), "HOME": str(tmp_path)}
    with FakeDeepSeekServer() as ex, FakeDeepSeekServer() as pl:
        user = tmp_path / "config.toml"
        user.write_text(project_toml(ex, pl))
        config = load_config(tmp_path, environ=environ, user_config=user)
        with SessionStore(tmp_path / "s.db") as store:
            with pytest.raises(ConfigError, match="allow_unconfined = true"):
                await AgentSession.open(
                    config, tmp_path, store=store, approver=YesApprover(), environ=environ
                )
            user.write_text(project_toml(ex, pl) + "\n[sandbox]\nallow_unconfined = true\n")
            config = load_config(tmp_path, environ=environ, user_config=user)
            session = await AgentSession.open(
                config, tmp_path, store=store, approver=YesApprover(), environ=environ
            )
            assert session.bash.notice is not None and not session.bash.confiner.confined
            await session.aclose()
