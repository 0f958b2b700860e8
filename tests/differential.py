#!/usr/bin/env python3
"""Differential test: the btpack CLI and library against an independent
model of the formats (tests/refmodel.py, written from spec/cbf.md,
spec/lws.md and the format notes, not from lib/).

usage: differential.py BTPACK VECTOR_DIR [LIBBTPACK_SO]

1. The model is first checked against the golden vectors (so a wrong model
   cannot pass silently).
2. Random and adversarial traces (fixed seed) are encoded by both, in every
   direction the contract makes exact: CBF json->hex/b64/cbf (our minimal
   encoder), hex/b64/cbf->json (default and strict policies); lws
   json->lws (libwebsockets' choices and --lws-optimal), json->lws-b,
   lws->json at both word sizes (with the truncation warning), lws-b->lws
   (also upper-case digits, CR, and the x86_64 tool's sign-extended
   32-bit values), URL-safe unpadded ~m# records inside log text.
3. Valid encodings are mutated (bit flips, truncations, insertions,
   deletions) and both must agree on accept/reject, on the frames, and on
   the error class and offset.
4. Given the shared library, what the CLI does not expose is compared
   through ctypes: the Swift decoding policy and encoder mode, the
   decoder cursor's runs, short buffers (needed size, truncate-on-full),
   runs of up to 2^64 copies given to the streaming encoder, and the lws
   encoder's needed size. A library that cannot be loaded into Python (a
   sanitizer build) skips this part and says so; nothing is counted for it.

Environment: BTPACK_DIFF_CASES scales the number of random cases (default
1.0), BTPACK_DIFF_SEED sets the seed, BTPACK_DIFF_SHOW how many
disagreements of one kind are printed (default 5).
Prints "N passed, N failed".
"""
import base64
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refmodel as M  # noqa: E402
import pycheck  # noqa: E402
from pycheck import check, finish  # noqa: E402

BTPACK = sys.argv[1]
VECTORS = sys.argv[2]
LIBRARY = sys.argv[3] if len(sys.argv) > 3 else None
SCALE = float(os.environ.get("BTPACK_DIFF_CASES", "1.0"))
MAX_FRAMES = 200000
rng = random.Random(int(os.environ.get("BTPACK_DIFF_SEED", "20261121")))

# At most this many disagreements of one kind are printed in full.
shown = {}


def report(kind, cond, what):
    if not cond:
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] > int(os.environ.get('BTPACK_DIFF_SHOW', '5')):
            pycheck.failed += 1  # counted; the summary at the end names the kind
            return
    check(cond, "%s: %s" % (kind, what))


# ---------------------------------------------------------------------------
# Running the CLI on many records at once
# ---------------------------------------------------------------------------

LINE_RE = re.compile(r"^btpack: (?:warning: )?<stdin>:(\d+): (.*)$")


# Warnings of the last run_batch, by input line index (0-based).
WARNINGS = {}
SUSPECTS = [0]  # records the model flags as truncated by libwebsockets


