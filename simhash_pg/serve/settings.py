"""What a server is started with: one frozen dataclass, passed to worker processes as JSON."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from simhash_pg.bits import DEFAULT_K
from simhash_pg.store.locking import DEFAULT_LOCK_TIMEOUT
from simhash_pg.store.options import StoreOptions
from simhash_pg.store.results import OnDuplicate
from simhash_pg.verify import VerifyMode

__all__ = ["LOOPBACK_HOSTS", "SETTINGS_ENV", "TOKEN_ENV", "Settings", "check_token",
           "read_token_file"]

# uvicorn starts ``--workers N`` processes that import the app themselves:
# the CLI hands them its settings in SETTINGS_ENV (never the token) and the
# token in TOKEN_ENV, which is also where a user may put it.
SETTINGS_ENV = "SIMHASH_PG_SERVE_SETTINGS"
TOKEN_ENV = "SIMHASH_PG_TOKEN"

# The Host names a server answers by default: a page whose name rebinds to
# 127.0.0.1 sends its own name, and is refused (DNS rebinding).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def check_token(token: str | None) -> None:
    """Raise ValueError unless ``token`` is None or a bearer token a client can send."""
    if token is None:
        return
    if not token.strip():
        raise ValueError("the token must not be empty")
    if not _BEARER_TOKEN.fullmatch(token):
        # a header carries bytes that Starlette reads as latin-1: a token
        # beyond the bearer syntax could never be sent and matched
        raise ValueError("the token may hold only ASCII letters, digits and -._~+/ "
                         "(then '=' padding), the bearer token syntax of RFC 6750")


def read_token_file(path: str) -> str:
    """The token in ``path`` (one line), if only its owner, this user, can read or change it.

    ValueError otherwise: a token others can read is no secret. Opened once
    and checked by its descriptor, so the file checked is the file read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, encoding="utf-8") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.geteuid():
            raise ValueError(f"{path}: owned by uid {st.st_uid}, not by this user "
                             f"({os.geteuid()})")
        if st.st_mode & 0o077:
            raise ValueError(f"{path}: mode {st.st_mode & 0o777:04o} lets others read or "
                             "change it; chmod 600 it")
        token = f.read().strip()
    check_token(token)
    return token


# RFC 6750's b64token: what an Authorization: Bearer header can carry.
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@dataclass(frozen=True)
class Settings:
    """A server's settings.

    dsn: the database (None: ``$SIMHASH_PG_DSN``, else the embedded server).
    token: the bearer token writes need (None: writes are open, which only
    loopback makes tolerable); token_for_reads: reads need it too.
    max_body_bytes: a larger request body is refused with 413 before it is read.
    pool_min, pool_max, pool_timeout: the per-process connection pool, and how
    long a request waits for a connection before a 503.
    k, verify, on_duplicate, lock_timeout, keep_text: the store's, as SimhashStore
    takes them.
    migrate: create or upgrade the schema on start (the CLI decides, as
    ``simhash-pg add`` does; see cli/serve.py).
    allowed_hosts: the names a request's Host header may give (without the
    port; IPv6 without brackets; ``*.example.com`` and ``*`` as Starlette's
    TrustedHostMiddleware takes them); any other gets 400.
    read_only: every write is refused (403) before the database is asked
    (``serve --read-only``, which also logs in as a reader).
    """

    dsn: str | None = None
    token: str | None = None
    token_for_reads: bool = False
    max_body_bytes: int = 8 * 1024 * 1024
    pool_min: int = 2
    pool_max: int = 16
    pool_timeout: float = 10.0
    k: int = DEFAULT_K
    verify: VerifyMode | None = None
    on_duplicate: OnDuplicate = "skip"
    lock_timeout: float | None = DEFAULT_LOCK_TIMEOUT
    migrate: bool = False
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    read_only: bool = False
    keep_text: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_hosts", tuple(self.allowed_hosts))  # JSON gives a list
        if not self.allowed_hosts:
            raise ValueError("allowed_hosts must name at least one host")
        _ = self.store_options  # checks k, verify, on_duplicate and lock_timeout
        check_token(self.token)
        if self.token_for_reads and self.token is None:
            raise ValueError("token_for_reads needs a token")
        for name in ("max_body_bytes", "pool_min", "pool_max"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.pool_min > self.pool_max:
            raise ValueError("pool_min must be <= pool_max")

    @cached_property
    def store_options(self) -> StoreOptions:
        """The store's options, checked once: every request's store takes them."""
        return StoreOptions(k=self.k, verify=self.verify, on_duplicate=self.on_duplicate,
                            lock_timeout=self.lock_timeout, keep_text=self.keep_text)

    def to_env(self) -> dict[str, str]:
        """Environment variables that hand these settings to a worker process."""
        data = {k: v for k, v in dataclasses.asdict(self).items() if k != "token"}
        env = {SETTINGS_ENV: json.dumps(data)}
        if self.token is not None:
            env[TOKEN_ENV] = self.token
        return env

    @classmethod
    def from_env(cls, environ: Any = None) -> Settings:
        """The settings :meth:`to_env` wrote (defaults where absent)."""
        environ = os.environ if environ is None else environ
        data = json.loads(environ.get(SETTINGS_ENV) or "{}")
        token = environ.get(TOKEN_ENV) or None
        return cls(**data, token=token)
