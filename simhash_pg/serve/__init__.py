"""``simhash-pg serve``: the store over HTTP, for apps in any language.

- settings: what a server is started with (and how workers receive it);
- app: ``create_app(settings)``, the FastAPI app: lifespan, middleware, errors;
- deps: request-scoped dependencies (a store per request, the bearer token);
- api: the ``/v1`` endpoints; models: their request and response bodies;
- metrics: the Prometheus ``/metrics``; limits: the request-body limit.
"""

from simhash_pg.serve.app import create_app
from simhash_pg.serve.settings import Settings

__all__ = ["Settings", "create_app"]