def run_batch(args, lines):
    """Run `btpack convert ARGS --keep-going` on one record per line (every
    warning shown: --max-warnings 0).
    Returns, per input line, ("ok", output line) or ("err", message)."""
    data = "".join(l + "\n" for l in lines).encode()
    p = subprocess.run([BTPACK, "convert", "--keep-going", "--max-warnings", "0",
                        "--max-frames", str(MAX_FRAMES)]
                       + args, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    errs = {}
    WARNINGS.clear()
    for l in p.stderr.decode("utf-8", "replace").splitlines():
        m = LINE_RE.match(l)
        if m and l.endswith("trace skipped"):
            errs[int(m.group(1))] = m.group(2)
        elif m:
            WARNINGS.setdefault(int(m.group(1)) - 1, []).append(m.group(2))
    out = p.stdout.decode().split("\n")
    if out and out[-1] == "":
        out.pop()
    res = []
    k = 0
    for i in range(len(lines)):
        if i + 1 in errs:
            res.append(("err", errs[i + 1]))
        elif k < len(out):
            res.append(("ok", out[k]))
            k += 1
        else:
            res.append(("err", "no output"))
    check(k == len(out), "%s: %d outputs for %d good records" % (args, len(out), k))
    check(p.returncode == (1 if errs else 0) or (p.returncode == 1 and not errs),
          "%s: exit status %d" % (args, p.returncode))
    return res


def fr_json(f):
    kind, v = f
    if kind == "omit":
        return {"type": "omit", "count": v}
    return {"type": kind, "addr": "0x%x" % v}


def fr_from_json(x):
    if x["type"] == "omit":
        return ("omit", x["count"])
    return (x["type"], int(x["addr"], 16))


def trace_json(wb, frames, truncated=False, alloc_size=None):
    d = {"word_bits": wb, "frames": [fr_json(f) for f in frames], "truncated": truncated}
    if alloc_size is not None:
        d["alloc_size"] = alloc_size
    return json.dumps(d, separators=(",", ":"))


CBF_ERR_RE = re.compile(r"byte offset (\d+): .*\((\w+)\)")
LWS_ERR_RE = re.compile(r"\((\w+)\) at bit (\d+)")


# ---------------------------------------------------------------------------
# 1. The model against the golden vectors
# ---------------------------------------------------------------------------

def load(name):
    with open(os.path.join(VECTORS, name)) as f:
        return [json.loads(l) for l in f if l.strip()]


def model_vs_vectors():
    for v in load("cbf-public.jsonl"):
        if v["kind"] == "valid":
            F = [fr_from_json(x) for x in v["frames"]]
            wb, t = v["word_bits"], v["truncated"]
            ours = M.cbf_encode(F, wb, t)
            report("model cbf spec_hex", ours.hex() == v["spec_hex"], v["id"])
            report("model cbf swift_hex", M.cbf_encode(F, wb, t, swift=True).hex()
                   == v["swift_hex"], v["id"])
            report("model cbf min_len", len(ours) <= v["min_len"], v["id"])
            for key in ("swift_hex", "spec_hex", "min_hex", "verbose_hex", "alt_hex"):
                for pol in (M.DEFAULT, M.STRICT, M.SWIFT):
                    r = M.cbf_decode(bytes.fromhex(v[key]), pol)
                    if pol == M.STRICT and key == "swift_hex" and v["swift_first_relative"]:
                        report("model cbf strict relative first",
                               r.error == ("first_address_relative", 1), v["id"])
                        continue
                    report("model cbf decode", r.error is None and r.frames() == F
                           and (r.terminator == "trunc") == t, "%s %s" % (v["id"], key))
        else:
            d = bytes.fromhex(v["hex"])
            pol = M.STRICT if v["error"] == "first_address_relative" else M.DEFAULT
            r = M.cbf_decode(d, pol)
            report("model cbf malformed", r.error == (v["error"], v["error_offset"]), v["id"])
            if v["frames_before_error"] is not None:
                report("model cbf frames before error",
                       r.frames() == [fr_from_json(x) for x in v["frames_before_error"]],
                       v["id"])
            sw = M.cbf_decode(d, M.SWIFT)
            report("model cbf swift_frames", sw.frames() == [
                fr_from_json(x) for x in v["swift_frames"] if x["type"] != "truncated"],
                v["id"])
    wide = ("edge-16bit-omit-70000", "edge-16bit-addr-3bytes", "edge-32bit-addr-8bytes")
    for v in load("cbf-edge-cases.jsonl"):
        d = bytes.fromhex(v["hex"])
        cols = [("strict", M.STRICT), ("lenient", M.SWIFT),
                ("strict" if v["id"] in wide else "lenient", M.DEFAULT)]
        for col, pol in cols:
            e = v[col]
            r = M.cbf_decode(d, pol)
            if "error" in e:
                report("model cbf edge", r.error == (e["error"], e["error_offset"]), v["id"])
                continue
            runs = [[fr_from_json(x), x.get("copies", 1)] for x in e["frames_rle"]
                    if x["type"] != "truncated"]
            report("model cbf edge", r.error is None and M._rle_runs(r.runs) == runs
                   and r.terminator == e["terminator"] and r.consumed == e["consumed"],
                   "%s %s" % (v["id"], col))
    for v in load("lws-public.jsonl"):
        wb = v["word_bits"]
        if v["kind"] != "valid":
            # What the tool printed, where it did not read out of bounds.
            res = v["lws_decoder_result"]
            if v.get("sanitizer_findings"):
                continue
            blob = M.m_parse(v["m_line"])
            try:
                got = "OK: " + M.b_line(*M.lws_decode(blob, wb)) if blob is not None else \
                    "bad base64"
            except M.LwsError as e:
                got = e.cls
            if res.startswith("OK: "):
                ok = got == res
            elif "base64" in res:
                ok = got == "bad base64"
            elif "length wrong" in res:
                ok = got == "length_mismatch"
            else:
                ok = not got.startswith("OK")
            report("model lws malformed", ok, "%s: %s, tool %s" % (v["note"], got, res))
            continue
        F = [int(x, 16) for x in v["frames"]]
        S = v["alloc_size"]
        exact = v["roundtrip_exact"]
        if exact and v.get("comp_len", 99) >= 21:
            b = M.lws_encode(F, S, wb)
            report("model lws blob", b.hex() == v["blob_hex"], v["note"])
            report("model lws m_line", M.m_line(b) == v["m_line"], v["note"])
            report("model lws b_line", M.b_line(F, S) == v["b_line"], v["note"])
        if exact or wb == 32:
            try:
                got = M.lws_decode(bytes.fromhex(v["blob_hex"]), wb)
            except M.LwsError as e:
                got = str(e)
            report("model lws decode", got == (F, S), v["note"])
        cl = v.get("clang_build_encoding")
        if isinstance(cl, str) and cl.startswith("{"):
            cl = json.loads(cl)
        if isinstance(cl, dict) and exact:
            try:
                got = M.lws_decode(bytes.fromhex(cl["blob_hex"]), wb)
            except M.LwsError as e:
                got = str(e)
            report("model lws clang decode", got == (F, S), v["note"])


# ---------------------------------------------------------------------------
# 2. CBF
# ---------------------------------------------------------------------------

def interesting(wb):
    m = (1 << wb) - 1
    base = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000,
            0x7fffffff, 0x80000000, 0xffffffff, 0x100000000, 0x7fffffffffffffff,
            0x8000000000000000, 0xffffffffffffffff, 0x7fffff, 0x800000, 0x7fffffffff,
            0x8000000000, 0x7fffffffffff, 0x800000000000]
    out = set()
    for b in base:
        for d in (-2, -1, 0, 1, 2):
            out.add((b + d) & m)
    return sorted(out)


