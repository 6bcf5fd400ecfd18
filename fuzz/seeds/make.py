#!/usr/bin/env python3
"""Writes the hand-made seeds (standard library only): two PNGs in image/ and two TIFFs in
tiff/ that the other seeds (made by maketx / demandtex) do not cover: PNG with every row
filter, 16-bit Adam7; a big-endian TIFF with 16-bit samples and the horizontal predictor;
a BigTIFF with separate planes, PackBits and its levels as SubIFDs. Each is read whole by
`demandtex info --check`. Run from anywhere: python3 fuzz/seeds/make.py"""
import os, struct, sys, zlib

here = os.path.dirname(os.path.abspath(__file__))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)

def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc: return a
    if pb <= pc: return b
    return c

def filt(ftype, row, prev, bpp):
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i] if prev else 0
        c = prev[i - bpp] if (prev and i >= bpp) else 0
        pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][ftype]
        out.append((x - pred) & 255)
    return bytes([ftype]) + bytes(out)

def scanlines(rows, bpp, filters):
    raw, prev = b"", None
    for y, row in enumerate(rows):
        raw += filt(filters[y % len(filters)], row, prev, bpp)
        prev = row
    return raw

def png(w, h, depth, ctype, raw, interlace=0, extra=b""):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))

# 8-bit RGBA, 8x6, every row filter type (none, sub, up, average, paeth).
w, h = 8, 6
rows = [bytes(v for x in range(w) for v in ((x * 32) & 255, (y * 40) & 255, (x * y * 7) & 255, 255 - x * 16))
        for y in range(h)]
open(os.path.join(here, "image", "rgba8_filters_8x6.png"), "wb").write(
    png(w, h, 8, 6, scanlines(rows, 4, [0, 1, 2, 3, 4])))

# 16-bit gray, 7x5, Adam7 interlaced, with a gAMA chunk.
w, h = 7, 5
pix = [[(x * 9000 + y * 4000) & 0xffff for x in range(w)] for y in range(h)]
passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
raw = b""
for p, (x0, y0, dx, dy) in enumerate(passes):
    rows = [b"".join(struct.pack(">H", pix[y][x]) for x in range(x0, w, dx)) for y in range(y0, h, dy)]
    rows = [r for r in rows if r]
    if rows:
        raw += scanlines(rows, 2, [p % 5, (p + 2) % 5])
open(os.path.join(here, "image", "gray16_adam7_7x5.png"), "wb").write(
    png(w, h, 16, 0, raw, interlace=1, extra=chunk(b"gAMA", struct.pack(">I", 45455))))
def tiff(levels, bo, big, tags_of, compress, subifds=False, strip=False):
    """levels: list of (w, h, [chunk bytes]); tags_of(i, w, h) -> [(tag, type, values)]."""
    E = bo
    TS = {1: 1, 2: 1, 3: 2, 4: 4, 16: 8, 18: 8}
    FMT = {1: "B", 2: "B", 3: "H", 4: "I", 16: "Q", 18: "Q"}
    out = bytearray(b"II" if E == "<" else b"MM")
    out += struct.pack(E + "HHHQ", 43, 8, 0, 0) if big else struct.pack(E + "HI", 42, 0)
    first_ptr = 8 if big else 4
    # chunk data
    placed = []
    for (w, h, chunks) in levels:
        offs, cnts = [], []
        for c in chunks:
            c = compress(c)
            offs.append(len(out)); cnts.append(len(c)); out += c
            if len(out) % 2: out += b"\0"
        placed.append((offs, cnts))
    # directories: written in order, patched links
    ifd_at, next_ptrs = [], []
    otype = 16 if big else 4
    for i, ((w, h, _), (offs, cnts)) in enumerate(zip(levels, placed)):
        tags = tags_of(i, w, h) + [(273 if strip else 324, otype, offs), (279 if strip else 325, otype, cnts)]
        if subifds and i == 0 and len(levels) > 1:
            tags.append((330, 18 if big else 13, [0] * (len(levels) - 1)))
        tags.sort()
        if len(out) % 2: out += b"\0"
        # out-of-line values first
        vals = []
        inline = 8 if big else 4
        for tag, typ, v in tags:
            raw = b"".join(struct.pack(E + FMT[typ], x) for x in v) if typ != 2 else v
            if len(raw) > inline:
                at = len(out); out += raw
                if len(out) % 2: out += b"\0"
                vals.append((tag, typ, len(v), None, at, raw))
            else:
                vals.append((tag, typ, len(v), raw.ljust(inline, b"\0"), None, raw))
        ifd_at.append(len(out))
        out += struct.pack(E + ("Q" if big else "H"), len(vals))
        for tag, typ, n, inl, at, raw in vals:
            if big:
                out += struct.pack(E + "HHQ", tag, typ, n) + (inl if inl is not None else struct.pack(E + "Q", at))
            else:
                out += struct.pack(E + "HHI", tag, typ, n) + (inl if inl is not None else struct.pack(E + "I", at))
            if tag == 330:
                sub_at = at if at is not None else len(out) - inline
        next_ptrs.append(len(out)); out += b"\0" * (8 if big else 4)
    P = E + ("Q" if big else "I")
    struct.pack_into(P, out, first_ptr, ifd_at[0])
    if subifds and len(levels) > 1:
        for k, a in enumerate(ifd_at[1:]):
            struct.pack_into(P, out, sub_at + k * (8 if big else 4), a)
    else:
        for k in range(len(levels) - 1):
            struct.pack_into(P, out, next_ptrs[k], ifd_at[k + 1])
    return bytes(out)

