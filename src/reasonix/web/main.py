"""``reasonix serve``: the web dashboard of this folder's sessions (``--all``: every folder's).

Prints one line on stdout, the URL to open, with a fresh access token in its fragment (the
browser never sends a fragment to a server, so it stays out of logs and Referer headers; the
page exchanges it for a cookie and removes it from the address bar). Everything else goes to
stderr. Starlette and uvicorn are imported here only, so other commands never pay for them.

Binding anything but a loopback address needs a password, from the environment variable that
``--password-env`` or the user's ``[serve] password_env`` names: without one the command
refuses (exit 2) rather than put an agent that runs commands on the network unprotected.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reasonix.app.launch import EXIT_OK, StartupError, launch, overrides_from, print_notice

if TYPE_CHECKING:
    from reasonix.app.launch import Launch
    from reasonix.config import Config
    from reasonix.web.security import Guard


def run_serve(args: argparse.Namespace) -> int:
    from reasonix.web.security import is_loopback, is_wildcard

    workspace = Path.cwd().resolve()
    host: str = args.host
    passwords: list[str | None] = []

    def check(config: Config) -> None:
        password = _password(args, config)
        if not is_loopback(host) and password is None:
            raise StartupError(
                f"serve: --host {host} is not a loopback address, so the dashboard (which can "
                "run commands on this machine) would be reachable from the network; that needs "
                "a password. Put one in an environment variable and pass --password-env VAR (or "
                "set [serve] password_env in your config.toml), or bind 127.0.0.1"
            )
        passwords.append(password)

    started = launch(
        workspace,
        overrides_from(args),
        trust=True if getattr(args, "trust", False) else None,
        notify=print_notice,
        check=check,
    )
    try:
        try:
            import starlette  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError:
            raise StartupError(
                "reasonix serve needs Starlette and uvicorn: pip install starlette uvicorn"
            ) from None
        sock = _bind(host, args.port)
        port = int(sock.getsockname()[1])
        from reasonix.web.security import Guard

        guard: Guard = Guard(port=port, bound_host=host, password=passwords[0])
        url_host = "127.0.0.1" if is_wildcard(host) or host == "localhost" else host
        if ":" in url_host:
            url_host = f"[{url_host}]"
        if not is_loopback(host):
            print(
                f"reasonix serve: WARNING: listening on {host}:{port}, reachable from the network "
                "over plain HTTP (not encrypted). Anyone who can reach it can try the password; "
                "prefer an SSH tunnel to 127.0.0.1.",
                file=sys.stderr,
                flush=True,
            )
        # The socket listens already: a browser opening the URL now waits in its backlog.
        print(f"http://{url_host}:{port}/#token={guard.token}", flush=True)
        asyncio.run(_serve(sock, guard, started, workspace, args.all))
    except KeyboardInterrupt:
        pass
    finally:
        started.close()
    return EXIT_OK


def _password(args: argparse.Namespace, config: Config) -> str | None:
    """The configured password, or None. A named variable that is unset or empty is an error:
    the user asked for a password and would otherwise get none."""
    name = args.password_env or config.serve.password_env
    if not name:
        return None
    value = os.environ.get(name, "")
    if not value:
        source = "--password-env" if args.password_env else "[serve] password_env"
        raise StartupError(
            f"serve: {source} names the environment variable {name}, which is not set (or "
            f"empty); export {name}=<a long password> first"
        )
    return value


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise StartupError(f"serve: cannot resolve --host {host}: {exc}") from None
    sock = socket.socket(infos[0][0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(infos[0][4])
    except OSError as exc:
        sock.close()
        raise StartupError(
            f"serve: cannot listen on {host}:{port}: {exc.strerror or exc} (choose another "
            "--port, or 0 for any free one)"
        ) from None
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def _server_class() -> type[Any]:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopping on SIGINT/SIGTERM without re-raising the signal
        afterwards, so the sessions are closed and the command exits 0 (Ctrl+C is how a user
        stops it)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.handle_exit, sig, None)
            try:
                yield
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)

    return Server


async def _serve(
    sock: socket.socket,
    guard: Guard,
    started: Launch,
    workspace: Path,
    every_folder: bool,
) -> None:
    import uvicorn

    from reasonix.web.server import Dashboard

    dashboard = Dashboard(started, guard, workspace=workspace, every_folder=every_folder)
    config = uvicorn.Config(
        dashboard.app(),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=3,
        server_header=False,
        proxy_headers=False,
    )
    server = _server_class()(config)
    try:
        await server.serve(sockets=[sock])
    finally:
        await dashboard.aclose()
