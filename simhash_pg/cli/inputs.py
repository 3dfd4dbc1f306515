"""Reading documents for ``simhash-pg dedup`` and ``fingerprint`` (only the commands read files).

Every input yields, in order, either a :class:`Record` or a :class:`BadRecord`
naming ``file:line`` and the problem, so one malformed line never stops a
long run (unless the caller chooses to stop on it).

Formats, chosen from the file name unless given:

- ``jsonl``: one JSON object per line (``.jsonl``, ``.ndjson``)
- ``csv`` / ``tsv``: a header row, then one document per row
- ``lines``: plain text, one document per line (``.txt`` and anything else)
- a directory: every ``.txt``, ``.md``, ``.html``/``.htm`` file below it is
  one document, its key the file's path
- ``-``: standard input, ``lines`` unless the first line starts with ``{``

A trailing ``.gz`` is decompressed. Bytes that are not UTF-8 make that record
a :class:`BadRecord`, and so does a JSON escape that is not valid Unicode (a
lone surrogate such as ``"\\udc80"``, in any field); the rest of the file is
still read.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from simhash_pg.text.normalize import strip_html
from simhash_pg.textrules import field_problem

FORMATS = ("jsonl", "csv", "tsv", "lines")
DOC_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm")
# Fields tried for the key when --key-field is not given.
KEY_FIELDS = ("key", "id", "url")
_SUFFIX_FORMAT = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv"}

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


class InputError(Exception):
    """An input that cannot be read at all (missing file, unknown format)."""


def detect_format(path: str, fmt: str | None = None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        return fmt
    name = path[:-3] if path.endswith(".gz") else path
    return _SUFFIX_FORMAT.get(Path(name).suffix.lower(), "lines")


def read_inputs(
    paths: Iterable[str],
    *,
    fmt: str | None = None,
    text_field: str = "text",
    key_field: str | None = None,
    stdin: IO[bytes] | None = None,
) -> Iterator[Record | BadRecord]:
    """Yield every document of every input, in order."""
    for path in paths:
        if path == "-":
            yield from _read_stdin(stdin or sys.stdin.buffer, fmt, text_field, key_field)
        elif os.path.isdir(path):
            yield from _read_dir(path)
        elif os.path.isfile(path):
            yield from _read_stream(path, _open(path), detect_format(path, fmt),
                                    text_field, key_field)
        else:
            raise InputError(f"{path}: no such file or directory")


def _open(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


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
        return BadRecord(where, f"malformed JSON: {exc.msg} at column {exc.colno}")
    if not isinstance(obj, dict):
        return BadRecord(where, f"expected a JSON object, got {type(obj).__name__}")
    # Only a \u escape makes a lone surrogate: most lines skip the walk.
    problem = field_problem(obj) if "\\u" in line else None
    if problem is not None:
        return BadRecord(where, problem)
    return _from_fields(obj, where, text_field, key_field)


def _from_fields(obj: dict[str, Any], where: str, text_field: str,
                 key_field: str | None) -> Record | BadRecord:
    text = obj.get(text_field)
    if not isinstance(text, str):
        fields = ", ".join(sorted(map(str, obj))) or "none"
        what = "missing" if text is None else f"a {type(text).__name__}, not a string"
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
        yield BadRecord(f"{name}:1", f"no column {text_field!r} in the header "
                                     f"({', '.join(reader.fieldnames)}); use --text-field")
        return
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


def _read_dir(root: str) -> Iterator[Record | BadRecord]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if not fn.lower().endswith(DOC_SUFFIXES):
                continue
            path = os.path.join(dirpath, fn)
            where = f"{path}:1"
            with open(path, "rb") as fh:
                raw = fh.read()
            text = _decode(raw.removeprefix(b"\xef\xbb\xbf"), where)
            if isinstance(text, BadRecord):
                yield text
                continue
            if fn.lower().endswith((".html", ".htm")):
                text = strip_html(text)
            yield Record(text=text, key=path, where=where)
