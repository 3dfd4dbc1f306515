"""Reading documents for ``simhash-pg dedup`` and ``fingerprint`` (only the commands read files).

Every input yields, in order, either a :class:`Record` or a :class:`BadRecord`
naming ``file:line`` and the problem, so one malformed line never stops a
long run (unless the caller chooses to stop on it).

Formats, chosen from the file name unless given:

- ``jsonl``: one JSON object per line (``.jsonl``, ``.ndjson``)
- ``csv`` / ``tsv``: a header row, then one document per row
- ``lines``: plain text, one document per line (``.txt``)
- ``doc``: the whole file is one document, its key the file's path
  (``.md``, ``.markdown``, ``.html``/``.htm``, whose markup is stripped, and
  any other file, unless its first line is a JSON object: then ``jsonl``).
  So a licence or a ``copyright`` file named on the command line is one
  document, not one per line.
- a directory: every ``.txt``, ``.md``, ``.html``/``.htm`` file below it, and
  every file without an extension that is UTF-8 text (``GPL-2``,
  ``copyright``), is one document, its key the file's path. Other files and
  hidden ones (``.git``) are skipped and counted in :class:`Skipped`, which
  says how to include them: ``all_files`` reads every UTF-8 text file.
- ``-``: standard input, ``lines`` unless the first line starts with ``{``

A trailing ``.gz`` is decompressed. A file that is not text at all (a NUL
byte, or mostly lines that are not UTF-8, in its first buffer of bytes) or a
CSV without the text column is an :class:`InputError`, raised before its first record.
Otherwise bytes that are not UTF-8 make that record a :class:`BadRecord`;
the rest of the file is still read. A JSON escape that is not valid Unicode
(a lone surrogate such as ``"\\udc80"``) is no reason to skip a record here:
what the store accepts is the store's rule, in one place
(:mod:`simhash_pg.textrules` for a key, rule 2 of
:mod:`simhash_pg.text.normalize` for a text), so ``dedup`` takes what the
HTTP API takes.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from simhash_pg.text.normalize import strip_html

FORMATS = ("jsonl", "csv", "tsv", "lines", "doc")
DOC_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm")
SHOWN_SKIPPED = 3  # file names given as examples of the skipped ones
# Fields tried for the key when --key-field is not given.
KEY_FIELDS = ("key", "id", "url")
# At most this much of a file's start (one read buffer) tells text from binary.
SNIFF_BYTES = 64 * 1024
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
                  ".txt": "lines", ".md": "doc", ".markdown": "doc", ".html": "doc",
                  ".htm": "doc"}

# csv's default field limit (128 KiB) is smaller than real documents.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass(frozen=True)
class Record:
    text: str
    key: str | None
    where: str  # "file:line", for messages and the report
    fields: dict[str, Any] | None = None  # the whole input record, for --out


@dataclass(frozen=True)
class BadRecord:
    where: str
    reason: str


@dataclass
class ReadProgress:
    """How far the reading is, as it goes (not batch by batch): the bytes of the input
    files passed so far, of ``total``, and the records read.

    ``on_advance`` (a progress line) is called after each record, so a run smaller
    than one batch shows its reading move before anything is committed.
    """

    total: int | None  # None: not known beforehand (stdin)
    done: int = 0
    records: int = 0  # documents and bad records read so far
    on_advance: Callable[[], None] | None = None

    def advance(self, done: int | None = None) -> None:
        if done is not None:
            self.done = done
        if self.on_advance is not None:
            self.on_advance()


def input_bytes(paths: Iterable[str]) -> int | None:
    """The inputs' total size on disk (a directory's: its files that are not hidden,
    read or skipped alike, as the reading passes them), or None if one is stdin."""
    total = 0
    for path in paths:
        if path == "-":
            return None
        if os.path.isdir(path):
            total += sum(_size(f) for f, hidden in _walk(path) if not hidden)
        elif os.path.isfile(path):
            total += os.path.getsize(path)
        else:
            return None
    return total


@dataclass
class Skipped:
    """Files of the input directories that were not read, by reason (for a note after the run)."""

    files: dict[str, list[str]] = field(default_factory=dict)  # reason -> paths

    def add(self, reason: str, path: str) -> None:
        self.files.setdefault(reason, []).append(path)

    def __len__(self) -> int:
        return sum(map(len, self.files.values()))

    def note(self) -> str:
        """What was skipped, why, a few examples, and how to include them ("" if nothing)."""
        if not self:
            return ""
        parts = [f"{len(paths):,} {reason} (e.g. {', '.join(paths[:SHOWN_SKIPPED])})"
                 for reason, paths in self.files.items()]
        return (f"skipped {len(self):,} files in the input directories: {'; '.join(parts)}. "
                f"A directory's {', '.join(DOC_SUFFIXES)} files and its UTF-8 text files "
                "without an extension are read, one document each; --all-files reads "
                "every UTF-8 text file, or name a file on the command line")


def _extension(name: str) -> str:
    """A file name's extension, lower case; "" for none, or for a version (GPL-2.0, LGPL-2.1)."""
    suffix = Path(name).suffix.lower()
    return suffix if any(ch.isalpha() for ch in suffix) else ""


