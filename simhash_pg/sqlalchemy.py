"""SQLAlchemy integration: a fingerprint column type, Hamming expressions, block
columns and indexes for an app's own table, and the store's table and search
functions for joins. Every expression here is plain SQL over the store's SQL
functions (sql/current/hamming.sql, sql/current/near.sql); print a statement
to see it.

    from simhash_pg.sqlalchemy import Fingerprint, block_columns, block_indexes, near_clause

    class Post(Base):
        __tablename__ = "posts"
        __table_args__ = tuple(block_indexes("posts"))
        id: Mapped[int] = mapped_column(primary_key=True)
        fingerprint: Mapped[int] = mapped_column(Fingerprint)
        b0, b1, b2, b3 = block_columns()

    select(Post.id, Post.fingerprint.hamming(q)).where(near_clause(Post, q, k=3))

A fingerprint is an unsigned 64-bit int in Python and a signed ``bigint`` in
PostgreSQL (simhash_pg.bits); :class:`Fingerprint` converts both ways. The
expressions call the store's SQL functions (``simhash_hamming``,
``simhash_block``, ``simhash_near``, ``simhash_near_id``), so the database
must hold the store's schema (``simhash-pg db upgrade``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Computed,
    DateTime,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    Table,
    Text,
    and_,
    cast,
    func,
    literal,
    literal_column,
    or_,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.expression import column
from sqlalchemy.sql.functions import Function
from sqlalchemy.sql.selectable import TableValuedAlias
from sqlalchemy.types import TypeDecorator

from simhash_pg.bits import (
    BLOCK_BITS,
    BLOCK_OFFSET,
    BLOCK_SHIFTS,
    BLOCKS,
    DEFAULT_K,
    PIGEONHOLE_K,
    blocks,
    check_fingerprint,
    to_signed,
    to_unsigned,
)
from simhash_pg.db.layout import schema_name

__all__ = [
    "DOCUMENTS",
    "MAX_PROBE_K",
    "Fingerprint",
    "add_block_columns",
    "block",
    "block_columns",
    "block_indexes",
    "documents_table",
    "drop_block_columns",
    "hamming",
    "near",
    "near_clause",
    "near_id",
]

DOCUMENTS = "simhash_documents"

# Largest k the probe forms serve; above it a probe list covers so much of
# each block's index that near() itself scans the table (sql/current/near.sql).
MAX_PROBE_K = 15


class Fingerprint(TypeDecorator[int]):
    """A fingerprint column: unsigned 64-bit ints in Python, ``bigint`` in SQL.

    Binding refuses a value outside 0..2**64-1 (or not an int) with the
    message of :func:`simhash_pg.bits.check_fingerprint`; a stored bigint
    comes back unsigned. ``col.hamming(q)`` and ``col.within(q, k)`` are
    SQL expressions (see :func:`hamming`).
    """

    impl = BigInteger
    cache_ok = True

    class Comparator(TypeDecorator.Comparator[int]):
        def hamming(self, other: Any) -> ColumnElement[int]:
            """``simhash_hamming(self, other)``: the number of differing bits."""
            return hamming(self.expr, other)

        def within(self, other: Any, k: int) -> ColumnElement[bool]:
            """``simhash_hamming(self, other) <= k``: a check, not an index search;
            for one on an app's table use :func:`near_clause`."""
            return hamming(self.expr, other) <= _check_k(k)

    comparator_factory = Comparator

    def process_bind_param(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else to_signed(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else to_unsigned(value)

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        # `col == 2**63` binds through Fingerprint; `col + 1` would not make sense
        return self


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 64:
        raise ValueError(f"k must be an int between 0 and 64, got {k!r}")
    return k


def _fp_expr(value: Any) -> Any:
    """A fingerprint operand: SQL expressions as they are, Python ints as a
    Fingerprint bind parameter (checked now, converted to a signed bigint)."""
    if isinstance(value, ClauseElement) or hasattr(value, "__clause_element__"):
        return value
    return literal(check_fingerprint(value), Fingerprint())


def _store_function(name: str) -> Any:
    """The store's SQL function ``name``, qualified by the store's schema
    (``simhash.simhash_hamming(...)``): an app's session need not have the
    store's schema on its search_path (:mod:`simhash_pg.db.layout`)."""
    return getattr(getattr(func, schema_name()), name)


def hamming(a: Any, b: Any) -> ColumnElement[int]:
    """``simhash.simhash_hamming(a, b)``: the Hamming distance of two
    fingerprints, an integer. Either side is a column or expression, or an
    unsigned int."""
    fn: ColumnElement[int] = _store_function("simhash_hamming")(
        _fp_expr(a), _fp_expr(b), type_=Integer)
    return fn


def block(fp: Any, i: int) -> ColumnElement[int]:
    """Block i (0 = bits 48-63 ... 3 = bits 0-15) as the smallint the block
    columns hold (16-bit value - 32768): the block columns' own expression,
    so it needs none of the store's functions."""
    if isinstance(i, bool) or i not in range(BLOCKS):
        raise ValueError(f"block number must be 0, 1, 2 or 3, got {i!r}")
    value: ColumnElement[Any] = type_coerce(_fp_expr(fp), BigInteger)
    if BLOCK_SHIFTS[i]:  # bigint >> integer (PostgreSQL has no bigint >> bigint)
        value = value.op(">>")(literal_column(str(BLOCK_SHIFTS[i]), Integer))
    return cast(value.op("&")(65535) - BLOCK_OFFSET, SmallInteger)


# -- an app's own table: block columns, indexes, search --------------------------

_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _sql_name(name: str) -> str:
    return name if _PLAIN_NAME.fullmatch(name) else '"' + name.replace('"', '""') + '"'


def _block_sql(fingerprint: str, i: int) -> str:
    """The generated expression of block i, exactly as simhash_documents has it."""
    fp = _sql_name(fingerprint)
    shift = BLOCK_SHIFTS[i]
    shifted = f"({fp} >> {shift})" if shift else fp
    return f"(({shifted} & 65535) - {BLOCK_OFFSET})::smallint"


def block_columns(fingerprint: str = "fingerprint", prefix: str = "b") -> list[Column[int]]:
    """The four block columns ``b0..b3`` of fingerprint column ``fingerprint``:
    ``smallint GENERATED ALWAYS AS (...) STORED``, as in simhash_documents.

    Put them in a Table, or unpack them in a declarative class body
    (``b0, b1, b2, b3 = block_columns()``). PostgreSQL fills them.
    """
    return [Column(f"{prefix}{i}", SmallInteger,
                   Computed(_block_sql(fingerprint, i), persisted=True))
            for i in range(BLOCKS)]


def block_indexes(table: str, fingerprint: str = "fingerprint",
                  prefix: str = "b") -> list[Index]:
    """The four indexes ``(b_i, b_(i+1 mod 4), fingerprint)`` the near search
    probes, named ``<table>_b<i>_idx``, as simhash_documents has them
    (btree deduplication off: the keys are nearly unique). Put them in
    ``__table_args__`` or a Table."""
    return [Index(f"{table}_{prefix}{i}_idx", f"{prefix}{i}", f"{prefix}{(i + 1) % BLOCKS}",
                  fingerprint, postgresql_with={"deduplicate_items": "off"})
            for i in range(BLOCKS)]


def add_block_columns(op: Any, table: str, fingerprint: str = "fingerprint",
                      prefix: str = "b", *, schema: str | None = None) -> None:
    """In an alembic migration: give an existing table ``table`` the four block
    columns and indexes (``add_block_columns(op, "posts")``). PostgreSQL fills
    the STORED columns of existing rows as it adds them (a table rewrite)."""
    for c in block_columns(fingerprint, prefix):
        op.add_column(table, c, schema=schema)
    for ix in block_indexes(table, fingerprint, prefix):
        op.create_index(ix.name, table, [str(e) for e in ix.expressions], schema=schema,
                        postgresql_with={"deduplicate_items": "off"})


def drop_block_columns(op: Any, table: str, prefix: str = "b", *,
                       schema: str | None = None) -> None:
    """The downgrade of :func:`add_block_columns` (the indexes go with the columns)."""
    for i in reversed(range(BLOCKS)):
        op.drop_column(table, f"{prefix}{i}", schema=schema)


@cache
def _masks(radius: int) -> tuple[int, ...]:
    """Every 16-bit mask with at most ``radius`` bits set, fewest bits first."""
    return tuple(sorted((m for m in range(1 << BLOCK_BITS) if m.bit_count() <= radius),
                        key=lambda m: (m.bit_count(), m)))


def _probes(b: int, radius: int) -> list[int]:
    """The block values (stored smallints) within ``radius`` bits of block value b."""
    raw = b + BLOCK_OFFSET
    return [(raw ^ m) - BLOCK_OFFSET for m in _masks(radius)]


def _column(source: Any, name: str) -> Any:
    """Column ``name`` of a Table, alias or subquery (``.c``), or attribute
    ``name`` of a mapped class or aliased class."""
    c = getattr(source, "c", None)
    return c[name] if c is not None else getattr(source, name)


def near_clause(source: Any, q: int, k: int = DEFAULT_K, *, fingerprint: str = "fingerprint",
                prefix: str = "b") -> ColumnElement[bool]:
    """A WHERE condition: the row's fingerprint is within Hamming distance k of q.

    ``source`` is a Table, alias or mapped class with the columns of
    :func:`block_columns` and the indexes of :func:`block_indexes`. The
    condition is what lets PostgreSQL search those indexes (the store's
    pigeonhole forms, sql/current/near.sql), an OR of four index probes with
    the exact Hamming check on each candidate, so the answer is exact:

    - k <= 3, the pair form: for some cyclic i, block i equals q's and block
      i+1 is within one bit (17 values; 1 when k <= 1);
    - k = 4..15: for some i, block i is within k // 4 bits of q's (17, 137
      or 697 values);
    - k > 15: the Hamming check alone (a scan; probing would read most of
      the indexes).

    The probe values are computed here and bound as literals.
    """
    qv = check_fingerprint(q)
    kk = _check_k(k)
    fp_col = _column(source, fingerprint)
    check = hamming(fp_col, qv) <= kk
    if kk > MAX_PROBE_K:
        return check
    qb = blocks(qv)
    cols = [_column(source, f"{prefix}{i}") for i in range(BLOCKS)]
    arms: list[ColumnElement[bool]] = []
    for i in range(BLOCKS):
        if kk <= PIGEONHOLE_K:
            nxt = (i + 1) % BLOCKS
            arms.append(and_(cols[i] == qb[i], cols[nxt].in_(_probes(qb[nxt], kk // 2))))
        else:
            arms.append(cols[i].in_(_probes(qb[i], kk // 4)))
    return and_(or_(*arms), check)


# -- the store's table and search functions ---------------------------------------

def documents_table(metadata: MetaData | None = None, *, name: str = DOCUMENTS,
                    schema: str | None = None) -> Table:
    """The store's ``simhash_documents`` as a Table, to read and join (the store
    writes it: add documents through :class:`simhash_pg.SimhashStore`).

    Give it its own MetaData (the default) rather than the app's: the
    migrations own this table, and ``metadata.create_all`` must never
    create it. ``id`` is given as the primary key (the table's own key is
    ``(id, created_at)``, for its partitions; ids are unique).
    """
    md = metadata if metadata is not None else MetaData()
    return Table(
        name, md,
        Column("id", BigInteger, primary_key=True),
        Column("key", Text),
        Column("fingerprint", Fingerprint, nullable=False),
        *(Column(f"b{i}", SmallInteger) for i in range(BLOCKS)),
        Column("duplicate_of", BigInteger),
        Column("created_at", DateTime(timezone=True), nullable=False),
        Column("meta", JSONB),
        Column("verify_text", Text),
        Column("sentence_sig", BigInteger),
        Column("sentence_hashes", ARRAY(BigInteger)),
        Column("body", Text),  # revision 0021: the text as written (None: not kept)
        schema=schema_name(schema),  # the store's (revision 0022)
        info={"simhash_pg": "store"},
    )


def _near_columns(fn: Function[Any]) -> TableValuedAlias:
    return fn.table_valued(column("id", BigInteger), column("key", Text),
                           column("distance", Integer))


def near(fp: Any, k: int = DEFAULT_K) -> TableValuedAlias:
    """``simhash_near(fp, k)`` as a table: stored documents (``id``, ``key``,
    ``distance``) within k of ``fp``, a fingerprint or a fingerprint column
    (add ``.lateral()`` to take it from each row of another table)."""
    return _near_columns(_store_function("simhash_near")(_fp_expr(fp), _check_k(k)))


def near_id(doc_id: Any, k: int = DEFAULT_K) -> TableValuedAlias:
    """``simhash_near_id(doc_id, k)`` as a table: the stored documents within k
    of stored document ``doc_id`` (an int or an id column), leaving it out."""
    if not (isinstance(doc_id, ClauseElement) or hasattr(doc_id, "__clause_element__")):
        doc_id = literal(doc_id, BigInteger())
    return _near_columns(_store_function("simhash_near_id")(doc_id, _check_k(k)))

