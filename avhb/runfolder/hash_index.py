"""Hash -> small integers, about 8 bytes an entry: the journal's index
(key hash -> the byte offset of the key's line) and the reader's check that
sample ids are unique (id hash -> the sample's position).

An entry is its hash's 4 bytes in a byte string and its value in an
``array`` of 4-byte items (widened to 8 bytes when a value does not fit),
in one of ``BUCKETS`` buckets chosen by 12 more bits of the hash.  A lookup
finds the hash's bytes in its bucket (``bytes.find``: a scan at memory
speed, about a thousandth of the entries); adding appends.  Nothing is
sorted or merged, so nothing is copied as the index grows, numpy is not
needed (importing it costs a text run a tenth of a second), and the
buckets grow in small steps the allocator reuses, not in blocks it cannot
give back.

Hashes are 44 bits (:func:`key_hash`): entries that share one are all
returned, oldest first, and the caller compares what they stand for (the
journal reads the key back from its line).
"""
from __future__ import annotations

import hashlib
from array import array
from typing import Iterator

BUCKET_BITS = 12
BUCKETS = 1 << BUCKET_BITS
_MASK = BUCKETS - 1


def key_hash(key: str) -> int:
    """A key's 44-bit hash: a call key (64 hex digits, a SHA-256) gives its
    first 11 digits, any other key 44 bits of its BLAKE2b.  Any
    deterministic choice is right: a match is checked on the full key."""
    if len(key) == 64:
        try:
            return int(key[:11], 16)
        except ValueError:
            pass
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "big") >> 20


class HashIndex:
    """Entries (hash, value), several per hash allowed (module docstring)."""

    def __init__(self) -> None:
        self._hashes: list[bytearray | None] = [None] * BUCKETS  # bucket -> its entries' 4-byte hashes
        self._values: list[array | None] = [None] * BUCKETS  # bucket -> their values, in the same order
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, hashed: int, value: int) -> None:
        bucket = hashed & _MASK
        hashes = self._hashes[bucket]
        if hashes is None:
            hashes = self._hashes[bucket] = bytearray()
            self._values[bucket] = array("I")
        values = self._values[bucket]
        assert values is not None
        try:
            values.append(value)
        except OverflowError:  # past 4 GiB (a journal file's offset): this bucket's values take 8 bytes
            values = self._values[bucket] = array("q", values)
            values.append(value)
        hashes += ((hashed >> BUCKET_BITS) & 0xFFFF_FFFF).to_bytes(4, "little")
        self._count += 1

    def values_of(self, hashed: int) -> list[int]:
        """Every value added under ``hashed``, oldest first."""
        bucket = hashed & _MASK
        hashes = self._hashes[bucket]
        if hashes is None:
            return []
        values = self._values[bucket]
        assert values is not None
        needle = ((hashed >> BUCKET_BITS) & 0xFFFF_FFFF).to_bytes(4, "little")
        out = []
        at = hashes.find(needle)
        while at >= 0:
            if at & 3:  # straddles two entries: not one
                at = hashes.find(needle, at + 1)
                continue
            out.append(values[at >> 2])
            at = hashes.find(needle, at + 4)
        return out

    def values(self) -> Iterator[int]:
        """Every value, bucket by bucket (no order)."""
        for values in self._values:
            if values is not None:
                yield from values
