"""An in-process client of the serve app, for the API's and the web page's tests."""

from __future__ import annotations

import warnings
from typing import Any

from simhash_pg.serve import Settings, create_app

with warnings.catch_warnings():  # Starlette asks for httpx2 in its TestClient; httpx works
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

__all__ = ["TestClient", "make_client"]


def make_client(dsn: str, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(dsn=dsn, pool_min=1, pool_max=4, **settings)))
