"""Bundled data: a small sample corpus of redistributable texts (see NOTICE)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

SAMPLE_NAME = "sample.jsonl.gz"


def iter_sample() -> Iterator[dict[str, Any]]:
    """The bundled sample corpus: dicts with id, lang, text, source, licence, group."""
    ref = resources.files(__name__).joinpath(SAMPLE_NAME)
    with ref.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
