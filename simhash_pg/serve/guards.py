"""What a request must be before anything reads it: sent to a name of this server.

A web page whose domain an attacker rebinds to 127.0.0.1 reaches a loopback
server from the victim's browser, with its own name in ``Host`` (DNS
rebinding). Starlette's TrustedHostMiddleware answers any name but the
server's own with 400. (Two Authorization headers are refused where the
credentials are read: deps.bearer.)
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

__all__ = ["host_patterns"]


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
