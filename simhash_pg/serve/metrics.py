"""``/metrics`` in the Prometheus text format: requests, latencies, adds, the pool.

Each app has its own registry (two apps in one process, as in the tests,
never share counts). The figures are per process: with ``--workers N`` a
scrape reaches one worker, so scrape each worker's own port or read the
metrics as a sample (docs/cli-guide.md says so).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from simhash_pg.store.results import AddResult

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# near by fingerprint answers in ~0.2-1 ms, a batch add in seconds
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            10.0)


class _PoolCollector(Collector):
    """The pool's figures, read at scrape time."""

    def __init__(self) -> None:
        self.pool: Any = None  # set by the lifespan once the pool is open

    def collect(self) -> Iterator[Metric]:
        if self.pool is None:
            return
        stats = self.pool.get_stats()
        size = GaugeMetricFamily("simhash_pg_pool_connections", "Connections in the pool",
                                 labels=["state"])
        size.add_metric(["open"], stats.get("pool_size", 0))
        size.add_metric(["idle"], stats.get("pool_available", 0))
        yield size
        yield GaugeMetricFamily("simhash_pg_pool_max", "The pool's maximum size",
                                value=stats.get("pool_max", 0))
        yield GaugeMetricFamily("simhash_pg_pool_waiting",
                                "Requests waiting for a connection",
                                value=stats.get("requests_waiting", 0))


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "simhash_pg_http_requests", "HTTP requests by endpoint and status",
            ["method", "endpoint", "status"], registry=self.registry)
        self.latency = Histogram(
            "simhash_pg_http_request_seconds", "Time to answer an HTTP request",
            ["method", "endpoint"], buckets=_BUCKETS, registry=self.registry)
        self.adds = Counter(
            "simhash_pg_adds", "Documents added, by outcome (inserted, linked, duplicate, "
            "existing_key, error)", ["status"], registry=self.registry)
        self.pool = _PoolCollector()
        self.registry.register(self.pool)
        # each label set's two series, looked up once (``labels()`` checks and locks
        # each time: a few us of every request); route templates keep the set small
        self._series: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def observe(self, method: str, endpoint: str, status: int, seconds: float) -> None:
        series = self._series.get((method, endpoint, status))
        if series is None:
            series = self._series[method, endpoint, status] = (
                self.requests.labels(method, endpoint, str(status)),
                self.latency.labels(method, endpoint))
        series[0].inc()
        series[1].observe(seconds)

    def count_adds(self, results: Iterable[AddResult]) -> None:
        for r in results:
            self.adds.labels(r.status).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
