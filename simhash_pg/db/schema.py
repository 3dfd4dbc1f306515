"""The tables, as SQLAlchemy 2 Core: the model ``alembic check`` compares with.

The DDL lives in the numbered ``sql/`` files that the revisions in
``migrations/versions/`` run, each naming its own; these definitions must
describe the same tables (a test runs ``alembic check``).
Since revision 0005 simhash_documents is partitioned by range of created_at;
its partitions (simhash_documents_p<day>, _legacy, _default) are made and
dropped by SQL functions and are not modelled (migrations/env.py leaves them
out of the comparison).
The SQL functions are not modelled here: alembic does not know functions;
today's definitions are in ``sql/current/``.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

__all__ = ["BLOCK_COLUMNS", "BODY_COMMENT", "documents", "keys", "mask_sets", "meta", "metadata",
           "text_keys"]

metadata = MetaData()

BLOCK_COLUMNS = ("b0", "b1", "b2", "b3")


# simhash_documents.body's comment, as sql/0021_body.sql sets it
BODY_COMMENT = (
    "simhash-pg: the text as written (its visible text, markup stripped); NULL: a fingerprint, "
    "a row stored before revision 0021, or a store with keep_text=False"
)


def _block_expr(shift: int) -> str:
    inner = f"(fingerprint >> {shift})" if shift else "fingerprint"
    return f"((({inner} & 65535) - 32768))::smallint"


documents = Table(
    "simhash_documents",
    metadata,
    # a sequence, not an identity: identity on a partitioned table needs PG 17
    Column(
        "id",
        BigInteger,
        primary_key=True,
        autoincrement=False,
        server_default=text("nextval('simhash_documents_id_seq'::regclass)"),
    ),
    Column("key", Text, nullable=True),
    Column("fingerprint", BigInteger, nullable=False),
    *(
        Column(name, SmallInteger, Computed(_block_expr(shift), persisted=True))
        for name, shift in zip(BLOCK_COLUMNS, (48, 32, 16, 0), strict=True)
    ),
    # no foreign key since 0005: id alone is not unique on a partitioned table
    Column("duplicate_of", BigInteger, nullable=True),
    # the partition key, hence part of the primary key
    Column(
        "created_at",
        DateTime(timezone=True),
        primary_key=True,
        nullable=False,
        server_default=func.now(),
    ),
    Column("meta", JSONB, nullable=True),
    # revision 0003 (sql/0003_verification.sql): kept per the verify mode
    Column("verify_text", Text, nullable=True),
    Column("sentence_sig", BigInteger, nullable=True),
    # revision 0015: the hashes of its longest sentences, each a key (with its
    # min-hash and title keys since 0016); looked up through simhash_text_keys
    Column("sentence_hashes", ARRAY(BigInteger), nullable=True),
    # revision 0021 (sql/0021_body.sql): the text as written, for people
    Column("body", Text, nullable=True, comment=BODY_COMMENT),
    # not unique: keys are unique through simhash_keys (revision 0005)
    Index("simhash_documents_key_idx", "key", postgresql_where=text("key IS NOT NULL")),
    # revision 0004 (sql/0004_pair_indexes.sql): (b_i, b_(i+1 mod 4), fingerprint)
    *(
        Index(f"simhash_documents_{name}_idx", name, nxt, "fingerprint")
        for name, nxt in zip(BLOCK_COLUMNS, BLOCK_COLUMNS[1:] + BLOCK_COLUMNS[:1], strict=True)
    ),
    Index("simhash_documents_created_at_idx", "created_at", postgresql_using="brin"),
    Index(
        "simhash_documents_sentence_sig_idx",
        "sentence_sig",
        postgresql_where=text("sentence_sig IS NOT NULL"),
    ),
    Index(
        "simhash_documents_duplicate_of_idx",
        "duplicate_of",
        postgresql_where=text("duplicate_of IS NOT NULL"),
    ),
    postgresql_partition_by="RANGE (created_at)",
)

# One row per stored key, kept by triggers on simhash_documents: "one row per
# key" across partitions (sql/0005_partitions.sql).
keys = Table(
    "simhash_keys",
    metadata,
    Column("key", Text, primary_key=True),
    Column("id", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("simhash_keys_created_at_idx", "created_at", postgresql_using="brin"),
)

# One row per key of a stored text (sentence_hashes), kept by triggers on
# simhash_documents and partitioned like it (revision 0017,
# sql/current/text_keys.sql): the key look-up walks this btree.
text_keys = Table(
    "simhash_text_keys",
    metadata,
    Column("hash", BigInteger, nullable=False),
    Column("id", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # the row's fingerprint (revision 0018): a popular key's holders are
    # ranked by distance to the query without reading the documents; NULL in
    # key rows stored before 0018 (the upgrade rewrites nothing)
    Column("fingerprint", BigInteger, nullable=True),
    Index("simhash_text_keys_hash_idx", "hash"),
    postgresql_partition_by="RANGE (created_at)",
    comment="simhash-pg: one row per key of a stored text (simhash_documents.sentence_hashes),"
    " kept by triggers",
)

meta = Table(
    "simhash_meta",
    metadata,
    Column("name", Text, primary_key=True),
    Column("value", JSONB, nullable=False),
)

# Every 16-bit mask with at most ``radius`` bits set: the probe values of the
# SQL search functions, filled once by revision 0006 and never changed.
mask_sets = Table(
    "simhash_mask_sets",
    metadata,
    Column("radius", Integer, primary_key=True),
    Column("masks", ARRAY(Integer), nullable=False),
    CheckConstraint("radius BETWEEN 0 AND 16"),
    comment="simhash-pg: every 16-bit mask with at most radius bits set, fewest bits first"
    " (read by simhash_masks and simhash_probe_sets; never changes)",
)
