"""An independent reference model of the two binary formats, written from
the format documents alone (spec/cbf.md, spec/lws.md and the notes they
cite), not from lib/: tests/differential.py runs it against the btpack CLI.

Python standard library only. Values are plain ints; a frame is a tuple
(kind, value) with kind one of "pc", "ra", "async", "omit" (value = the
count for omit).

CBF
  cbf_decode(data, policy)   -> CbfResult (runs, terminator, consumed, error)
  cbf_encode(frames, word_bits, truncated, swift=False) -> bytes
lws
  lws_encode(values, alloc_size, word_bits) -> blob bytes (libwebsockets'
                                                choices, gcc's extra bit)
  lws_decode(blob, word_bits) -> (values, alloc_size) or raises LwsError
  m_line(blob), m_parse(text), b_line(values, size)
"""
import base64

# ---------------------------------------------------------------------------
# CBF
# ---------------------------------------------------------------------------

WORD_CODE = {16: 0, 32: 1, 64: 2}
CODE_WORD = {0: 16, 1: 32, 2: 64}
KIND_BASE = {"pc": 0x10, "ra": 0x20, "async": 0x30}
BASE_KIND = {1: "pc", 2: "ra", 3: "async"}

# Policies (spec/cbf.md 2.1).
DEFAULT = frozenset()
STRICT = frozenset(["reject_relative_first", "reject_zero_count", "reject_trailing"])
SWIFT = frozenset(["accept_wide"])


class CbfResult:
    """runs: list of [frame, count] with consecutive reps merged into the
    run they repeat; terminator: None, "end" or "trunc"; error: None or
    (class, byte offset)."""

    def __init__(self):
        self.word_bits = None
        self.runs = []
        self.terminator = None
        self.consumed = 0
        self.error = None

    def frames(self, limit=None):
        """The runs expanded (None if more than limit)."""
        out = []
        for f, c in self.runs:
            if limit is not None and len(out) + c > limit:
                return None
            out.extend([f] * c)
        return out

    def total(self):
        return sum(c for _, c in self.runs)


def _sext(raw, nbytes, word_bits):
    """Big-endian operand of nbytes, sign-extended from its top bit, reduced
    to the word."""
    v = int.from_bytes(raw, "big")
    if raw and raw[0] & 0x80:
        v -= 1 << (8 * nbytes)
    return v % (1 << word_bits)


def cbf_decode(data, policy=DEFAULT):
    r = CbfResult()
    if len(data) == 0:
        r.error = ("empty_input", 0)
        return r
    info = data[0]
    if info >> 2 != 0:
        r.error = ("bad_version", 0)
        return r
    if info & 3 == 3:
        r.error = ("reserved_size", 0)
        return r
    wb = CODE_WORD[info & 3]
    r.word_bits = wb
    W = wb // 8
    mask = (1 << wb) - 1
    prev = 0
    last = None
    seen_addr = False
    pos = 1
    n = len(data)

    def fail(cls, off):
        r.error = (cls, off)
        r.consumed = off
        return r

    def ext_count(nb):
        """The external count of nb bytes after the opcode at pos: (count,
        None) or (None, error class), checks in the order of D8."""
        if nb > W and "accept_wide" not in policy:
            return None, "count_too_wide"
        if pos + 1 + nb > n:
            return None, "truncated_operand"
        cnt = int.from_bytes(data[pos + 1:pos + 1 + nb], "big")
        if cnt >= 1 << 64:
            return None, "count_too_wide"
        if cnt == 0 and "reject_zero_count" in policy:
            return None, "zero_count"
        return cnt, None

    while pos < n:
        op = data[pos]
        at = pos
        if op in (0, 1):
            r.terminator = "end" if op == 0 else "trunc"
            pos += 1
            r.consumed = pos
            if "reject_trailing" in policy and pos < n:
                r.error = ("trailing_bytes", pos)
            return r
        if op < 0x10 or op >= 0x90:
            return fail("reserved_opcode", at)
        if op < 0x40:  # pc / ra / async
            kind = BASE_KIND[op >> 4]
            absolute = bool(op & 8)
            nb = (op & 7) + 1
            if nb > W and "accept_wide" not in policy:
                return fail("address_too_wide", at)
            if pos + 1 + nb > n:
                return fail("truncated_operand", at)
            v = _sext(data[pos + 1:pos + 1 + nb], nb, wb)
            if not seen_addr and not absolute and "reject_relative_first" in policy:
                return fail("first_address_relative", at)
            addr = v if absolute else (prev + v) & mask
            prev = addr
            seen_addr = True
            f = (kind, addr)
            r.runs.append([f, 1])
            last = f
            pos += 1 + nb
            continue
        if op < 0x80:  # omit
            if op & 0x20:
                cnt, err = ext_count((op & 0x1f) + 1)
                if err:
                    return fail(err, at)
                pos += 1 + (op & 0x1f) + 1
            else:
                cnt = (op & 0x1f) + 1
                pos += 1
            f = ("omit", cnt)
            r.runs.append([f, 1])
            last = f
            continue
        # rep 0x80..0x8f
        if last is None:
            return fail("rep_without_frame", at)
        if op & 8:
            cnt, err = ext_count((op & 7) + 1)
            if err:
                return fail(err, at)
            pos += 1 + (op & 7) + 1
        else:
            cnt = (op & 7) + 1
            pos += 1
        if cnt:
            if r.runs[-1][1] + cnt > (1 << 64) - 1:
                # A run holds at most 2^64-1 copies: the rep starts another.
                r.runs.append([last, cnt])
            else:
                r.runs[-1][1] += cnt
    r.consumed = pos
    return r


