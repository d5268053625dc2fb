"""Read a PNG's pixels (test support: checking what a headless browser drew). Standard
library only: 8-bit greyscale, RGB or RGBA, not interlaced, which is what Chromium writes."""

from __future__ import annotations

import struct
import zlib

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def read_png(path: str) -> tuple[int, int, list[bytes]]:
    """(width, height, rows): each row holds ``width`` pixels of RGB bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, width = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, ctype, _c, _f, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or ctype not in CHANNELS or interlace:
                raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    ch = CHANNELS[ctype]
    raw = zlib.decompress(b"".join(idat))
    stride = width * ch
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if ch in (3, 4):
            rgb = bytes(v for k in range(width) for v in line[k * ch:k * ch + 3])
        else:
            rgb = bytes(v for k in range(width) for v in (line[k * ch],) * 3)
        rows.append(rgb)
    return width, height, rows


def count_color(rows: list[bytes], rgb: tuple[int, int, int], tolerance: int = 8) -> int:
    """Pixels within ``tolerance`` of ``rgb`` on every channel."""
    r0, g0, b0 = rgb
    n = 0
    for row in rows:
        for k in range(0, len(row), 3):
            if abs(row[k] - r0) <= tolerance and abs(row[k + 1] - g0) <= tolerance and abs(row[k + 2] - b0) <= tolerance:
                n += 1
    return n
