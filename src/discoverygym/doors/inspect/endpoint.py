"""Is the model's server there? One short request before a `--model` run plays.

With nothing listening at an OpenAI-compatible `base_url`, Inspect retried for ten
minutes per request before the first sample failed (issue 36). `check_endpoint` asks
the endpoint once (GET <base_url>/models, a few seconds at most) and raises
`EndpointUnreachable` (a ValueError: one `error:` line) when nothing answers. Any HTTP
answer counts as there, an error status included (401 without a key, 404 where a server
has no /models): whether the model itself works is for the run to find out. No key is
sent, and the URL is shown without its user, password or query.

Standard library only: the check runs before Inspect is imported."""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

#: Seconds the one request may take (connecting and the first answer).
TIMEOUT_S = 5.0

#: Where providers listen unless told otherwise (`<PROVIDER>_BASE_URL` or a
#: `base_url` model argument). Providers not listed (and `openai-api/...` without a
#: base URL, which Inspect refuses itself) are not checked.
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "ollama": "http://localhost:11434/v1",
}
#: Providers that run in this process (scripted, mock): nothing to reach.
IN_PROCESS = ("discoverygym", "mockllm", "none")


class EndpointUnreachable(ValueError):
    """Nothing answered at the model's endpoint; the message names the URL and why."""


def endpoint_of(model: str, model_args: dict[str, Any] | None = None) -> str | None:
    """The base URL a `--model` run will talk to, or None where there is none to check.
    Inspect's rules: a `base_url` model argument, else `<SERVICE>_BASE_URL` for
    `openai-api/<service>/...`, else `<PROVIDER>_BASE_URL`, else the provider's default."""
    provider, _, rest = model.partition("/")
    if not rest or provider in IN_PROCESS:
        return None
    explicit = (model_args or {}).get("base_url")
    if explicit:
        return str(explicit)
    if provider == "openai-api":
        service = rest.partition("/")[0]
        return os.environ.get(f"{service.upper().replace('-', '_')}_BASE_URL") or None
    name = provider.upper().replace("-", "_")
    return os.environ.get(f"{name}_BASE_URL") or DEFAULT_BASE_URLS.get(provider)


def shown(url: str) -> str:
    """The URL for a message: scheme, host, port and path only (no user, password,
    query or fragment, where a key may sit)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return " ".join(urllib.parse.urlunsplit((parts.scheme, host + port, parts.path, "", ""))
                    .split())[:300]


def check_endpoint(model: str, model_args: dict[str, Any] | None = None,
                   timeout_s: float = TIMEOUT_S) -> str | None:
    """Raise EndpointUnreachable unless the model's endpoint answers one GET within
    `timeout_s`; return the URL checked (None: nothing to check)."""
    base_url = endpoint_of(model, model_args)
    if base_url is None:
        return None
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EndpointUnreachable(f"the model's base URL {shown(base_url)!r} is not an "
                                  "http(s) URL (e.g. http://localhost:8000/v1)")
    # /models under the base path; the host without user and password (urllib would
    # read them as part of the host name), the query kept.
    try:
        netloc = (f"[{parts.hostname}]" if ":" in (parts.hostname or "") else
                  parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    except ValueError as exc:  # a port that is no number
        raise EndpointUnreachable(f"the model's base URL {shown(base_url)!r} is not "
                                  f"valid: {exc}") from None
    url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/models",
                                   parts.query, ""))
    request = urllib.request.Request(url, method="GET",
                                     headers={"User-Agent": "discoverygym-endpoint-check"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:  # noqa: S310
            reply.read(1)
    except urllib.error.HTTPError:
        return base_url  # it answered (with an error status): the server is there
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, socket.timeout | TimeoutError):
            why = f"no answer within {timeout_s:g} s"
        else:
            why = " ".join(str(getattr(reason, "strerror", None) or reason).split())[:200]
        raise EndpointUnreachable(
            f"cannot reach the model's server at {shown(base_url)}: {why}. Start the "
            "server, or give its address with --model-arg base_url=URL") from None
    return base_url
