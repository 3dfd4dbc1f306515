"""An add's look-up in two steps (VerifyPolicy.adds_in_two_steps).

A long text's verified add first asks its keys and its own block values;
it probes only when the rule accepts none of the rows they find. The
promise: whether an add finds a duplicate never changes, and a text that
needs both steps gets exactly near()'s look-up. Checked against the
whole look-up (store/lookup.py's ``lookup``), itself checked against brute
force in test_store_verify.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from test_body import round_trips
from test_store_verify import HYPO, WORDS, _sentences, corpus, reset

from simhash_pg.bits import to_signed
from simhash_pg.store import SimhashStore
from simhash_pg.store.lookup import lookup, lookup_for_add
from simhash_pg.verify.candidates import text_and_vtext


def _ids(found: list[Any]) -> list[tuple[int, int]]:
    return [(c.id, c.distance) for c in found]


@HYPO
@given(corpus(), st.sampled_from([3, 6]))
def test_two_steps_find_a_duplicate_exactly_when_the_whole_look_up_does(
    pg_dsn: str, texts: list[str], k: int
) -> None:
    half = len(texts) // 2
    with SimhashStore(pg_dsn, verify="all", k=k) as store:
        reset(store)
        store.add_many(texts[:half], dedup=False)
        conn, policy = store.connection, store.policy
        queries = texts[half:] + texts[:2]
        analysed = [text_and_vtext(store.fingerprinter, t, policy) for t in queries]
        fps = [to_signed(fp) for fp, _ in analysed]
        vts = [vt for _, vt in analysed]
        whole = lookup(conn, fps, vts, store.k, policy)
        # one query at a time (the single form) and all at once (the batch form)
        one_by_one = [lookup_for_add(conn, [f], [v], store.k, policy)[0]
                      for f, v in zip(fps, vts, strict=True)]
        for got in (one_by_one, lookup_for_add(conn, fps, vts, store.k, policy)):
            for vt, w, a in zip(vts, whole, got, strict=True):
                assert bool(a.found) == bool(w)
                if a.first_step:
                    assert policy.adds_in_two_steps(vt.text, store.k)
                    assert set(_ids(a.found)) <= set(_ids(w))
                else:
                    assert _ids(a.found) == _ids(w)


def test_a_copy_is_found_by_the_first_step_alone(pg_dsn: str, tmp_path: Path) -> None:
    """The add of a stored text's copy makes one look-up round trip; a new text's
    makes two (its probes asked as well): BEGIN, the locks, the key, the look-up
    (one or two), the insert of a new row, COMMIT."""
    text = _sentences(WORDS[:30])
    trace = tmp_path / "libpq.trace"
    with SimhashStore(pg_dsn, verify="all") as store:
        reset(store)
        fp, vt = text_and_vtext(store.fingerprinter, text, store.policy)
        assert store.policy.adds_in_two_steps(vt.text, store.k)
        first = store.add(text, key="first")
        store.add(_sentences(WORDS[5:25]), key="warm-up")  # its statements prepared
        conn = store.connection
        (got,) = lookup_for_add(conn, [to_signed(fp)], [vt], store.k, store.policy)
        assert got.first_step and [c.id for c in got.found] == [first.id]
        results: dict[str, Any] = {}
        trips = {key: round_trips(conn, lambda d=doc, k=key: results.__setitem__(
                     k, store.add(d, key=k)), trace)
                 for doc, key in ((text, "copy"), (_sentences(WORDS[-30:]), "new"))}
        assert not results["copy"].inserted and results["copy"].duplicate_of == first.id
        assert results["new"].inserted and results["new"].duplicate_of is None
        assert trips == {"copy": 5, "new": 7}


def _planted(fp: int, probes: Any) -> int:
    """A fingerprint 4 bits from ``fp`` that only the probes reach: block 0 one of
    its probe values 2 bits away (the pair (b0, b1) meets), block 2 two bits
    flipped (so no pair of own values meets: the first step misses it)."""
    own0 = (fp >> 48) & 0xFFFF
    value = next(v + 32768 for v in probes[0] if bin((v + 32768) ^ own0).count("1") == 2)
    return ((fp & ~(0xFFFF << 48)) | (value << 48)) ^ (0b11 << 16)


def test_a_row_only_the_probes_reach_is_found_by_the_second_step(pg_dsn: str) -> None:
    """A stored row with the query's text, no keys and 4 bits away, beyond the own
    values' reach: the first step finds nothing, the second finds it, as near() does;
    with a keyed copy stored further away, the first step names that one instead."""
    text = _sentences(WORDS[:30])
    with SimhashStore(pg_dsn, verify="all") as store:
        reset(store)
        conn, policy = store.connection, store.policy
        fp, vt = text_and_vtext(store.fingerprinter, text, policy)
        assert vt.probes is not None
        planted = _planted(fp, vt.probes)
        assert bin(planted ^ fp).count("1") == 4
        conn.execute("INSERT INTO simhash_documents (key, fingerprint, verify_text)"
                     " VALUES ('planted', %s, %s)", [to_signed(planted), vt.text])
        (whole,) = lookup(conn, [to_signed(fp)], [vt], store.k, policy)
        (got,) = lookup_for_add(conn, [to_signed(fp)], [vt], store.k, policy)
        assert [c.key for c in whole] == [c.key for c in got.found] == ["planted"]
        assert not got.first_step
        # a copy with its keys, 9 bits away (within the probes' cap, but beyond
        # their reach): the whole look-up names the nearer planted row, the add
        # the copy its keys find first
        far = store.fingerprinter.fingerprint(text) ^ 0b1_1111_1111
        conn.execute("INSERT INTO simhash_documents (key, fingerprint, verify_text,"
                     " sentence_sig, sentence_hashes) VALUES ('copy', %s, %s, %s, %s)",
                     [to_signed(far), vt.text, vt.sig, list(vt.hashes)])
        (whole,) = lookup(conn, [to_signed(fp)], [vt], store.k, policy)
        (got,) = lookup_for_add(conn, [to_signed(fp)], [vt], store.k, policy)
        assert [c.key for c in whole] == ["planted", "copy"]
        assert got.first_step and [c.key for c in got.found] == ["copy"]
        r = store.add(text, key="again")
        assert not r.inserted and r.duplicate_key == "copy"
        # add_many decides as the add did
        batch: list[Any] = []
        store.add_many([text], progress=batch.extend)
        assert [(b.inserted, b.duplicate_key) for b in batch] == [(False, "copy")]
