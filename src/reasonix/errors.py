"""Every exception reasonix raises, in one place.

::

    ReasonixError                      base of everything below; message says how to fix it
    ├── ConfigError                    invalid configuration (file, line, key, what is valid)
    ├── UnknownModelError              a model name with no preset and no configured limits/prices
    ├── ProviderError                  anything that went wrong talking to a model endpoint
    │   ├── APIStatusError             the server answered with an HTTP error status
    │   │   ├── BadRequestError        400: the request was malformed (message says what)
    │   │   ├── AuthenticationError    401: the API key was refused (names the env variable)
    │   │   ├── InsufficientBalanceError 402: top up the account balance
    │   │   ├── InvalidParametersError 422: a parameter is not accepted
    │   │   ├── RateLimitError         429: too many concurrent requests (retried)
    │   │   └── ServerError            5xx: server error or overloaded (retried)
    │   ├── ProviderConnectionError    could not connect / connection dropped before output
    │   ├── StreamError                the stream broke after it started
    │   │   ├── StreamCutError         ended without [DONE] or a finish reason
    │   │   ├── StreamIdleTimeout      no bytes for longer than the idle watchdog allows
    │   │   └── MalformedChunkError    a chunk that is not valid JSON / not a completion chunk
    │   └── TransientFinishError       finish_reason ``insufficient_system_resource`` (retried)
    ├── ToolDefinitionError            a Python callable cannot be turned into a tool
    ├── SandboxError                   a path outside the workspace or denied by a pattern
    ├── SessionStoreError              the session database could not be read or written
    ├── SessionError                   an open session used wrongly (unknown approval id,
    │                                  a turn while another runs, a closed session)
    └── StartupError                   a frontend could not start (config, credentials, store):
                                       printed, exit code 2

Foreign exceptions (httpx, json, sqlite3) are converted at the boundary where they happen.
``retryable`` marks what the provider layer retries (before or after output reached the caller;
after, the caller is told to retract the partial output).
"""

from __future__ import annotations


class ReasonixError(Exception):
    """Base class of every error reasonix raises on purpose."""


class ConfigError(ReasonixError):
    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.key = key
        where = ""
        if file:
            where = file + (f":{line}" if line else "")
            if key:
                where += f" [{key}]"
            where += ": "
        elif key:
            where = f"[{key}]: "
        super().__init__(where + message)


class UnknownModelError(ReasonixError):
    pass


class ProviderError(ReasonixError):
    retryable: bool = False
    #: the server's ``Retry-After`` hint in seconds, when it sent one
    retry_after: float | None = None


class APIStatusError(ProviderError):
    def __init__(self, message: str, *, status: int, body: str = "", code: str | None = None):
        self.status = status
        self.body = body
        self.code = code
        super().__init__(message)


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class InsufficientBalanceError(APIStatusError):
    pass


class InvalidParametersError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    retryable = True


class ServerError(APIStatusError):
    retryable = True


class ProviderConnectionError(ProviderError):
    retryable = True


class StreamError(ProviderError):
    """The stream broke after it started (cut, stalled, malformed). Retried like a failure
    before the first token; the caller is told to retract what it showed of the attempt."""

    retryable = True


class StreamCutError(StreamError):
    pass


class StreamIdleTimeout(StreamError):
    pass


class MalformedChunkError(StreamError):
    pass


class TransientFinishError(ProviderError):
    """The server finished with ``aborted`` or ``insufficient_system_resource``: the answer is
    incomplete and the request can be retried. ``usage`` is what the server reported for the
    broken attempt (it may have been billed), when it did."""

    retryable = True

    def __init__(self, message: str, *, finish_reason: str = "", usage: object = None) -> None:
        super().__init__(message)
        self.finish_reason = finish_reason
        self.usage = usage


class ToolDefinitionError(ReasonixError):
    pass


class SandboxError(ReasonixError):
    pass


class SessionStoreError(ReasonixError):
    pass


class SessionError(ReasonixError):
    """A session façade was used in a way it cannot serve; the message says what to do."""


class StartupError(ReasonixError):
    """A frontend could not start: configuration, credentials, trust or the session database
    (command-line frontends print it and exit 2); the message says what to fix."""
