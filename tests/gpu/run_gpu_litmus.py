#!/usr/bin/env python3
"""GPU litmus runner (meson suite 'gpu').

usage: run_gpu_litmus.py WARPRACE GPU_LITMUS LITMUS_DIR WORK_DIR [NAME...]

Without a usable CUDA GPU it prints why and exits 77 (meson: skipped).
With one, for every kernel `GPU_LITMUS --list` names (or the NAMEs given)
that has a text litmus LITMUS_DIR/NAME.txt:
  warprace record -o WORK_DIR/NAME.wrt -- GPU_LITMUS NAME
  warprace analyze WORK_DIR/NAME.wrt --db WORK_DIR/NAME.db
then reads the races table and checks, per engine, the expectation lines of
the text litmus (tests/litmus/README.md): the set of allocations with races
must equal the expected set, and each VERDICT / CLASS token must be carried
by at least one race on that allocation.  Shared-memory races (no catalog
allocation) count for the litmus's only shared allocation.
Exit 0 all agree, 1 some disagree (each difference printed), 2 setup error.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys

CLASSES = {"intra-warp", "inter-warp", "inter-block", "inter-kernel"}
VERDICTS = {"missing-sync", "scope-fence", "scope-atomic", "scope-lock", "weak-access"}


def gpu_available(gpu_litmus):
    try:
        p = subprocess.run([gpu_litmus, "--probe"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, "cannot run the probe: %s" % e
    if p.returncode == 0:
        return True, p.stdout.strip()
    why = (p.stdout + p.stderr).strip()
    smi = shutil.which("nvidia-smi")
    if smi:
        q = subprocess.run([smi, "-L"], capture_output=True, text=True)
        why += "; nvidia-smi -L: " + (q.stdout.strip() or q.stderr.strip() or "nothing")
    else:
        why += "; no nvidia-smi"
    return False, why


def parse_expect(path):
    """engine -> {alloc: set(tokens)}  (empty dict = norace)"""
    exp = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*expect\s+([\w,]+):\s*(.*)$", line.strip())
            if not m:
                continue
            engines, rest = m.group(1).split(","), m.group(2).split()
            for e in engines:
                d = exp.setdefault(e, {})
                if rest and rest[0] == "race" and len(rest) >= 2:
                    d.setdefault(rest[1], set()).update(rest[2:])
    return exp


def shared_label(path):
    labels = []
    with open(path) as f:
        for line in f:
            t = line.split()
            if len(t) >= 3 and t[0] == "alloc" and t[2] == "shared":
                labels.append(t[1])
    return labels[0] if len(labels) == 1 else None


def found_races(db, shared):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT engine, ex_alloc, ex_space, scope_verdict, race_class "
                       "FROM races WHERE run_id = (SELECT max(id) FROM runs)").fetchall()
    con.close()
    got = {}
    for engine, alloc, space, verdict, cls in rows:
        if not alloc and space == "shared" and shared:
            alloc = shared
        got.setdefault(engine, {}).setdefault(alloc or "?", set()).update(
            t for t in (verdict, cls) if t)
    return got


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    warprace, gpu_litmus, litmus_dir, work = sys.argv[1:5]
    ok, why = gpu_available(gpu_litmus)
    if not ok:
        print("SKIP: no usable CUDA GPU on this machine (%s); the GPU litmus tests need "
              "one" % why)
        return 77
    print("GPU:", why)
    os.makedirs(work, exist_ok=True)
    names = sys.argv[5:] or subprocess.run([gpu_litmus, "--list"], capture_output=True,
                                           text=True, check=True).stdout.split()
    failures = 0
    checked = 0
    for name in names:
        txt = os.path.join(litmus_dir, name + ".txt")
        if not os.path.exists(txt):
            print("%-45s no text litmus with this name: not compared" % name)
            continue
        wrt = os.path.join(work, name + ".wrt")
        db = os.path.join(work, name + ".db")
        for f in (wrt, db):
            if os.path.exists(f):
                os.unlink(f)
        r = subprocess.run([warprace, "record", "-o", wrt, "--", gpu_litmus, name],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print("%-45s FAIL record (exit %d)\n%s%s" % (name, r.returncode, r.stdout, r.stderr))
            failures += 1
            continue
        a = subprocess.run([warprace, "analyze", wrt, "--db", db, "--quiet"],
                           capture_output=True, text=True, timeout=300)
        if a.returncode not in (0, 1):
            print("%-45s FAIL analyze (exit %d)\n%s%s" % (name, a.returncode, a.stdout, a.stderr))
            failures += 1
            continue
        exp = parse_expect(txt)
        got = found_races(db, shared_label(txt))
        diffs = []
        for engine, want in sorted(exp.items()):
            have = got.get(engine, {})
            if set(want) != set(have):
                diffs.append("%s: expected races on %s, found on %s" % (
                    engine, sorted(want) or "nothing", sorted(have) or "nothing"))
                continue
            for alloc, toks in want.items():
                missing = {t for t in toks if t in CLASSES | VERDICTS} - have.get(alloc, set())
                if missing:
                    diffs.append("%s: %s lacks %s (has %s)" % (engine, alloc, sorted(missing),
                                                               sorted(have.get(alloc, set()))))
        checked += 1
        if diffs:
            failures += 1
            print("%-45s FAIL\n    %s" % (name, "\n    ".join(diffs)))
        else:
            print("%-45s ok" % name)
    print("%d compared, %d failed" % (checked, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