class InputError(Exception):
    """An input that cannot be read at all (missing file, unknown format, not text)."""


def not_text(head: bytes) -> str | None:
    """Why ``head`` (a file's first bytes) is not a text file, or None if it looks like one.

    A NUL byte never occurs in UTF-8 text; one bad line among good ones is a
    bad record, but a file where most lines do not decode is not UTF-8 at all.
    """
    if b"\x00" in head:
        return "not a text file (it holds NUL bytes; binary?)"
    lines = head.splitlines()
    if len(lines) > 1 and not head.endswith((b"\n", b"\r")):
        lines.pop()  # maybe cut mid-line (and mid-character)
    bad = 0
    for line in lines:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad += 1
    if lines and bad * 2 > len(lines):
        return f"not UTF-8 text ({bad} of the first {len(lines)} lines do not decode)"
    return None


def check_inputs(paths: Iterable[str], *, fmt: str | None = None,
                 text_field: str = "text") -> None:
    """Raise :class:`InputError` for the first file that cannot be read as a whole.

    For a command that stores as it reads: a bad second file must stop the
    run before the first one's documents are stored. Standard input is
    checked when it is read (it cannot be read twice).
    """
    for path in paths:
        if path != "-":
            for _ in read_inputs([path], fmt=fmt, text_field=text_field):
                break  # the checks run before the first record


