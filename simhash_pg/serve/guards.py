"""What a request must be before anything reads it: sent to a name of this server, with one
``Authorization`` header at most.

- Host: a web page whose domain an attacker rebinds to 127.0.0.1 reaches a
  loopback server from the victim's browser, with its own name in ``Host``
  (DNS rebinding). Starlette's TrustedHostMiddleware answers any name but
  the server's own with 400.
- Authorization: with two, the fast path (fast.py) and FastAPI could each
  read a different one; a request that sends two is refused with 400, so
  both paths judge the one there is.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from simhash_pg.serve.limits import answer

__all__ = ["OneAuthorization", "host_patterns"]


def host_patterns(hosts: Iterable[str]) -> list[str]:
    """The allowed names as TrustedHostMiddleware matches them: an IPv6 literal in brackets,
    as a Host header carries it."""
    out = []
    for host in hosts:
        try:
            is_v6 = ipaddress.ip_address(host).version == 6
        except ValueError:
            is_v6 = False
        out.append(f"[{host}]" if is_v6 else host.lower())
    return out


class OneAuthorization:
    """400 for a request with more than one Authorization header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and sum(
                1 for name, _ in scope["headers"] if name == b"authorization") > 1:
            await answer(send, 400, "bad_request",
                         "the request has more than one Authorization header; send one")
            return
        await self.app(scope, receive, send)