def _sbytes(v, word_bits):
    """Fewest bytes whose sign extension gives v (0 <= v < 2^word_bits)."""
    s = v - (1 << word_bits) if v >> (word_bits - 1) else v
    for nb in range(1, word_bits // 8 + 1):
        if -(1 << (8 * nb - 1)) <= s < (1 << (8 * nb - 1)):
            return nb
    raise AssertionError


def _ubytes(v):
    """Fewest bytes (at least 1) holding v unsigned."""
    return max(1, (v.bit_length() + 7) // 8)


def _rle(frames):
    out = []
    for f in frames:
        if out and out[-1][0] == f:
            out[-1][1] += 1
        else:
            out.append([f, 1])
    return out


class ValueTooWide(Exception):
    pass


def cbf_encode(frames, word_bits, truncated=False, swift=False, runs=None):
    """Our encoder's choices (spec/cbf.md D9), or with swift=True Swift's
    (first address relative, omit inline only up to 31). frames: list of
    (kind, value); or give runs: list of [frame, copies]."""
    info, instrs, term = cbf_instructions(frames, word_bits, truncated, swift, runs)
    return info + b"".join(instrs) + term


def cbf_encode_capped(frames, word_bits, truncated, cap):
    """Our encoder with BTP_CBF_ENC_TRUNCATE_ON_FULL into cap bytes (D10):
    the whole stream if it fits; else the instructions that fit before the
    last byte, each whole, then `trunc`."""
    info, instrs, term = cbf_instructions(frames, word_bits, truncated)
    out = info
    if len(out) + sum(map(len, instrs)) + 1 <= cap:
        return out + b"".join(instrs) + term
    for ins in instrs:
        if len(out) + len(ins) > cap - 1:
            break
        out += ins
    return out + b"\x01"


def cbf_instructions(frames, word_bits, truncated=False, swift=False, runs=None):
    """-> (information byte, [instruction bytes], terminator)."""
    mask = (1 << word_bits) - 1
    wmax = mask  # the largest external count that fits the word
    info = bytes([WORD_CODE[word_bits]])
    instrs = []
    prev = 0
    seen = False
    if runs is None:
        runs = _rle(frames)
    else:
        runs = _rle_runs(runs)
    for (kind, v), copies in runs:
        if kind == "omit":
            if v == 0:
                raise ValueError("zero omit")
            if v > mask:
                raise ValueTooWide(v)
            if v <= (31 if swift else 32):
                instrs.append(bytes([0x40 | (v - 1)]))
            else:
                nb = _ubytes(v)
                instrs.append(bytes([0x60 | (nb - 1)]) + v.to_bytes(nb, "big"))
        else:
            if v > mask:
                raise ValueTooWide(v)
            delta = (v - prev) & mask
            na = _sbytes(v, word_bits)
            nr = _sbytes(delta, word_bits)
            if not seen and not swift:
                absolute = True
            else:
                absolute = na < nr
            nb = na if absolute else nr
            val = v if absolute else delta
            instrs.append(bytes([KIND_BASE[kind] | (8 if absolute else 0) | (nb - 1)])
                          + (val & ((1 << (8 * nb)) - 1)).to_bytes(nb, "big"))
            prev = v
            seen = True
        extra = copies - 1
        while extra > 0:
            k = min(extra, wmax)
            if k <= 8:
                instrs.append(bytes([0x80 | (k - 1)]))
            else:
                nb = _ubytes(k)
                instrs.append(bytes([0x88 | (nb - 1)]) + k.to_bytes(nb, "big"))
            extra -= k
    return info, instrs, bytes([1 if truncated else 0])


def _rle_runs(runs):
    out = []
    for f, c in runs:
        if out and out[-1][0] == f:
            out[-1][1] += c
        else:
            out.append([f, c])
    return out


# ---------------------------------------------------------------------------
# lws
# ---------------------------------------------------------------------------


class LwsError(Exception):
    def __init__(self, cls, bit):
        Exception.__init__(self, "%s at bit %d" % (cls, bit))
        self.cls = cls
        self.bit = bit


def sigbits(v):
    return max(1, v.bit_length())


class _BitWriter:
    def __init__(self, word_bits):
        self.bits = []
        self.wb = word_bits

    def extra(self, v):
        if self.wb == 32:
            return (v >> 31) & 1
        return 1 if v >> 31 else 0

    def field(self, v, w):
        """w bits of v MSB first, then libwebsockets' extra bit (gcc)."""
        assert 0 <= v < (1 << w) or w == 0 and v == 0
        for i in range(w - 1, -1, -1):
            self.bits.append((v >> i) & 1)
        self.bits.append(self.extra(v))

    def blob(self):
        b = self.bits + [0] * (-len(self.bits) % 8)
        data = bytearray()
        for i in range(0, len(b), 8):
            byte = 0
            for bit in b[i:i + 8]:
                byte = byte << 1 | bit
            data.append(byte)
        total = len(data) + 2
        return bytes(data) + total.to_bytes(2, "big")


class Unrepresentable(Exception):
    pass


def lws_choice(values, i):
    """libwebsockets' choice for frame i: ("lit",) or ("delta", j, sign, d)."""
    v = values[i]
    best = None
    for j in range(max(0, i - 8), i):
        d = abs(v - values[j])
        if best is None or d < best[1]:
            best = (j, d)
    if best is not None and best[0] != 0:
        j, d = best
        if sigbits(v) >= sigbits(d) + 5:
            return ("delta", j, 0 if v > values[j] else 1, d)
    return ("lit",)


def _wide_delta(values, i, word_bits):
    """A value with bit 63 set: the cheapest delta (fewest bits, earliest on
    ties) from the 8 frames before it, the wrap-around way where the plain
    difference needs 64 bits."""
    v = values[i]
    best = None
    for j in range(max(0, i - 8), i):
        r = values[j]
        d = abs(v - r)
        sign = 0 if v > r else 1
        if d >= 1 << 63:
            d = (1 << 64) - d
            sign ^= 1
        if d >= 1 << 63:
            continue
        if best is None or sigbits(d) < sigbits(best[3]):
            best = ("delta", j, sign, d)
    return best


def _optimal_choice(values, i):
    """btpack's optimal mode (spec/lws.md section 5): the cheapest of the
    literal (10 + n bits) and a delta from any of the 8 frames before it,
    frame 0 included (16 + q bits); the literal on ties, then the earliest
    reference. Plain differences; the wrap only for a value with bit 63 set."""
    v = values[i]
    best = None if v >> 63 else (sigbits(v) + 10, ("lit",))
    for j in range(max(0, i - 8), i):
        r = values[j]
        d = abs(v - r)
        sign = 0 if v > r else 1
        if d >= 1 << 63 and v >> 63:
            d = (1 << 64) - d
            sign ^= 1
        if d >= 1 << 63:
            continue
        cost = sigbits(d) + 16
        if best is None or cost < best[0]:
            best = (cost, ("delta", j, sign, d))
    return best[1] if best else None


def lws_encode(values, alloc_size, word_bits, optimal=False):
    if len(values) > 31:
        raise ValueError("depth_too_large")
    mask = (1 << word_bits) - 1
    for v in list(values) + [alloc_size]:
        if v > mask:
            raise ValueTooWide(v)
    w = _BitWriter(word_bits)
    w.field(len(values), 5)
    for i, v in enumerate(values):
        c = _optimal_choice(values, i) if optimal else lws_choice(values, i)
        if c is None:
            raise Unrepresentable(i)
        if c[0] == "lit" and v >> 63:
            c = _wide_delta(values, i, word_bits) if i > 0 else None
            if c is None:
                raise Unrepresentable(i)
        if c[0] == "lit":
            w.field(0, 1)
            n = sigbits(v)
            w.field(n, 6)
            w.field(v, n)
        else:
            _, j, sign, d = c
            w.field(1, 1)
            w.field(i - j - 1, 3)
            w.field(sign, 1)
            q = sigbits(d)
            w.field(q, 6)
            w.field(d, q)
    if alloc_size >> 63:
        raise Unrepresentable("size")
    n = sigbits(alloc_size)
    w.field(n, 6)
    w.field(alloc_size, n)
    return w.blob()


def _truncated_form(x, n):
    """A field of n bits as libwebsockets' 64-bit encoder writes a value
    needing n >= 33 bits: its `1 << k` is an int shift, so bit k >= 32 holds
    bit k - 32 of the value and bit 31 holds "any of bits 31..63" (set)."""
    return n >= 33 and (x >> 31) & 1 and x >> 32 == x & ((1 << (n - 32)) - 1)


def lws_decode(blob, word_bits, suspect=None):
    """-> (values, alloc_size); raises LwsError(class, bit). A set given as
    suspect receives, on a 64-bit word, the indexes of frames showing
    libwebsockets' truncation (spec/lws.md section 4) and "size"."""
    sus = set()
    if len(blob) < 2:
        raise LwsError("length_mismatch", 0)
    trailer = int.from_bytes(blob[-2:], "big")
    if trailer != len(blob):
        raise LwsError("length_mismatch", 8 * (len(blob) - 2))
    nbits = 8 * (len(blob) - 2)
    pos = [0]
    mask = (1 << word_bits) - 1

    def read(w):
        """w bits and the extra bit, which is skipped unread."""
        start = pos[0]
        if start + w + 1 > nbits:
            raise LwsError("out_of_bits", start)
        v = 0
        for k in range(start, start + w):
            v = v << 1 | (blob[k >> 3] >> (7 - (k & 7))) & 1
        pos[0] = start + w + 1
        return v

    def count():
        start = pos[0]
        n = read(6)
        if n > word_bits:
            raise LwsError("bit_count_too_wide", start)
        return n

    depth = read(5)
    values = []
    for i in range(depth):
        kind = read(1)
        if kind == 0:
            n = count()
            values.append(read(n))
            if _truncated_form(values[-1], n):
                sus.add(i)
        else:
            ref_at = pos[0]
            ri = read(3)
            if i - 1 - ri < 0:
                # The reference field is the faulty one; nothing after it is read.
                raise LwsError("bad_reference", ref_at)
            sign = read(1)
            q = count()
            d = read(q)
            r = values[i - 1 - ri]
            values.append((r - d if sign else r + d) & mask)
            if _truncated_form(d, q) or i - 1 - ri in sus:
                sus.add(i)
        if values[-1] >> 31 == (1 << 33) - 1:
            sus.add(i)
    n = count()
    size = read(n)
    if _truncated_form(size, n) or size >> 31 == (1 << 33) - 1:
        sus.add("size")
    if suspect is not None and word_bits == 64:
        suspect.update(sus)
    return values, size


def m_line(blob):
    return "~m#" + base64.b64encode(blob).decode("ascii")


def m_parse(text):
    """The blob of a `~m#` record as libwebsockets' decode tool reads it:
    the lead-in skipped if byte 0 is '~' and byte 2 is '#'; either base64
    alphabet, white space anywhere, padding optional. None if not base64."""
    if len(text) >= 3 and text[0] == "~" and text[2] == "#":
        text = text[3:]
    p = "".join(text.split()).replace("-", "+").replace("_", "/").rstrip("=")
    if len(p) % 4 == 1:
        return None
    try:
        return base64.b64decode(p + "=" * (-len(p) % 4), validate=True)
    except ValueError:
        return None


def b_line(values, size):
    return "~b#size: %d, " % size + "".join("0x%x " % v for v in values)
