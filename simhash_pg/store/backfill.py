"""backfill_minhash_keys: give rows stored before revision 0016 their min-hash keys.

A long text's row holds its min-hash keys in ``sentence_hashes`` since
revision 0016 (:func:`simhash_pg.text.signatures.minhash_keys`); rows stored
before hold none, so a copy with scattered edits finds them only by its
probes and sentences. The keys are a function of the verification text,
which the row keeps: this adds them in place, in batches by id, a commit
each. Idempotent (a row that holds its keys is left alone), so an
interrupted run is resumed by running it again; concurrent adds are fine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from simhash_pg.text.signatures import MIN_MINHASH_CHARS, minhash_keys

__all__ = ["backfill_minhash_keys"]

_ROWS = ("SELECT id, created_at, verify_text, sentence_hashes FROM simhash_documents"
         " WHERE id > %s AND length(verify_text) >= %s ORDER BY id LIMIT %s")
_SET = "UPDATE simhash_documents SET sentence_hashes = %s WHERE id = %s AND created_at = %s"


def backfill_minhash_keys(
    conn: psycopg.Connection[Any],
    *,
    batch_size: int = 5000,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Add the missing min-hash keys of every kept verification text; the rows changed.

    ``progress(rows read, rows changed)`` after each batch.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    last, read, changed = 0, 0, 0
    while rows := conn.execute(_ROWS, [last, MIN_MINHASH_CHARS, batch_size]).fetchall():
        last = rows[-1][0]
        todo = []
        for id_, created_at, vtext, hashes in rows:
            keys = minhash_keys(vtext)
            held = set(hashes or ())
            if not held.issuperset(keys):
                todo.append((sorted(held.union(keys)), id_, created_at))
        if todo:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(_SET, todo)
        read += len(rows)
        changed += len(todo)
        if progress is not None:
            progress(read, changed)
    return changed
