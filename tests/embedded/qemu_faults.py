#!/usr/bin/env python3
"""Run the fault firmware (tests/embedded/fw) under qemu-system-arm and check
the call chain each capture method recovers.

For every scenario the firmware knows, each of the two images (eh: unwind
tables; fp: unwind tables and frame pointers) is run once with a timeout.
Its records are decoded with `btpack convert` (CBF lines and the `~m#` line)
and symbolized with addr2line; the chain of function names is compared with
the scenario's true chain. Prints a table (scenario x image x method: frames
recovered of the true chain, extra frames) and fails on:
  - a run that does not end with "done" (timeout, crash, no fault),
  - a fault status, flags or fault-status register that do not fit the
    scenario, a first frame that is not the faulting PC,
  - EHABI on the eh image or fp on the fp image not recovering the whole
    true chain in order from the first frame,
  - the scan not containing the whole chain in order (it may add stale
    return addresses between),
  - the `~m#` line not decoding to the EHABI chain,
  - the record kept in RAM across a reset (scenario reset, eh image)
    differing from the one written before the reset, or not decoding to
    the whole true chain.

The heap scenarios (fw/heap.c: an allocator streaming `m,SIZE,PTR,CBF` and
`f,,PTR` records, each allocation's chain taken with btp_cm_here and one
method) are read back with `btpack heap report --json --elf`, which must
find the workload's counts (allocations, frees, bytes, temporaries, peak,
failed, leaks and their sizes) and symbolize each leak's chain to the
allocating function chain; arm-none-eabi-addr2line must agree on every
leak frame. EHABI (eh image) and fp (fp image) must give the whole chain,
the scan (eh image) must contain it in order.

--bench instead runs the bench scenario under QEMU's -icount and prints
instructions per frame of the CBF encoder.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile

# The firmware's scenarios: the true chain, innermost first (fw/faults.c).
CHAIN = ["s_{k}", "level2", "level1", "run", "main", "Reset_Handler"]
SCENARIOS = {
    "null": ["f_null"] + [c.format(k="null") for c in CHAIN],
    "undef": ["f_undef"] + [c.format(k="undef") for c in CHAIN],
    "div0": ["f_div0"] + [c.format(k="div0") for c in CHAIN],
    "leaf": ["f_leaf"] + [c.format(k="leaf") for c in CHAIN],
    # The thread's stack ends with thread_entry: its caller (run_on_psp,
    # which switched stacks) runs on the main stack, outside the bounds.
    "psp": ["f_null", "s_null", "level2", "level1", "thread_entry"],
    "fpu": ["f_fpu"] + [c.format(k="fpu") for c in CHAIN],
}
FPU_MACHINES = {"mps2-an386", "mps2-an505"}
# The micro:bit's Cortex-M0 (ARMv6-M) has no divide instruction.
NO_DIV_MACHINES = {"microbit"}

# CFSR bits: MMFSR.DACCVIOL, UFSR.UNDEFINSTR, UFSR.DIVBYZERO.
DACCVIOL, UNDEFINSTR, DIVBYZERO = 1 << 1, 1 << 16, 1 << 25
EXPECT_CFSR = {"null": DACCVIOL, "leaf": DACCVIOL, "psp": DACCVIOL, "fpu": DACCVIOL,
               "undef": UNDEFINSTR, "div0": DIVBYZERO}
FLAG_PSP, FLAG_FPU = 1, 2

# Which method must recover the whole chain on which image.
EXACT = {("eh", "ehabi"), ("fp", "fp")}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run_qemu(args, elf, scenario, extra=()):
    cmd = [args.qemu, "-M", args.machine, "-display", "none", "-monitor", "none",
           "-serial", "stdio", *extra,
           "-semihosting-config", "enable=on,target=native,arg=fw,arg=" + scenario,
           "-kernel", elf]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as e:
        return None, "timeout: " + (e.stdout or b"").decode(errors="replace")[-300:]
    return p.stdout + p.stderr, None


def btpack_addrs(args, lines, fmt, word_bits=None):
    """Decode record lines with btpack; one list of (kind, addr) per line."""
    cmd = [args.btpack, "convert", "--from", fmt, "--to", "addrs"]
    if word_bits:
        cmd += ["--word-bits", str(word_bits)]
    p = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("btpack: " + p.stderr.strip())
    out = []
    for line in p.stdout.splitlines():
        frames = []
        for tok in line.split():
            kind, _, val = tok.rpartition(":")
            frames.append((kind or "ra", int(val, 16)))
        out.append(frames)
    return out


def symbolize(args, elf, frames):
    """Function names: a pc as is, a return address at the call (ra - 1)."""
    if not frames:
        return []
    addrs = ["0x%x" % (a if k == "pc" else a - 1) for k, a in frames]
    p = subprocess.run([args.addr2line, "-f", "-e", elf] + addrs,
                       capture_output=True, text=True, check=True)
    names = p.stdout.splitlines()[0::2]
    return [n.split(".")[0] for n in names]


def compare(got, want):
    """(frames of the true chain recovered in order from the first frame,
    whether all of it is there as a subsequence, frames that are not in it
    before its last frame found)."""
    prefix = 0
    while prefix < min(len(got), len(want)) and got[prefix] == want[prefix]:
        prefix += 1
    matched = extra = pending = 0
    for g in got:
        if matched < len(want) and g == want[matched]:
            matched += 1
            extra += pending
            pending = 0
        else:
            pending += 1
    return prefix, matched == len(want), extra


def check_run(args, image, elf, scenario, out):
    want = SCENARIOS[scenario]
    if "\ndone" not in out:
        fail("%s/%s: the run did not finish: %s" % (scenario, image, out[-300:]))
        return []
    m = re.search(r"^fault kind=(\S+) status=(\d+) flags=(0x[0-9a-f]+) pc=(0x[0-9a-f]+)"
                  r" lr=\S+ sp=\S+(?: cfsr=(0x[0-9a-f]+))?", out, re.M)
    if not m:
        fail("%s/%s: no fault line" % (scenario, image))
        return []
    status, flags, pc = int(m.group(2)), int(m.group(3), 16), int(m.group(4), 16)
    cfsr = int(m.group(5), 16) if m.group(5) else None
    if status != 0:
        fail("%s/%s: btp_cm_fault_read status %d" % (scenario, image, status))
    if bool(flags & FLAG_PSP) != (scenario == "psp"):
        fail("%s/%s: PSP flag %d" % (scenario, image, flags & FLAG_PSP))
    if scenario == "fpu" and not flags & FLAG_FPU:
        fail("%s/%s: the frame is not FPU-extended (flags %#x)" % (scenario, image, flags))
    if cfsr is not None and not cfsr & EXPECT_CFSR[scenario]:
        fail("%s/%s: CFSR %#x lacks %#x" % (scenario, image, cfsr, EXPECT_CFSR[scenario]))
    methods = re.findall(r"^method (\S+) status=(\d+) n=(\d+) truncated=(\d+)\n(cbf \S+)$",
                         out, re.M)
    if [mm[0] for mm in methods] != ["ehabi", "fp", "scan"]:
        fail("%s/%s: records missing: %s" % (scenario, image, [mm[0] for mm in methods]))
        return []
    chains = btpack_addrs(args, [mm[4][4:] for mm in methods], "hex")
    rows = []
    for (name, st, n, trunc, _), frames in zip(methods, chains):
        if int(st) != 0 or len(frames) != int(n):
            fail("%s/%s/%s: status %s, %d frames decoded of %s" %
                 (scenario, image, name, st, len(frames), n))
        if not frames or frames[0] != ("pc", pc):
            fail("%s/%s/%s: first frame %s is not the faulting pc %#x" %
                 (scenario, image, name, frames[:1], pc))
        names = symbolize(args, elf, frames)
        prefix, subseq, extra = compare(names, want)
        rows.append((scenario, image, name, prefix, len(want), extra, " ".join(names)))
        if (image, name) in EXACT and prefix != len(want):
            fail("%s/%s/%s: recovered %d of %d frames: %s" %
                 (scenario, image, name, prefix, len(want), names))
        if name == "scan" and not subseq:
            fail("%s/%s/scan: the true chain is not in %s" % (scenario, image, names))
    lws = re.search(r"^lws (~m#\S+)$", out, re.M)
    if not lws:
        fail("%s/%s: no ~m# line" % (scenario, image))
    else:
        got = [a for _, a in btpack_addrs(args, [lws.group(1)], "lws", 32)[0]]
        if got != [a for _, a in chains[0]]:
            fail("%s/%s: ~m# chain %s differs from the CBF one" % (scenario, image, got))
    return rows


# The heap workload (fw/heap.c) and what a report of it must say.
HEAP_RUNS = [("heap-ehabi", "eh", True), ("heap-fp", "fp", True), ("heap-scan", "eh", False)]
HEAP_TOTALS = {"allocations": 12, "frees": 10, "bytes_allocated": 704, "temporary": 8,
               "failed_allocations": 1, "unmatched_frees": 0, "frees_missing": 0,
               "bad_lines": 0}
HEAP_CHAIN = ["fw_malloc", "{f}", "heap_run", "main", "Reset_Handler"]
# Leaks, most bytes first: (bytes, allocating function).
HEAP_LEAKS = [(256, "table_grow"), (100, "keep_config")]


def outer_function(symbols):
    """The function a frame is in: the one its inlined calls are inlined
    into (the last entry), as addr2line -f without -i names it."""
    return symbols[-1]["function"].split(".")[0] if symbols else "??"


def check_heap(args, image, elf, scenario, out, exact):
    if "\ndone" not in out or "heap live=2 bytes=356" not in out:
        fail("%s/%s: the run did not finish as the workload does: %s" %
             (scenario, image, out[-300:]))
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".log") as log:
        log.write(out)
        log.flush()
        p = subprocess.run([args.btpack, "heap", "report", "--json", "--elf", elf, log.name],
                           capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s/%s: btpack heap report: %s" % (scenario, image, p.stderr.strip()))
        return []
    rep = json.loads(p.stdout)
    for key, want in HEAP_TOTALS.items():
        if rep.get(key) != want:
            fail("%s/%s: report %s = %s, the firmware did %s" %
                 (scenario, image, key, rep.get(key), want))
    if rep["peak"]["bytes"] != 548 or rep["leaked"] != {"bytes": 356, "allocations": 2,
                                                         "stacks": 2}:
        fail("%s/%s: peak %s, leaked %s (want 548; 356 bytes in 2 from 2 stacks)" %
             (scenario, image, rep["peak"], rep["leaked"]))
    leaks = rep["leaks"]
    if [lk["leaked_bytes"] for lk in leaks] != [b for b, _ in HEAP_LEAKS]:
        fail("%s/%s: leaks %s, want %s" % (scenario, image,
                                           [lk["leaked_bytes"] for lk in leaks], HEAP_LEAKS))
        return []
    # The 8 temporaries come from one stack (with EHABI and fp: the scan may
    # see different stale return addresses in them).
    temp = rep["by_temporary"][0] if rep["by_temporary"] else {"frames": [], "temporary": 0}
    names = [outer_function(fr.get("symbols", [])) for fr in temp["frames"]]
    want = [c.format(f="temp_strings") for c in HEAP_CHAIN]
    if exact and (temp["temporary"] != 8 or names != want):
        fail("%s/%s: the top temporary stack has %d temporaries from %s, want 8 from %s" %
             (scenario, image, temp["temporary"], names, want))
    rows = []
    for lk, (size, fn) in zip(leaks, HEAP_LEAKS):
        want = [c.format(f=fn) for c in HEAP_CHAIN]
        names = [outer_function(fr.get("symbols", [])) for fr in lk["frames"]]
        frames = [("pc" if i == 0 else "ra", int(fr["addr"], 16))
                  for i, fr in enumerate(lk["frames"])]
        # addr2line -f names the innermost inlined function: so does the
        # report's first symbol of a frame.
        inner = [fr["symbols"][0]["function"].split(".")[0] if fr.get("symbols") else "??"
                 for fr in lk["frames"]]
        a2l = symbolize(args, elf, frames)
        if inner != a2l:
            fail("%s/%s: btpack and addr2line disagree: %s vs %s" % (scenario, image, inner, a2l))
        prefix, subseq, extra = compare(names, want)
        if (exact and prefix != len(want)) or not subseq:
            fail("%s/%s: the %d-byte leak's stack %s is not %s" %
                 (scenario, image, size, names, want))
        rows.append((scenario, image, "%d B" % size, prefix, len(want), extra, " ".join(names)))
    return rows


def check_reset(args, elf, out):
    """The reset scenario: the EHABI record written to RAM before a reset
    and printed by the next boot."""
    before = re.search(r"^method ehabi status=0 n=\d+ truncated=\d+\ncbf (\S+)$", out, re.M)
    after = re.search(r"^saved cbf (\S+)$", out, re.M)
    if not before or not after or "\ndone" not in out:
        fail("reset/eh: no record before the reset or none after it: %s" % out[-300:])
        return []
    if before.group(1) != after.group(1):
        fail("reset/eh: the record kept in RAM (%s) differs from the one written (%s)" %
             (after.group(1), before.group(1)))
    frames = btpack_addrs(args, [after.group(1)], "hex")[0]
    names = symbolize(args, elf, frames)
    want = SCENARIOS["null"]
    prefix, _, extra = compare(names, want)
    if prefix != len(want):
        fail("reset/eh: the saved record has %d of %d frames: %s" % (prefix, len(want), names))
    return [("reset", "eh", "ehabi", prefix, len(want), extra, " ".join(names))]


def bench(args):
    # -icount shift=7: every instruction advances the virtual clock by 128 ns,
    # and SysTick counts that clock; the spin loop calibrates ticks per
    # instruction.
    out, err = run_qemu(args, args.eh, "bench", ["-icount", "shift=7"])
    if err or "\ndone" not in out:
        print(err or out)
        return 1
    v = dict(re.findall(r"(\w+)=(\d+)", out.split("bench ", 1)[1]))
    print("DWT CYCCNT over the calibration loop of %s instructions: %s" %
          (v["spin_insns"], v.get("dwt_cyccnt_delta", "n/a")))
    per_insn = int(v["spin_ticks"]) / int(v["spin_insns"])
    frames = int(v["frames"])
    insns = int(v["encode_ticks"]) / per_insn
    print("%s: CBF encode (init + add per frame + finish, 16-frame chains): "
          "%.1f instructions per frame (QEMU -icount; %d frames, %.3f ticks/insn, %s bytes)"
          % (args.machine, insns / frames, frames, per_insn, v["cbf_bytes"]))
    insns = int(v["chain32_ticks"]) / per_insn
    print("%s: CBF encode (btp_cbf_encode_chain32, the same chains): "
          "%.1f instructions per frame" % (args.machine, insns / frames))
    if v["chain32_same"] != "1":
        print("FAIL: btp_cbf_encode_chain32 wrote other bytes than the streaming encoder")
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qemu", required=True)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--eh", required=True, help="image built with unwind tables")
    ap.add_argument("--fp", required=True, help="image built with frame pointers too")
    ap.add_argument("--btpack")
    ap.add_argument("--addr2line")
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    if args.bench:
        return bench(args)
    if not args.btpack or not args.addr2line:
        ap.error("--btpack and --addr2line are needed")
    scenarios = [s for s in SCENARIOS
                 if (s != "fpu" or args.machine in FPU_MACHINES)
                 and (s != "div0" or args.machine not in NO_DIV_MACHINES)]
    rows = []
    runs_ok = runs_bad = 0
    for scenario in scenarios + ["reset"]:
        for image, elf in (("eh", args.eh), ("fp", args.fp)):
            if scenario == "reset" and image != "eh":
                continue
            before = len(failures)
            out, err = run_qemu(args, elf, scenario)
            if err:
                fail("%s/%s: %s" % (scenario, image, err))
            elif scenario == "reset":
                rows += check_reset(args, elf, out)
            else:
                rows += check_run(args, image, elf, scenario, out)
            if len(failures) == before:
                runs_ok += 1
            else:
                runs_bad += 1
    for scenario, image, exact in HEAP_RUNS:
        before = len(failures)
        elf = args.eh if image == "eh" else args.fp
        out, err = run_qemu(args, elf, scenario)
        if err:
            fail("%s/%s: %s" % (scenario, image, err))
        else:
            rows += check_heap(args, image, elf, scenario, out, exact)
        if len(failures) == before:
            runs_ok += 1
        else:
            runs_bad += 1
    print("%-10s %-5s %-6s %-9s %-5s %s" % ("fault", "image", "method", "recovered", "extra",
                                           "chain (innermost first)"))
    for scenario, image, name, prefix, total, extra, chain in rows:
        print("%-10s %-5s %-6s %d/%-7d %-5d %s" % (scenario, image, name, prefix, total, extra,
                                                  chain))
    print("qemu-faults (%s): %d passed, %d failed" % (args.machine, runs_ok, runs_bad))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