def detect_format(path: str, fmt: str | None = None) -> str:
    """The format of ``path``: given, from its extension, or "auto" (jsonl or doc by content)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        return fmt
    name = path[:-3] if path.endswith(".gz") else path
    return _SUFFIX_FORMAT.get(_extension(name), "auto")


def read_inputs(
    paths: Iterable[str],
    *,
    fmt: str | None = None,
    text_field: str = "text",
    key_field: str | None = None,
    stdin: IO[bytes] | None = None,
    progress: ReadProgress | None = None,
    all_files: bool = False,
    skipped: Skipped | None = None,
) -> Iterator[Record | BadRecord]:
    """Yield every document of every input, in order.

    ``progress.done`` follows the bytes of the files read (compressed bytes
    for a ``.gz``) and ``progress.records`` the records, for a progress bar with
    an ETA. The files of a directory that are not read are added to
    ``skipped``; ``all_files`` reads every UTF-8 text file of a directory.
    """
    reading = progress if progress is not None else ReadProgress(total=None)
    base = 0
    for path in paths:
        if path == "-":
            for item in _read_stdin(stdin or sys.stdin.buffer, fmt, text_field, key_field):
                reading.records += 1
                reading.advance()
                yield item
        elif os.path.isdir(path):
            for item in _read_dir(path, all_files,
                                  skipped if skipped is not None else Skipped(), reading):
                reading.records += 1
                reading.advance()
                yield item
            base = reading.done
        elif os.path.isfile(path):
            with open(path, "rb") as raw:
                stream: IO[bytes] = (gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
                                     if path.endswith(".gz") else raw)
                for item in _read_stream(path, stream, detect_format(path, fmt),
                                         text_field, key_field):
                    reading.records += 1
                    reading.advance(base + raw.tell())
                    yield item
            base += os.path.getsize(path)
            reading.advance(base)
        else:
            raise InputError(f"{path}: no such file or directory")


def _read_stdin(stream: IO[bytes], fmt: str | None, text_field: str,
                key_field: str | None) -> Iterator[Record | BadRecord]:
    buffered: Any = stream if hasattr(stream, "peek") else io.BufferedReader(stream)  # type: ignore[type-var,unused-ignore]
    if fmt is None:
        head = buffered.peek(64).lstrip()
        fmt = "jsonl" if head.startswith(b"{") else "lines"
    yield from _read_stream("stdin", buffered, detect_format("-", fmt), text_field, key_field)


def _decode(raw: bytes, where: str) -> str | BadRecord:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BadRecord(where, f"not valid UTF-8 ({exc.reason} at byte {exc.start})")


def _read_stream(name: str, stream: IO[bytes], fmt: str, text_field: str,
                 key_field: str | None) -> Iterator[Record | BadRecord]:
    with stream:
        head = stream.peek(SNIFF_BYTES) if hasattr(stream, "peek") else b""
        problem = not_text(head[:SNIFF_BYTES])
        if problem is not None:
            raise InputError(f"{name}: {problem}")
        if fmt == "auto":
            first = head.removeprefix(b"\xef\xbb\xbf").lstrip()
            fmt = "jsonl" if first.startswith(b"{") else "doc"
        if fmt == "doc":
            yield _whole(name, stream.read())
            return
        if fmt in ("csv", "tsv"):
            yield from _read_csv(name, stream, "\t" if fmt == "tsv" else ",",
                                 text_field, key_field)
            return
        for lineno, raw in enumerate(stream, 1):
            where = f"{name}:{lineno}"
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            line = _decode(raw.rstrip(b"\r\n"), where)
            if isinstance(line, BadRecord):
                yield line
            elif not line.strip():
                continue  # blank lines are not documents
            elif fmt == "jsonl":
                yield _from_json(line, where, text_field, key_field)
            else:
                yield Record(text=line, key=where, where=where)


def _from_json(line: str, where: str, text_field: str,
               key_field: str | None) -> Record | BadRecord:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return BadRecord(where, f"malformed JSON at column {exc.colno}: {exc.msg}")
    if not isinstance(obj, dict):
        return BadRecord(where, f"expected a JSON object, got {type(obj).__name__}")
    return _from_fields(obj, where, text_field, key_field)


def _from_fields(obj: dict[str, Any], where: str, text_field: str,
                 key_field: str | None) -> Record | BadRecord:
    text = obj.get(text_field)
    if not isinstance(text, str):
        fields = ", ".join(sorted(map(str, obj))) or "none"
        what = "missing" if text is None else f"of type {type(text).__name__}, not a string"
        return BadRecord(where, f"field {text_field!r} is {what} (fields: {fields})")
    if key_field is not None:
        if obj.get(key_field) in (None, ""):
            return BadRecord(where, f"key field {key_field!r} is missing or empty")
        key = str(obj[key_field])
    else:
        found = next((obj[f] for f in KEY_FIELDS if obj.get(f) not in (None, "")), None)
        key = str(found) if found is not None else where
    return Record(text=text, key=key, where=where, fields=obj)


def _read_csv(name: str, stream: IO[bytes], delimiter: str, text_field: str,
              key_field: str | None) -> Iterator[Record | BadRecord]:
    # surrogateescape keeps csv parsing through bad bytes; the row that holds
    # them is then reported instead of the whole file.
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape", newline="")
    reader = csv.DictReader(text, delimiter=delimiter)
    if reader.fieldnames is None:
        return
    if text_field not in reader.fieldnames:
        raise InputError(f"{name}: no column {text_field!r} in the header "
                         f"({', '.join(reader.fieldnames)}); use --text-field")
    start = 2
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield BadRecord(f"{name}:{reader.line_num}", f"malformed CSV: {exc}")
            start = reader.line_num + 1
            continue
        where = f"{name}:{start}"
        start = reader.line_num + 1
        if None in row or any(v is None for v in row.values()):
            yield BadRecord(where, f"expected {len(reader.fieldnames)} columns")
            continue
        if any(_has_bad_bytes(v) for v in row.values()):
            yield BadRecord(where, "not valid UTF-8")
            continue
        yield _from_fields(dict(row), where, text_field, key_field)


def _has_bad_bytes(value: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in value)


def _whole(path: str, raw: bytes) -> Record | BadRecord:
    """A whole file as one document, its key the path (HTML markup stripped)."""
    where = f"{path}:1"
    text = _decode(raw.removeprefix(b"\xef\xbb\xbf"), where)
    if isinstance(text, BadRecord):
        return text
    if _extension(path.removesuffix(".gz")) in (".html", ".htm"):
        text = strip_html(text)
    return Record(text=text, key=path, where=where)


def _walk(root: str) -> Iterator[tuple[str, bool]]:
    """A directory's files in reading order, each with whether it is hidden.

    Hidden directories (``.git``) are not entered.
    """
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in sorted(filenames):
            yield os.path.join(dirpath, fn), fn.startswith(".")


def _size(path: str) -> int:
    """A file's size for the progress bar; 0 for one that cannot be seen (a broken link)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _read_dir(root: str, all_files: bool, skipped: Skipped,
              reading: ReadProgress) -> Iterator[Record | BadRecord]:
    """Each file a document: the known extensions, and the others that are UTF-8 text.

    A file without an extension is read only when it is text (a NUL byte or
    bytes that are not UTF-8 say it is not), so a directory of licences or
    ``copyright`` files is read as it is; one with another extension only
    with ``all_files``. Hidden files and directories are never read.
    ``reading.done`` passes every file that is not hidden, read or skipped
    (:func:`input_bytes` counts the same ones).
    """
    for path, hidden in _walk(root):
        if hidden:
            skipped.add("hidden", path)
            continue
        reading.advance(reading.done + _size(path))
        ext = _extension(os.path.basename(path))
        if ext and ext not in DOC_SUFFIXES and not all_files:
            skipped.add("with another extension", path)
            continue
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError:  # another user's file, a broken link: one file, not the run
            skipped.add("not readable", path)
            continue
        if ext in DOC_SUFFIXES:
            yield _whole(path, raw)
            continue
        record = None if not_text(raw[:SNIFF_BYTES]) else _whole(path, raw)
        if isinstance(record, Record):
            yield record
        else:
            skipped.add("not UTF-8 text", path)