def sizes(w, h):
    s = [(w, h)]
    while s[-1] != (1, 1):
        s.append((max(1, s[-1][0] // 2), max(1, s[-1][1] // 2)))
    return s

# 1. Big-endian classic TIFF, 16-bit RGB, tiled 16x16, ZIP with the horizontal predictor,
#    mip chain as maketx writes it (one directory per level, the main chain).
T = 16
def rgb16_tile(w, h, lv):
    rows = []
    for y in range(T):
        px = [((x * 4000 + lv * 9000) & 0xffff, (y * 3000) & 0xffff, ((x ^ y) * 2500) & 0xffff)
              if x < w and y < h else (0, 0, 0) for x in range(T)]
        flat = [c for p in px for c in p]
        diff = flat[:3] + [(flat[i] - flat[i - 3]) & 0xffff for i in range(3, len(flat))]
        rows.append(struct.pack(">" + "H" * len(diff), *diff))
    return b"".join(rows)
levels = [(w, h, [rgb16_tile(w, h, i)]) for i, (w, h) in enumerate(sizes(12, 10))]
def tags1(i, w, h):
    t = [(256, 3, [w]), (257, 3, [h]), (258, 3, [16, 16, 16]), (259, 3, [8]), (262, 3, [2]),
         (277, 3, [3]), (284, 3, [1]), (317, 3, [2]), (322, 3, [T]), (323, 3, [T]),
         (339, 3, [1, 1, 1])]
    if i: t.append((254, 4, [1]))
    else: t += [(33302, 2, b"Plain Texture\0"), (33303, 2, b"mirror,periodic\0")]
    return t
open(os.path.join(here, "tiff", "be_rgb16_zip_pred_12x10.tif"), "wb").write(
    tiff(levels, ">", False, tags1, lambda c: zlib.compress(c, 9)))

# 2. Little-endian BigTIFF, 8-bit grey + alpha in separate planes, tiled 16x16, PackBits,
#    levels after 0 as SubIFDs (libtiff's layout), OIIO metadata in the ImageDescription.
def packbits(b):
    out, i = bytearray(), 0
    while i < len(b):
        j = i
        while j < len(b) and j - i < 128 and b[j] == b[i]: j += 1
        if j - i >= 3:
            out += bytes([(257 - (j - i)) & 255, b[i]]); i = j; continue
        j = i
        while j < len(b) and j - i < 128 and not (j + 2 < len(b) and b[j] == b[j + 1] == b[j + 2]): j += 1
        out += bytes([j - i - 1]) + b[i:j]; i = j
    return bytes(out)
def planes(w, h, lv):
    return [bytes(((x * 37 + y * 11 + lv * 50) if p == 0 else (255 - x * 20)) & 255
                  if x < w and y < h else 0 for y in range(T) for x in range(T)) for p in range(2)]
levels = [(w, h, planes(w, h, i)) for i, (w, h) in enumerate(sizes(9, 7))]
def tags2(i, w, h):
    t = [(256, 4, [w]), (257, 4, [h]), (258, 3, [8, 8]), (259, 3, [32773]), (262, 3, [1]),
         (277, 3, [2]), (284, 3, [2]), (322, 3, [T]), (323, 3, [T])]
    if i: t.append((254, 4, [1]))
    else: t.append((270, 2, b"oiio:AverageColor=0.5,0.75 wrapmodes=clamp\0"))
    return t
open(os.path.join(here, "tiff", "bigtiff_ya8_separate_packbits_subifds_9x7.tif"), "wb").write(
    tiff(levels, "<", True, tags2, packbits, subifds=True))