def rand_addr(wb, prev):
    m = (1 << wb) - 1
    r = rng.random()
    if r < 0.3:
        return rng.choice(interesting(wb))
    if r < 0.6:
        bits = rng.randint(0, wb)
        d = rng.getrandbits(bits) if bits else 0
        return (prev + (d if rng.random() < 0.5 else -d)) & m
    if r < 0.7:  # sign boundaries of a relative delta
        k = rng.choice([8, 16, 24, 32, 40, 48, 56])
        k = min(k, wb)
        return (prev + rng.choice([1 << (k - 1), -(1 << (k - 1)), (1 << (k - 1)) - 1,
                                  -(1 << (k - 1)) - 1])) & m
    return rng.getrandbits(wb)


OMITS = [1, 2, 31, 32, 33, 255, 256, 257, 65535, 65536, 0xffffffff, 0x100000000,
         1 << 63, (1 << 64) - 1]


def rand_trace(wb, allow_wide=False):
    frames = []
    prev = 0
    for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 20])):
        r = rng.random()
        if r < 0.15:
            c = rng.choice(OMITS) if rng.random() < 0.7 else rng.randint(1, 1 << rng.randint(1, 64))
            if c > (1 << wb) - 1 and not allow_wide:
                c &= (1 << wb) - 1
                c = c or 1
            f = ("omit", c)
        else:
            kind = rng.choice(["ra", "ra", "ra", "pc", "async"])
            a = rand_addr(wb, prev)
            prev = a
            f = (kind, a)
        reps = 1
        if rng.random() < 0.25:
            reps = rng.choice([2, 3, 8, 9, 10, 255, 256, 257, 300, rng.randint(1, 300)])
        frames.extend([f] * reps)
    return frames, rng.random() < 0.2


def cbf_encode_cases(n):
    """json -> hex: our encoder must give the model's minimal bytes."""
    cases = []
    for i in range(n):
        wb = rng.choice([16, 32, 64])
        frames, t = rand_trace(wb, allow_wide=(i % 10 == 0))
        cases.append((wb, frames, t))
    # Runs longer than the word's maximum count, and the biggest omit.
    cases.append((16, [("ra", 0x1234)] * 70000, False))
    cases.append((16, [("pc", 0x10)] + [("ra", 0xfff0)] * 65537, True))
    cases.append((16, [("omit", 0xffff)] * 3 + [("omit", 0x10000)], False))
    cases.append((32, [("omit", 0xffffffff), ("ra", 0x80000000)] * 2, False))
    cases.append((64, [("omit", (1 << 64) - 1), ("ra", (1 << 64) - 1)], False))
    res = run_batch(["--from", "json", "--to", "hex"],
                    [trace_json(wb, f, t) for wb, f, t in cases])
    for (wb, frames, t), (st, out) in zip(cases, res):
        try:
            want = M.cbf_encode(frames, wb, t).hex()
        except M.ValueTooWide:
            want = None
        desc = trace_json(wb, frames[:12], t)[:300]
        if want is None:
            report("cbf encode: value beyond the word accepted", st == "err"
                   and "does not fit" in out, "%s -> %s" % (desc, out[:80]))
        else:
            report("cbf encode bytes", st == "ok" and out == want,
                   "%s: ours %s, model %s" % (desc, out[:160], want[:160]))
    return cases


