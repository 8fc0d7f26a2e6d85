"""Read a W&B offline run file (``run-<id>.wandb``) record by record, with
W&B's own protobuf schema (``wandb.proto.wandb_internal_pb2.Record``).

The file is W&B's "LevelDB log" stream: a 7-byte header (``:W&B``, magic
0xBEE1, version), then 32 KiB blocks of chunks, each ``crc32 (4) | length
(2, little-endian) | type (1: full, 2: first, 3: middle, 4: last) | data``;
a block's tail shorter than a chunk header is zero padding."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Iterator

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> Iterator[object]:
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", "not a W&B run file"
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        if length == 0 and kind == 0:  # padding to the block's end
            pos += left
            continue
        pending += data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record
