"""An in-process client of the serve app, for the API's and the web page's tests."""

from __future__ import annotations

import warnings
from typing import Any

from simhash_pg.serve import Settings, create_app

with warnings.catch_warnings():  # Starlette asks for httpx2 in its TestClient; httpx works
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

__all__ = ["BASE_URL", "TestClient", "make_client"]

# a name the server answers by default (TestClient's own, "testserver", is not)
BASE_URL = "http://localhost"


def make_client(dsn: str, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(dsn=dsn, pool_min=1, pool_max=4, **settings)),
                      base_url=BASE_URL)
