#!/usr/bin/env python3
"""Shrinks the console's screenshots for docs/console/: RGBA → a 256-colour palette (the UI is flat colours), zlib 9.

    python3 console/shrink_png.py .build/console-screenshots docs/console

Pure Python (no imaging library on the build image); about two seconds per screenshot. Reads the 8-bit RGB/RGBA,
non-interlaced PNGs Chromium writes.
"""
import struct
import sys
import zlib
from collections import Counter
from pathlib import Path


def read_png(path):
    data = Path(path).read_bytes()
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise SystemExit(f"{path}: only 8-bit RGB/RGBA non-interlaced PNGs")
        elif kind == b"IDAT":
            idat += body
    raw, bpp = zlib.decompress(idat), 4 if colour == 6 else 3
    stride, pixels, prev, i = width * bpp, [], bytearray(width * bpp), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):  # undo the row filter (PNG spec, section 9)
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels += [bytes(line[x:x + 3]) for x in range(0, stride, bpp)]
        prev = line
    return width, height, pixels


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def write_palette_png(path, width, height, pixels):
    palette = [colour for colour, _ in Counter(pixels).most_common(256)]
    index = {colour: i for i, colour in enumerate(palette)}

    def nearest(colour):
        if colour not in index:
            r, g, b = colour
            index[colour] = min(range(len(palette)), key=lambda i: (palette[i][0] - r) ** 2
                                + (palette[i][1] - g) ** 2 + (palette[i][2] - b) ** 2)
        return index[colour]

    rows = b"".join(b"\x00" + bytes(nearest(pixels[y * width + x]) for x in range(width)) for y in range(height))
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0))
                           + chunk(b"PLTE", b"".join(palette)) + chunk(b"IDAT", zlib.compress(rows, 9))
                           + chunk(b"IEND", b""))


def main():
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    for png in sorted(source.glob("*.png")):
        if png.name.startswith("failed-"):
            continue
        write_palette_png(target / png.name, *read_png(png))
        print(f"{png.name}: {png.stat().st_size} -> {(target / png.name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
