"""simhash-pg from an app's SQLAlchemy models (docs/app.md, "SQLAlchemy").

    python examples/sqlalchemy_app.py postgresql://user@host/appdb

The database must hold the store's schema (``simhash-pg db upgrade --dsn ...``).
The example makes two tables of its own, ``example_posts`` and
``example_articles``, and adds a few documents to the store:

- ``Post`` keeps its own fingerprint column, with the four block columns and
  indexes, and is searched for neighbours within k (index scans);
- ``Article`` points at a document in the store, and is joined to that
  document's near-duplicates in one ORM query.
"""

from __future__ import annotations

import sys
from typing import Any

import psycopg
from sqlalchemy import BigInteger, Engine, String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from simhash_pg import SimhashStore, fingerprint
from simhash_pg.sqlalchemy import (
    Fingerprint,
    block_columns,
    block_indexes,
    documents_table,
    near_clause,
    near_id,
)


class Base(DeclarativeBase):
    pass


class StoredDocument(Base):
    """The store's rows, read-only (its own MetaData: create_all never makes it)."""

    __table__ = documents_table()

    # typed names for a few of its columns (the Table maps them all)
    id: Mapped[int]
    key: Mapped[str | None]
    fingerprint: Mapped[int]


class Post(Base):
    """An app table with a fingerprint of its own, searchable within k."""

    __tablename__ = "example_posts"
    __table_args__ = tuple(block_indexes("example_posts"))

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String)
    fingerprint: Mapped[int] = mapped_column(Fingerprint)
    b0, b1, b2, b3 = block_columns()


class Article(Base):
    """An app row that refers to a document in the store."""

    __tablename__ = "example_articles"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String)
    # simhash_documents.id (no FOREIGN KEY: the store's table is partitioned
    # and keyed by (id, created_at))
    doc_id: Mapped[int] = mapped_column(BigInteger, index=True)


def make_engine(dsn: str) -> Engine:
    """An engine on psycopg 3 for a DSN or conninfo string (as the CLI takes)."""
    return create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn))


def posts_near(session: Session, q: int, k: int = 3) -> list[tuple[int, str, int]]:
    """The posts within Hamming distance k of fingerprint q: (id, title, distance)."""
    stmt = (select(Post.id, Post.title, Post.fingerprint.hamming(q).label("distance"))
            .where(near_clause(Post, q, k))
            .order_by("distance", Post.id))
    return [(r.id, r.title, r.distance) for r in session.execute(stmt)]


def articles_near_document(session: Session, doc_id: int,
                           k: int = 3) -> list[tuple[str, str | None, int]]:
    """The articles whose documents near-duplicate stored document ``doc_id``,
    with that document's key and its distance, nearest first, in one query."""
    n = near_id(doc_id, k)
    stmt = (select(Article.title, StoredDocument.key, n.c.distance)
            .join(n, n.c.id == Article.doc_id)
            .join(StoredDocument, StoredDocument.id == n.c.id)
            .order_by(n.c.distance, Article.id))
    return [(r.title, r.key, r.distance) for r in session.execute(stmt)]


_FOX = ("The quick brown fox jumps over the lazy dog near the {} bank today, and then it "
        "runs home across the green field before the rain comes down on the old farm.")
TEXTS = {
    "a": _FOX.format("river"),
    "a2": _FOX.format("lake"),  # 3 bits from "a"
    "b": "An entirely different sentence about databases, indexes and query plans.",
}


def main(dsn: str) -> dict[str, Any]:
    engine = make_engine(dsn)
    try:
        Base.metadata.create_all(engine)
        with SimhashStore(dsn) as store:
            ids: dict[str, int] = {}
            for name, text in TEXTS.items():
                added = store.add(text, key=f"example:{name}", dedup=False)
                assert added.id is not None
                ids[name] = added.id
        with Session(engine) as session:
            session.add_all([Post(title=name, fingerprint=fingerprint(text))
                             for name, text in TEXTS.items()])
            session.add_all([Article(title=f"article {name}", doc_id=doc)
                             for name, doc in ids.items()])
            session.commit()
            near_posts = posts_near(session, fingerprint(TEXTS["a"]), k=3)
            near_articles = articles_near_document(session, ids["a"], k=3)
    finally:
        engine.dispose()
    for post in near_posts:
        print("post", *post)
    for article in near_articles:
        print("article", *article)
    return {"posts": near_posts, "articles": near_articles}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/sqlalchemy_app.py DSN")
    main(sys.argv[1])
