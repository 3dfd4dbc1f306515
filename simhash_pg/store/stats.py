"""Rows and sizes of a store, from the catalog: what ``simhash-pg stats`` prints."""

from __future__ import annotations

from typing import Any

import psycopg

__all__ = ["PER_ROW_FROM", "table_stats"]

# Below this many rows bytes_per_row is None: the empty pages every table,
# index and partition starts with (~0.5 MB) dominate, and 4 rows gave a
# meaningless 141,312 bytes per row.
PER_ROW_FROM = 10_000

# Summed over the partitions (pg_partition_tree lists nothing for a plain
# table: the table itself is added); keys_bytes: the simhash_keys table;
# text_keys: the key table a text's keys are looked up in (revision 0017),
# whose index, with the documents', is what a look-up reads at random.
_SIZES = (
    "SELECT (SELECT count(*) FROM simhash_documents), sum(pg_table_size(t.relid)),"
    " sum(pg_indexes_size(t.relid)), current_setting('server_version'),"
    " count(*) FILTER (WHERE t.level > 0),"
    " coalesce(pg_total_relation_size(to_regclass('simhash_keys')), 0),"
    " (SELECT coalesce(sum(pg_table_size(k.relid)), 0)"
    "  FROM pg_partition_tree(to_regclass('simhash_text_keys')) AS k),"
    " (SELECT coalesce(sum(pg_indexes_size(k.relid)), 0)"
    "  FROM pg_partition_tree(to_regclass('simhash_text_keys')) AS k),"
    " pg_size_bytes(current_setting('shared_buffers'))"
    " FROM (SELECT 'simhash_documents'::regclass AS relid, 0 AS level UNION"
    " SELECT relid, level FROM pg_partition_tree('simhash_documents')) AS t"
)


def table_stats(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Rows, bytes of table, indexes and keys, partitions, the look-up's indexes against
    shared_buffers, and the server's version."""
    row = conn.execute(_SIZES).fetchone()
    assert row is not None
    (rows, table_bytes, index_bytes, version, partitions, keys_bytes, text_keys_table,
     text_keys_indexes, shared_buffers) = row
    table_bytes, index_bytes = int(table_bytes), int(index_bytes)
    text_keys_bytes = int(text_keys_table) + int(text_keys_indexes)
    return {
        "rows": rows,
        "table_bytes": table_bytes,
        "index_bytes": index_bytes,
        "keys_bytes": keys_bytes,
        "text_keys_bytes": text_keys_bytes,
        "partitions": partitions,
        "bytes_per_row": (round((table_bytes + index_bytes + keys_bytes + text_keys_bytes)
                                / rows, 1) if rows >= PER_ROW_FROM else None),
        # the pages a look-up reads at random: the documents' indexes and the key table's
        "lookup_index_bytes": index_bytes + int(text_keys_indexes),
        "shared_buffers_bytes": int(shared_buffers),
        "server_version": version,
    }
