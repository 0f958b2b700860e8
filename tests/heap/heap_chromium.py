#!/usr/bin/env python3
"""The heap map in a real browser: headless Chromium renders `btpack heap
map` output to a PNG, and the picture must be a drawn map (many coloured
pixels in the map area, several colours), not a blank or broken page.
The page's own check (opened with #selfcheck) must find the aggregated
draw equal, pixel for pixel, to the exact one and to drawing every
allocation in full, on views where all three apply; on the fragmented heap
and on a 200,000-allocation map (timings: bench/heap/map_chromium.js;
under --virtual-time-budget the page's clock is not real time).

usage: heap_chromium.py BTPACK
Exit 77 (skipped) with the reason when no Chromium is installed (Debian:
apt-get install chromium; scripts/deps.sh installs it with
BTPACK_DEPS_CHROMIUM=1)."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pycheck import check, finish  # noqa: E402

btpack = sys.argv[1]
browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(b)), None)
if not browser:
    print("SKIP: no chromium on PATH (apt-get install chromium)")
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix="btpack-heapmap-")
W, H = 1200, 800


def chromium(*args):
    cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--window-size=%d,%d" % (W, H),
           "--virtual-time-budget=10000", "--user-data-dir=" + os.path.join(tmp, "profile")]
    return subprocess.run(cmd + list(args), capture_output=True, timeout=90)


def png_pixels(path):
    """RGB rows of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return rows


# A heap with fragmentation: blocks of three sizes, every other one freed,
# then larger ones that cannot reuse the holes; some never freed.
log = os.path.join(tmp, "frag.log")
with open(log, "w") as f:
    addr, live = 0x20000000, []
    for i in range(3000):
        size = (16, 64, 256)[i % 3]
        f.write("%s,%d,0x%x\n" % ("m" if i % 5 else "c", size, addr))
        live.append(addr)
        addr += size
        if i % 2 and i > 10:
            f.write("f,,0x%x\n" % live.pop(len(live) // 2))
html = os.path.join(tmp, "frag.html")
r = subprocess.run([btpack, "heap", "map", "-o", html, log], capture_output=True, text=True)
check(r.returncode == 0, "heap map: %s" % r.stderr)
png = os.path.join(tmp, "frag.png")
r = chromium("--screenshot=" + png, "file://" + html)
check(os.path.exists(png), "chromium wrote no screenshot: %s" % r.stderr[-500:])
if os.path.exists(png):
    rows = png_pixels(png)
    # the map canvas: below the header and help text, above the usage chart
    area = [px for row in rows[90:600] for px in row[80:1180]]
    drawn = [px for px in area if px != (255, 255, 255) and not
             (abs(px[0] - px[1]) < 8 and abs(px[1] - px[2]) < 8)]  # coloured, not grey/text
    colours = {px for px in drawn}
    frac = len(drawn) / max(1, len(area))
    print("map area: %.1f%% coloured pixels, %d colours" % (100 * frac, len(colours)))
    check(frac > 0.05, "map area is mostly blank (%.2f%% coloured)" % (100 * frac))
    check(len(colours) >= 3, "map has %d colours" % len(colours))
    # the usage chart below (grey-blue area) is drawn too
    use = [px for row in rows[620:760] for px in row[80:1180] if px == (0x90, 0xa4, 0xae)]
    check(len(use) > 1000, "heap-in-use chart: %d pixels" % len(use))



def self_check(path, what):
    """The page opened with #selfcheck: its data-lod-check must say ok for
    all three views, each with pixels drawn; the first draw aggregated."""
    r = chromium("--dump-dom", "file://" + path + "#selfcheck")
    body = re.search(rb"<body[^>]*>", r.stdout)
    body = body.group(0).decode() if body else ""
    err = re.search(r'data-error="([^"]*)"', body)
    check(err is None, "%s: the page failed: %s" % (what, err and err.group(1)))
    lod = re.search(r'data-lod-check="([^"]*)"', body)
    check(lod is not None, "%s: no self-check result: %s" % (what, r.stderr[-300:]))
    if lod:
        print("%s: %s" % (what, lod.group(1)))
        views = re.findall(r"level \d+: (\d+) drawn, (\d+) differ, exact (\d+) differ", lod.group(1))
        check(lod.group(1).startswith("ok") and len(views) == 3,
              "%s: the aggregate draws differently: %s" % (what, lod.group(1)))
        check(all(int(v[0]) > 1000 for v in views), "%s: a checked view is nearly empty" % what)
    path_ = re.search(r'data-draw-path="([^"]*)"', body)
    check(path_ is not None and path_.group(1).startswith("aggregate"),
          "%s: the whole history was not drawn from the aggregate: %s"
          % (what, path_ and path_.group(1)))
    return body


self_check(html, "fragmented heap")

# Many allocations: the page loads, draws from the aggregate, and agrees.
big = os.path.join(tmp, "big.log")
with open(big, "w") as f:
    for i in range(200000):
        f.write("m,32,0x%x\n" % (0x10000000 + 32 * (i % 50000)))
        if i % 4 != 3:
            f.write("f,,0x%x\n" % (0x10000000 + 32 * (i % 50000)))
bightml = os.path.join(tmp, "big.html")
r = subprocess.run([btpack, "heap", "map", "-o", bightml, big], capture_output=True, text=True)
check(r.returncode == 0, "big map: %s" % r.stderr)
self_check(bightml, "200000 allocations")
finish()