def cbf_text_and_binary(traces):
    """The other CBF containers: Swift's base64 (no padding out; padding and
    the URL-safe alphabet in) and raw streams back to back."""
    traces = [c for c in traces if len(c[1]) < 5000 and all(
        k != "omit" or v <= (1 << c[0]) - 1 for k, v in c[1])]
    enc = [M.cbf_encode(f, wb, t) for wb, f, t in traces]
    res = run_batch(["--from", "json", "--to", "b64"],
                    [trace_json(wb, f, t) for wb, f, t in traces])
    for e, (st, out) in zip(enc, res):
        want = base64.b64encode(e).decode().rstrip("=")
        report("cbf b64 out", st == "ok" and out == want, "%s: %s" % (want[:80], out[:80]))
    lines = [base64.urlsafe_b64encode(e).decode() if i % 2 else base64.b64encode(e).decode()
             for i, e in enumerate(enc)]
    res = run_batch(["--from", "b64", "--to", "json"], lines)
    for (wb, f, t), (st, out) in zip(traces, res):
        d = json.loads(out) if st == "ok" else {}
        report("cbf b64 in", st == "ok" and [fr_from_json(x) for x in d["frames"]] == f
               and d["truncated"] == t, "%s: %s" % (trace_json(wb, f[:8], t)[:100], out[:100]))
    p = subprocess.run([BTPACK, "convert", "--from", "cbf", "--to", "json", "--max-frames",
                        str(MAX_FRAMES)], input=b"".join(enc), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    got = [json.loads(l) for l in p.stdout.decode().splitlines()]
    want = [{"word_bits": wb, "frames": [fr_json(x) for x in f], "truncated": t}
            for wb, f, t in traces]
    report("cbf binary streams back to back", p.returncode == 0 and got == want,
           "%d streams in, %d out: %s" % (len(want), len(got), p.stderr[:200]))


def rand_stream(wb):
    """A CBF stream of random instructions, valid or not."""
    W = wb // 8
    out = bytearray([M.WORD_CODE[wb]])

    def ext(opcode, most):
        """An external omit/rep count of 1..most bytes, often zeros."""
        nb = rng.randint(1, most)
        out.append(opcode | (nb - 1))
        out.extend(rng.choice([0, 0, 0xff, rng.randrange(256)]) for _ in range(nb))
    for _ in range(rng.randint(0, 12)):
        r = rng.random()
        if r < 0.45:
            nb = rng.randint(1, min(8, W + (1 if rng.random() < 0.1 else 0)))
            op = rng.choice([0x10, 0x20, 0x30]) | rng.choice([0, 8]) | (nb - 1)
            out.append(op)
            out += bytes(rng.choice([0, 0xff, 0x7f, 0x80, rng.randrange(256)]) for _ in range(nb))
        elif r < 0.6:
            out.append(0x40 | rng.randrange(32))
        elif r < 0.7:
            ext(0x60, W + (2 if rng.random() < 0.15 else 0))
        elif r < 0.8:
            out.append(0x80 | rng.randrange(8))
        elif r < 0.9:
            ext(0x88, W + (1 if rng.random() < 0.15 else 0))
        elif r < 0.95:
            out.append(rng.choice([0, 1]))
        else:
            out.append(rng.randrange(256))
    if rng.random() < 0.7:
        out.append(rng.choice([0, 1]))
    return bytes(out)


def mutate(data):
    d = bytearray(data)
    r = rng.random()
    if r < 0.35 and d:
        i = rng.randrange(len(d) * 8)
        d[i >> 3] ^= 0x80 >> (i & 7)
    elif r < 0.55 and d:
        del d[rng.randrange(len(d)):]
    elif r < 0.75:
        d.insert(rng.randrange(len(d) + 1), rng.randrange(256))
    elif r < 0.9 and d:
        del d[rng.randrange(len(d))]
    elif d:
        d[rng.randrange(len(d))] = rng.randrange(256)
    return bytes(d)


def cbf_decode_cases(encoded, n):
    streams = list(encoded)
    for _ in range(n):
        streams.append(rand_stream(rng.choice([16, 32, 64])))
    for _ in range(n):
        streams.append(mutate(rng.choice(encoded)))
    for _ in range(n // 4):
        streams.append(mutate(mutate(rng.choice(encoded))))
    # Hand-made corners: empty, info bytes, huge reps, zero counts, wide forms.
    streams += [bytes.fromhex(h) for h in (
        "00", "01", "02", "03", "04", "07", "ff", "0288", "0280", "024080", "02600000",
        "021810880000", "0218108fffffffffffffffff8fffffffffffffffff00",
        "0018108affffff00", "00181089ffff89ffff00", "0018106201117000", "001aff123400",
        "011f123456789abcdef000", "0267ffffffffffffffff00", "027f" + "00" * 24 + "01" + "00" * 7,
        "027f" + "00" * 32, "0218100002182000", "021810011820", "02100f", "0010", "00207f80",
        "0218108fffffffffffffffff8700", "0218108fffffffffffffffff8fffffffffffffffff8000",
        "0218108ffffffffffffffffe808000", "0244" + "8f" + "ff" * 8 + "8000")]
    streams = [s for s in streams if s]  # an empty line is skipped, not an empty stream
    for pol, args in ((M.DEFAULT, []), (M.STRICT, ["--strict"])):
        res = run_batch(["--from", "hex", "--to", "json"] + args, [s.hex() for s in streams])
        for s, (st, out) in zip(streams, res):
            r = M.cbf_decode(s, pol)
            frames = r.frames(MAX_FRAMES)
            what = "%s%s" % (s.hex()[:120], " strict" if args else "")
            if frames is None:
                # More frames than the CLI expands: it must refuse the trace.
                report("cbf decode: limit", st == "err", what)
                continue
            if r.error is not None:
                m = CBF_ERR_RE.search(out) if st == "err" else None
                got = (m.group(2), int(m.group(1))) if m else (st, out[:100])
                report("cbf decode error", got == r.error,
                       "%s: ours %s, model %s" % (what, got, r.error))
                continue
            if st != "ok":
                report("cbf decode accepts", False, "%s: ours %s, model %s" % (
                    what, out[:100], frames[:4]))
                continue
            d = json.loads(out)
            got = ([fr_from_json(x) for x in d["frames"]], d["truncated"], d["word_bits"])
            want = (frames, r.terminator == "trunc", r.word_bits)
            report("cbf decode frames", got == want, "%s: ours %s, model %s" % (
                what, str(got)[:200], str(want)[:200]))
    return streams


# ---------------------------------------------------------------------------
# 3. lws
# ---------------------------------------------------------------------------

def lws_values(wb, depth):
    m = (1 << wb) - 1
    vals = []
    for i in range(depth):
        r = rng.random()
        if vals and r < 0.45:
            # A delta of some width from one of the frames 1..9 back.
            j = max(0, i - rng.randint(1, 9))
            bits = rng.randint(0, wb)
            d = rng.getrandbits(bits) if bits else 0
            v = (vals[j] + (d if rng.random() < 0.5 else -d)) & m
        elif vals and r < 0.55:
            v = rng.choice(vals)  # an exact repeat
        elif vals and r < 0.6 and len(vals) >= 2:
            a, b = rng.sample(vals, 2)  # a tie between two references
            v = (a + b) // 2 if (a + b) % 2 == 0 else a
        elif r < 0.75:
            v = rng.choice(interesting(wb))
        else:
            top = rng.choice([20, 24, 31, 32, 33, 40, 47, 48, 56, 63, 64] if wb == 64
                             else [8, 20, 24, 31, 32])
            v = rng.getrandbits(top)
            if wb == 64 and top == 64 and rng.random() < 0.5 and vals:
                v = (vals[-1] + rng.getrandbits(20)) & m  # near a bit-63 neighbour
        vals.append(v & m)
    return vals


def lws_size(wb):
    r = rng.random()
    if r < 0.3:
        return rng.choice([0, 1, 2, 0x7f, 0x7fffffff, 0x80000000, 0xffffffff,
                           0x100000000, (1 << 63) - 1, 1 << 63, (1 << 64) - 1])
    return rng.getrandbits(rng.randint(0, wb))


def lws_cases(n):
    cases = []
    for i in range(n):
        wb = rng.choice([32, 64])
        depth = rng.choice([0, 1, 2, 3, 4, 9, 10, 17, 30, 31, rng.randint(0, 31)])
        if i % 40 == 0:
            depth = 32
        vals = lws_values(wb, depth)
        size = lws_size(wb) & ((1 << wb) - 1)
        cases.append((wb, vals, size))
    # Ties, threshold and references at distance 8/9 by construction.
    cases.append((64, [0x100, 0x400000, 0x400000, 0x400001], 5))
    cases.append((64, [0x1000] + [0x500000 + 0x100 * k for k in range(10)], 3))
    cases.append((64, [0x10, 0x805, 0x816], 3))
    cases.append((64, [0x10, 0x804, 0x815], 3))
    cases.append((32, [0x10, 0x80000000, 0x7fffffff, 0x80000001], 1))
    cases.append((64, [0x8000000000000000, 0x10], 1))
    cases.append((64, [0x10, 0x8000000000000010, 0xffffffffffffffff], 1))
    cases.append((64, [0x10, 0x7fffffffffffffff, 0xfffffffffffffff0], 1))

    wbs = {wb for wb, _, _ in cases}
    blobs = []
    for wb in sorted(wbs):
        sub = [c for c in cases if c[0] == wb]
        lines = [trace_json(wb, [("ra", v) for v in vals], False, size)
                 for _, vals, size in sub]
        res_m = run_batch(["--from", "json", "--to", "lws", "--word-bits", str(wb)], lines)
        res_b = run_batch(["--from", "json", "--to", "lws-b", "--word-bits", str(wb)], lines)
        res_o = run_batch(["--from", "json", "--to", "lws", "--lws-optimal",
                           "--word-bits", str(wb)], lines)
        for (_, vals, size), (sm, om), (sb, ob), (so, oo) in zip(sub, res_m, res_b, res_o):
            what = "%d-bit %s size %#x" % (wb, [hex(v) for v in vals][:10], size)
            try:
                blob = M.lws_encode(vals, size, wb)
            except (ValueError, M.Unrepresentable, M.ValueTooWide) as e:
                report("lws encode refuses", sm == "err", "%s: model %r, ours %s" % (
                    what, e, om[:80]))
                report("lws-b refuses", sb == "err" or len(vals) <= 31,
                       "%s: %s" % (what, ob[:80]))
                continue
            blobs.append((wb, blob, vals, size, False))
            opt = M.lws_encode(vals, size, wb, optimal=True)
            report("lws optimal bytes", so == "ok" and oo == M.m_line(opt),
                   "%s: ours %s, model %s" % (what, oo[:120], M.m_line(opt)))
            report("lws optimal never longer", len(opt) <= len(blob), what)
            blobs.append((wb, opt, vals, size, True))
            report("lws encode bytes", sm == "ok" and om == M.m_line(blob),
                   "%s: ours %s, model %s" % (what, om[:120], M.m_line(blob)))
            report("lws-b line", sb == "ok" and ob == M.b_line(vals, size),
                   "%s: ours %s" % (what, ob[:120]))
        # lws-b -> lws must give the same record; on 32-bit also from the
        # line libwebsockets' x86_64 tool prints (values >= 2^31
        # sign-extended, spec/lws.md section 4).
        good = [b[:4] for b in blobs if b[0] == wb and not b[4]]
        lines = [M.b_line(v, s) for _, _, v, s in good]
        # Upper-case hex digits and a trailing CR, as the parser allows.
        lines += [M.b_line(v, s).replace("0x", "0X").upper().replace("0X", "0x").replace(
            "~B#SIZE: ", "~b#size: ") + "\r" for _, _, v, s in good]
        good = good + good
        if wb == 32:
            lines += [M.b_line([v | 0xffffffff00000000 if v >> 31 else v for v in vals], s)
                      for _, _, vals, s in good[:len(good) // 2]]
            good = good + good[:len(good) // 2]
        res = run_batch(["--from", "lws-b", "--to", "lws", "--word-bits", str(wb)], lines)
        for (_, blob, vals, size), line, (st, out) in zip(good, lines, res):
            report("lws-b -> lws", st == "ok" and out == M.m_line(blob),
                   "%s: ours %s" % (line[:100], out[:100]))
        # The ~m# reader: URL-safe alphabet and missing padding, as the tool
        # accepts them, inside a log line.
        lines = ["I: heap ~m#%s end" % M.m_line(b)[3:].replace("+", "-").replace("/", "_")
                 .rstrip("=") for _, b, _, _ in good]
        res = run_batch(["--from", "lws", "--to", "lws-b", "--word-bits", str(wb)], lines)
        for (_, blob, vals, size), line, (st, out) in zip(good, lines, res):
            report("lws url-safe unpadded", st == "ok" and out == M.b_line(vals, size),
                   "%s: ours %s" % (line[:100], out[:100]))
    return blobs


def lws_decode_cases(blobs, n):
    items = [(b[0], b[1]) for b in blobs]
    for _ in range(n):
        wb, b = rng.choice(items)
        m = mutate(b)
        if rng.random() < 0.5 and len(m) >= 2:
            m = m[:-2] + len(m).to_bytes(2, "big")  # keep the trailer right
        items.append((wb, m))
    for _ in range(n // 4):
        ln = rng.randint(0, 40)
        raw = bytes(rng.randrange(256) for _ in range(ln))
        items.append((rng.choice([32, 64]), raw + (ln + 2).to_bytes(2, "big")))
    # Every blob of the vectors, libwebsockets' truncated records included.
    for v in load("lws-public.jsonl"):
        if v.get("blob_hex"):
            items.append((v["word_bits"], bytes.fromhex(v["blob_hex"])))
    items.append((64, b""))  # `~m#` alone
    items.append((64, b"\x05"))
    for wb in (32, 64):
        # Every blob at both word sizes: a 64-bit record read as 32-bit must
        # fail where a count exceeds 32 bits, and agree everywhere else.
        sub = [b for _, b in items]
        res = run_batch(["--from", "lws", "--to", "json", "--word-bits", str(wb)],
                        [M.m_line(b) for b in sub])
        for k, (b, (st, out)) in enumerate(zip(sub, res)):
            what = "%d-bit %s" % (wb, b.hex()[:100])
            suspect = set()
            try:
                want = M.lws_decode(b, wb, suspect)
            except M.LwsError as e:
                want = e
            if st == "ok":
                # The warning names the frames (1-based) that look truncated.
                warned = set()
                for w in WARNINGS.get(k, []):
                    m = re.search(r"frames? ([\d,]+) shows? libwebsockets' 64-bit", w)
                    if m:
                        warned.update(int(x) - 1 for x in m.group(1).split(","))
                    if "allocation size shows" in w:
                        warned.add("size")
                SUSPECTS[0] += bool(suspect)
                report("lws truncation signature", warned == suspect, "%s: ours %s, model %s" % (
                    what, sorted(map(str, warned)), sorted(map(str, suspect))))
            if isinstance(want, M.LwsError):
                m = LWS_ERR_RE.search(out) if st == "err" else None
                got = (m.group(1), int(m.group(2))) if m else (st, out[:100])
                report("lws decode error", got == (want.cls, want.bit),
                       "%s: ours %s, model %s" % (what, got, (want.cls, want.bit)))
                continue
            if st != "ok":
                report("lws decode accepts", False, "%s: ours %s, model %s" % (
                    what, out[:100], want))
                continue
            d = json.loads(out)
            got = ([fr_from_json(x) for x in d["frames"]], d.get("alloc_size"))
            report("lws decode values", got == ([("ra", v) for v in want[0]], want[1]),
                   "%s: ours %s, model %s" % (what, str(got)[:160], str(want)[:160]))


# ---------------------------------------------------------------------------
# 4. The library itself (Swift policy and encoder mode)
# ---------------------------------------------------------------------------

def load_library():
    import ctypes
    if not LIBRARY:
        return None, "no library given"
    # A sanitizer build's library aborts the process that loads it without
    # its runtime preloaded, so try in a child first.
    p = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                        LIBRARY], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if p.returncode != 0:
        lines = p.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1][:200] if lines else str(p.returncode)
        # Only a sanitizer's runtime may keep the library out; any other
        # reason (a library that cannot be loaded with dlopen) is a failure.
        if "runtime does not come first" not in why:
            report("library loads with dlopen", False, "%s: %s" % (LIBRARY, why))
        return None, "cannot load %s: %s" % (LIBRARY, why)
    lib = ctypes.CDLL(LIBRARY)

    class Frame(ctypes.Structure):
        _fields_ = [("value", ctypes.c_uint64), ("kind", ctypes.c_int)]

    class Info(ctypes.Structure):
        _fields_ = [("word_bits", ctypes.c_uint), ("truncated", ctypes.c_int),
                    ("terminator", ctypes.c_int), ("consumed", ctypes.c_size_t),
                    ("frames", ctypes.c_size_t), ("error_offset", ctypes.c_size_t)]

    lib.btp_status_name.restype = ctypes.c_char_p
    lib.btp_cbf_decode.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint,
                                   ctypes.POINTER(Frame), ctypes.c_size_t,
                                   ctypes.POINTER(Info)]
    lib.btp_cbf_encode.argtypes = [ctypes.POINTER(Frame), ctypes.c_size_t, ctypes.c_int,
                                   ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p,
                                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(ctypes.c_size_t)]
    lib.Frame, lib.Info = Frame, Info
    return lib, None


KIND_NUM = {"pc": 0, "ra": 1, "async": 2, "omit": 3}
NUM_KIND = {v: k for k, v in KIND_NUM.items()}
POLICY_BITS = {M.DEFAULT: 0, M.STRICT: 7, M.SWIFT: 8}
LIB_LIMIT = 100000


def library_capped(lib, arr, wb, frames, t):
    """A short buffer (D10): without TRUNCATE_ON_FULL the exact size needed
    and nothing else; with it the instructions that fit, whole, then trunc."""
    import ctypes
    full = M.cbf_encode(frames, wb, t)
    what = trace_json(wb, frames[:10], t)[:160]
    caps = sorted({0, 1, 2, 3, len(full) - 1, len(full), len(full) + 1}
                  | {rng.randint(0, len(full)) for _ in range(4)})
    if len(full) < 40:
        caps = range(0, len(full) + 2)
    for cap in caps:
        if cap < 0:
            continue
        buf = ctypes.create_string_buffer(max(cap, 1))
        ln, need = ctypes.c_size_t(99), ctypes.c_size_t(0)
        st = lib.btp_status_name(lib.btp_cbf_encode(arr, len(frames), int(t), wb, 0, buf, cap,
                                                    ctypes.byref(ln), ctypes.byref(need)))
        if cap >= len(full):
            report("lib encode fits", st == b"ok" and buf.raw[:ln.value] == full,
                   "%s cap %d: %s" % (what, cap, st))
        else:
            report("lib encode needed", st == b"buffer_too_small" and ln.value == 0
                   and need.value == len(full), "%s cap %d: %s len %d needed %d, model %d" % (
                       what, cap, st, ln.value, need.value, len(full)))
        st = lib.btp_status_name(lib.btp_cbf_encode(arr, len(frames), int(t), wb, 1, buf, cap,
                                                    ctypes.byref(ln), None))
        if cap < 2:
            report("lib truncate-on-full needs 2 bytes", st == b"invalid_argument",
                   "%s cap %d: %s" % (what, cap, st))
            continue
        want = M.cbf_encode_capped(frames, wb, t, cap)
        want_st = b"ok" if want == full else b"buffer_too_small"
        report("lib truncate-on-full bytes", st == want_st and buf.raw[:ln.value] == want,
               "%s cap %d: ours %s %s, model %s" % (what, cap, st, buf.raw[:ln.value].hex()[:80],
                                                    want.hex()[:80]))


def library_lws(lib, blobs):
    """btp_lws_encode into every short buffer: buffer_too_small with the
    length needed, nothing written past cap."""
    import ctypes
    lib.btp_lws_encode.argtypes = [ctypes.POINTER(lib.Frame), ctypes.c_size_t, ctypes.c_uint64,
                                   ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p,
                                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(ctypes.c_size_t)]
    for wb, blob, vals, size, optimal in blobs[:200]:
        arr = (lib.Frame * max(1, len(vals)))(*[lib.Frame(v, KIND_NUM["ra"]) for v in vals])
        for cap in sorted({0, 1, len(blob) // 2, len(blob) - 1, len(blob)}):
            buf = ctypes.create_string_buffer(b"\xaa" * (len(blob) + 8))
            ln = ctypes.c_size_t(0)
            st = lib.btp_status_name(lib.btp_lws_encode(arr, len(vals), size, wb, int(optimal),
                                                        buf, cap, ctypes.byref(ln), None))
            what = "%d-bit %s cap %d" % (wb, blob.hex()[:60], cap)
            if cap == len(blob):
                report("lib lws encode", st == b"ok" and buf.raw[:cap] == blob, what)
            else:
                report("lib lws short buffer", st == b"buffer_too_small" and ln.value == len(blob)
                       and buf.raw[cap:len(blob) + 8] == b"\xaa" * (len(blob) + 8 - cap),
                       "%s: %s len %d" % (what, st, ln.value))


def library_long_runs(lib):
    """Runs no JSON line can carry, given to the streaming encoder as
    add(frame, copies): a run longer than the word's largest count becomes
    several reps (D9), also across calls, in O(1) per call."""
    import ctypes
    lib.btp_cbf_encoder_init.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.c_uint, ctypes.c_uint]
    lib.btp_cbf_encoder_add.argtypes = [ctypes.c_void_p, lib.Frame, ctypes.c_uint64]
    lib.btp_cbf_encoder_finish.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_size_t)]
    big = [1, 2, 8, 9, 0xffff, 0x10000, 0x10001, 0x20000, 0xffffffff, 0x100000000,
           0x100000001, 0x2fffffffe, (1 << 63) + 5, (1 << 64) - 1]
    cases = []
    for wb in (16, 32, 64):
        for _ in range(30):
            runs = []
            for _ in range(rng.randint(1, 4)):
                f = ("omit", rng.choice([1, 32, 33, 0xffff])) if rng.random() < 0.2 else (
                    rng.choice(["pc", "ra", "async"]), rng.choice(interesting(wb)))
                if runs and rng.random() < 0.4:
                    f = runs[-1][0]  # the same frame across calls
                # Bounded so that the encoding stays small: at most a few
                # hundred reps of the word's largest count.
                runs.append([f, rng.choice([c for c in big if c >> wb < 300])])
            cases.append((wb, runs, rng.random() < 0.3))
    enc = ctypes.create_string_buffer(1024)  # more than sizeof(btp_cbf_encoder)
    for wb, runs, t in cases:
        want = M.cbf_encode(None, wb, t, runs=[list(r) for r in runs])
        buf = ctypes.create_string_buffer(len(want) + 16)
        st = lib.btp_cbf_encoder_init(enc, buf, len(want) + 16, wb, 0)
        for (k, v), c in runs:
            st = st or lib.btp_cbf_encoder_add(enc, lib.Frame(v, KIND_NUM[k]), c)
        ln = ctypes.c_size_t(0)
        st = st or lib.btp_cbf_encoder_finish(enc, int(t), ctypes.byref(ln))
        report("lib long runs", st == 0 and buf.raw[:ln.value] == want,
               "%d-bit %s: ours %s %s, model %s" % (wb, runs, lib.btp_status_name(st),
                                                  buf.raw[:ln.value].hex()[:80], want.hex()[:80]))


def library_cases(lib, traces, streams):
    import ctypes
    for wb, frames, t in traces:
        if len(frames) > 5000:
            continue
        arr = (lib.Frame * max(1, len(frames)))(*[
            lib.Frame(v, KIND_NUM[k]) for k, v in frames])
        cap = 2 + 9 * len(frames)
        buf = ctypes.create_string_buffer(cap)
        ln = ctypes.c_size_t(0)
        st = lib.btp_cbf_encode(arr, len(frames), int(t), wb, 2, buf, cap, ctypes.byref(ln), None)
        try:
            want = M.cbf_encode(frames, wb, t, swift=True)
        except M.ValueTooWide:
            want = None
        what = trace_json(wb, frames[:10], t)[:200]
        if want is None:
            report("lib swift encoder refuses", lib.btp_status_name(st) == b"value_too_wide", what)
        else:
            got = buf.raw[:ln.value] if st == 0 else lib.btp_status_name(st)
            report("lib swift encoder bytes", got == want, "%s: ours %s, model %s" % (
                what, got.hex()[:120] if isinstance(got, bytes) else got, want.hex()[:120]))
        if want is not None:
            library_capped(lib, arr, wb, frames, t)
    lib.btp_cbf_decoder_init.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.c_uint]
    lib.btp_cbf_decoder_next.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.btp_cbf_decoder_error_offset.argtypes = [ctypes.c_void_p]
    lib.btp_cbf_decoder_error_offset.restype = ctypes.c_size_t

    class Run(ctypes.Structure):
        _fields_ = [("frame", lib.Frame), ("count", ctypes.c_uint64)]

    dec = ctypes.create_string_buffer(1024)  # more than sizeof(btp_cbf_decoder)
    for s in streams:
        # The cursor's runs: reps merged into the run they repeat, a run
        # capped at 2^64-1 copies (spec/cbf.md section 2).
        for pol in (M.DEFAULT, M.STRICT, M.SWIFT):
            r = M.cbf_decode(s, pol)
            st = lib.btp_cbf_decoder_init(dec, s, len(s), POLICY_BITS[pol])
            runs = []
            run = Run()
            while st == 0 and len(runs) < 10000:
                st = lib.btp_cbf_decoder_next(dec, ctypes.byref(run))
                if st == 0:
                    runs.append([(NUM_KIND[run.frame.kind], run.frame.value), run.count])
            name = lib.btp_status_name(st).decode()
            err = None if name == "end" else (name, lib.btp_cbf_decoder_error_offset(dec))
            report("lib decoder runs", runs == r.runs and err == r.error,
                   "%s policy %d: ours %s %s, model %s %s" % (
                       s.hex()[:80], POLICY_BITS[pol], str(runs)[:100], err,
                       str(r.runs)[:100], r.error))
    out = (lib.Frame * LIB_LIMIT)()
    for s in streams:
        for pol in (M.DEFAULT, M.STRICT, M.SWIFT):
            info = lib.Info()
            st = lib.btp_cbf_decode(s, len(s), POLICY_BITS[pol], out, LIB_LIMIT,
                                    ctypes.byref(info))
            name = lib.btp_status_name(st).decode()
            r = M.cbf_decode(s, pol)
            got_frames = [(NUM_KIND[out[i].kind], out[i].value) for i in range(info.frames)]
            what = "%s policy %s" % (s.hex()[:100], POLICY_BITS[pol])
            want_frames = r.frames(LIB_LIMIT)
            if want_frames is None:
                report("lib decode limit", name == "limit" or (r.error and r.error[0] == name),
                       "%s: %s" % (what, name))
                continue
            if r.error:
                report("lib decode error", (name, info.error_offset) == r.error
                       and got_frames == want_frames,
                       "%s: ours %s@%d %s, model %s %s" % (
                           what, name, info.error_offset, str(got_frames)[:80], r.error,
                           str(want_frames)[:80]))
            else:
                term = {0: None, 1: "end", 2: "trunc"}.get(info.terminator, "?")
                report("lib decode", name == "ok" and got_frames == want_frames
                       and term == r.terminator and info.consumed == r.consumed,
                       "%s: ours %s %s %s %d, model %s %s %d" % (
                           what, name, str(got_frames)[:80], term, info.consumed,
                           str(want_frames)[:80], r.terminator, r.consumed))


def main():
    model_vs_vectors()
    n = max(20, int(400 * SCALE))
    global LAST_TRACES
    LAST_TRACES = cbf_encode_cases(n)
    encoded = [M.cbf_encode(f, wb, t) for wb, f, t in LAST_TRACES
               if all(k != "omit" or v <= (1 << wb) - 1 for k, v in f)]
    cbf_text_and_binary(LAST_TRACES)
    # Swift's encoding of the same traces (first address relative) too.
    sw = []
    for _ in range(n // 4):
        wb = rng.choice([16, 32, 64])
        f, t = rand_trace(wb)
        sw.append(M.cbf_encode(f, wb, t, swift=True))
    streams = cbf_decode_cases([e for e in encoded if len(e) < 4000] + sw, n)
    blobs = lws_cases(n)
    lws_decode_cases(blobs, n)
    lib, why = load_library()
    if lib is None:
        print("library checks skipped (Swift policy and encoder mode): %s" % why)
    else:
        library_cases(lib, LAST_TRACES, streams)
        library_lws(lib, blobs)
        library_long_runs(lib)
    print("records showing libwebsockets' truncation: %d" % SUSPECTS[0])
    for kind, k in sorted(shown.items()):
        print("disagreements: %s: %d" % (kind, k), file=sys.stderr)
    finish()


main()
