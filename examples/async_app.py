"""simhash-pg from an asyncio app (docs/app.md, "asyncio").

    python examples/async_app.py postgresql://user@host/appdb

A crawler's loop: pages arrive as tasks, each is added to the store, and a
near-duplicate of a page already stored is reported instead of kept. One
AsyncSimhashStore per concurrent writer (a store serialises its own calls).
"""

from __future__ import annotations

import asyncio
import sys

from simhash_pg import AsyncSimhashStore

PAGES = {
    "a": "The council approved the harbour budget on Tuesday after a long debate "
         "about the cost of dredging the old channel and repairing the north pier.",
    "b": "The council approved the harbour budget on Tuesday after a long debate "
         "about the cost of dredging the old channel and repairing the north pier!",
    "c": "A late frost damaged the apple orchards in the valley, and growers expect "
         "a smaller harvest and higher prices at the autumn markets this year.",
}


async def crawl(dsn: str, pages: dict[str, str]) -> dict[str, str | None]:
    """key -> the key of the stored page it duplicates (None: stored as new)."""
    async def worker(queue: asyncio.Queue[tuple[str, str]],
                     seen: dict[str, str | None]) -> None:
        async with await AsyncSimhashStore.open(dsn) as store:
            while not queue.empty():
                key, text = queue.get_nowait()
                result = await store.add(text, key=key)
                seen[key] = None if result.inserted else result.duplicate_key

    queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    for item in pages.items():
        queue.put_nowait(item)
    seen: dict[str, str | None] = {}
    await asyncio.gather(*(worker(queue, seen) for _ in range(2)))
    return seen


if __name__ == "__main__":
    for key, dup in sorted(asyncio.run(crawl(sys.argv[1], PAGES)).items()):
        print(key, "stored" if dup is None else f"duplicates {dup}")
