#!/usr/bin/env python3
"""GPU litmus runner (meson suite 'gpu').

usage: run_gpu_litmus.py [--sanitizer GPU_LITMUS_PLAIN] WARPRACE GPU_LITMUS LITMUS_DIR WORK_DIR [NAME...]
       run_gpu_litmus.py --self-test WARPRACE LITMUS_DIR WORK_DIR
       run_gpu_litmus.py --recorded WARPRACE LITMUS_DIR TRACE_DIR WORK_DIR

Without a usable CUDA GPU it prints why and exits 77 (meson: skipped).
With one, for every kernel `GPU_LITMUS --list` names (or the NAMEs given)
that has a text litmus LITMUS_DIR/NAME.txt (else tests/gpu/litmus/NAME.txt,
the text litmus of kernels only this runner checks):
  warprace record --mode api -o WORK_DIR/NAME.wrt -- GPU_LITMUS NAME
  warprace analyze WORK_DIR/NAME.wrt --db WORK_DIR/NAME.db
then reads the races table and checks, per engine, the expectation lines of
the text litmus (tests/litmus/README.md): the set of allocations with races
must equal the expected set, and each VERDICT / CLASS token must be carried
by at least one race on that allocation.  Shared-memory races (no catalog
allocation; space shared, or dsmem: another block's shared memory) count for
the litmus's only shared allocation.

--sanitizer: the binary-instrumentation path (recorder/sanitizer).  The same
kernels built WITHOUT the device API (GPU_LITMUS_PLAIN, -DWARPRACE_RECORD=0)
are recorded with `warprace record --mode sanitizer`, analyzed, checked
against the expectations, and compared engine by engine with the
source-level recording of the same kernel: every difference is printed.
Kernels in SANITIZER_UNRECORDED (what the sanitizer path cannot record as
the device API does, with the reason) are checked
on the source-level path only; with WR_GPU_SANITIZER_ALL=1 they are recorded
on the sanitizer path too and what it finds is printed, marked "info", and
counted apart, never as a failure (what a GPU session looks at).

Environment: WR_GPU_JOBS (kernels recorded at once, default 1),
WR_GPU_TIMEOUT (seconds for one record or analyze, default 300),
WARPRACE_SANITIZER_LIB (the sanitizer library; default
/usr/local/cuda/compute-sanitizer/libsanitizer-public.so).  Where the
sanitizer library is missing, --sanitizer says so and checks the
source-level path alone.

--recorded (no GPU): the recordings a GPU run left (TRACE_DIR/NAME.wrt from
the source-level path, NAME-san.wrt from the sanitizer path, as this runner
writes them; traces/gpu ships some) are analyzed and checked as above, each
path against the expectations and the two paths against each other.

--self-test (no GPU): the text litmus assembled with `warprace asm` stands
in for both recordings, so that the expectation parser, the database query
and the comparison are checked where there is no GPU; a comparison of a
racy litmus with its fixed variant must report the difference.

Exit 0 all agree, 1 some disagree (each difference printed), 2 setup error.
"""
import concurrent.futures
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys

# Kernels whose verdict rests on a synchronization the sanitizer path does
# not record: only the source-level path is checked for them.
SANITIZER_UNRECORDED = {
    # bar.arrive, grid.sync() and mbarriers are recovered from the code
    # (recorder/sanitizer/san_events.h); what the code cannot tell:
    "mbarrier_relaxed_arrive_race": "ptxas (CUDA 13.0, sm_90) compiles mbarrier.arrive.relaxed.cta "
                                    "and mbarrier.arrive (.release.cta) to the same "
                                    "SYNCS.ARRIVE.TRANS64.A1T0 with no fence: the sanitizer path "
                                    "records every arrival as releasing (SANITIZER.md)",
}

# Text litmus of the kernels that only this runner checks (tests/litmus
# has none of that name): looked up after LITMUS_DIR.
GPU_LITMUS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "litmus")

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
    """The label a recording's shared-memory races count for: the litmus's
    `# gpu-shared: LABEL` line (where it has several shared allocations, an
    mbarrier's beside the data), else its only shared allocation."""
    labels = []
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*gpu-shared:\s*(\S+)", line.strip())
            if m:
                return m.group(1)
            t = line.split()
            if t[:1] == ["def"]:   # the text form's definition: "def alloc NAME shared N"
                t = t[1:]
            if len(t) >= 3 and t[0] == "alloc" and t[2] == "shared":
                labels.append(t[1])
    return labels[0] if len(labels) == 1 else None


def litmus_path(litmus_dir, name):
    """The text litmus of NAME: LITMUS_DIR's, else this runner's own; None without one."""
    for d in (litmus_dir, GPU_LITMUS_DIR):
        p = os.path.join(d, name + ".txt")
        if os.path.exists(p):
            return p
    return None


def found_races(db, shared):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT engine, ex_alloc, ex_space, scope_verdict, race_class "
                       "FROM races WHERE run_id = (SELECT max(id) FROM runs)").fetchall()
    con.close()
    got = {}
    for engine, alloc, space, verdict, cls in rows:
        if not alloc and space in ("shared", "dsmem") and shared:
            alloc = shared
        got.setdefault(engine, {}).setdefault(alloc or "?", set()).update(
            t for t in (verdict, cls) if t)
    return got


TIMEOUT = int(os.environ.get("WR_GPU_TIMEOUT", "300"))


def run(cmd, timeout=None):
    """The finished process; on timeout its whole process group is killed
    (warprace record's child would otherwise go on holding the GPU) and
    the return code is 124."""
    timeout = timeout or TIMEOUT
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return subprocess.CompletedProcess(cmd, 124, out or "",
                                           (err or "") + "timed out after %d s" % timeout)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def fresh(*paths):
    for f in paths:
        if os.path.exists(f):
            os.unlink(f)


def analyze(warprace, wrt, db):
    """None on success, else the failure text."""
    fresh(db)
    a = run([warprace, "analyze", wrt, "--db", db, "--quiet"])
    if a.returncode not in (0, 1):
        return "analyze (exit %d)\n%s%s" % (a.returncode, a.stdout, a.stderr)
    return None


def check_expectations(exp, got):
    """Differences between a litmus's expectation lines and what was found."""
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
    return diffs


def compare_paths(api, san):
    """Engine-by-engine differences between the source-level (api) and the
    binary-instrumentation (san) findings of one kernel."""
    diffs = []
    for engine in sorted(set(api) | set(san)):
        a, s = api.get(engine, {}), san.get(engine, {})
        for alloc in sorted(set(a) | set(s)):
            if alloc not in s:
                diffs.append("%s: source-level path finds races on %s %s, sanitizer path none" % (
                    engine, alloc, sorted(a[alloc])))
            elif alloc not in a:
                diffs.append("%s: sanitizer path finds races on %s %s, source-level path none" % (
                    engine, alloc, sorted(s[alloc])))
            elif a[alloc] != s[alloc]:
                diffs.append("%s: %s classified %s by the source-level path, %s by the sanitizer path" % (
                    engine, alloc, sorted(a[alloc]), sorted(s[alloc])))
    return diffs


def sanitizer_diffs(exp, api, san):
    """What the sanitizer path's findings (san) get wrong: against the
    expectations, and against the source-level findings (api, or None
    where there is no source-level recording)."""
    return (["sanitizer: " + d for d in check_expectations(exp, san)] +
            ["paths differ: " + d for d in (compare_paths(api, san) if api is not None else [])])


def race_identities(db):
    """(engine, identity) of every race of the database's last run."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT engine, identity FROM races "
                       "WHERE run_id = (SELECT max(id) FROM runs)").fetchall()
    con.close()
    return set(rows)


def identity_diffs(api_db, san_db):
    """Races the two paths name differently.  An identity names kernels,
    sites (file base name and line), access kinds and class, so that
    `raceq diff` of the two recordings of one kernel finds every race
    persisting: a site the sanitizer path takes from a toolkit header's
    line, where the source-level path names the program's, breaks it."""
    a, s = race_identities(api_db), race_identities(san_db)
    out = []
    for what, only in (("source-level only", sorted(a - s)), ("sanitizer only", sorted(s - a))):
        out += ["paths name races differently: %s: %s %s" % (what, e, i) for e, i in only[:3]]
    return out


def summary_lines(text):
    """What the recorder printed about its own run (events, lost, unknown fences...)."""
    return [l for l in text.splitlines() if l.strip()][-8:]


def record(warprace, mode, binary, name, wrt, db):
    """(database, None, recorder output) or (None, failure text, recorder output)."""
    fresh(wrt)
    r = run([warprace, "record", "--mode", mode, "-o", wrt, "--", binary, name])
    # what the recorder said about its run, kept beside the trace
    with open(os.path.splitext(wrt)[0] + ".record.log", "w") as log:
        log.write("$ %s\nexit %d\n%s%s" % (" ".join(r.args), r.returncode, r.stdout, r.stderr))
    if r.returncode != 0:
        return None, "record --mode %s (exit %d)\n%s%s" % (mode, r.returncode, r.stdout, r.stderr), ""
    fail = analyze(warprace, wrt, db)
    if fail:
        return None, fail, r.stdout + r.stderr
    return db, None, r.stdout + r.stderr


def sanitizer_library():
    return os.environ.get("WARPRACE_SANITIZER_LIB",
                          "/usr/local/cuda/compute-sanitizer/libsanitizer-public.so")


def check_kernel(warprace, gpu_litmus, plain, litmus_dir, work, name, all_sanitizer):
    """(printed text, failed, compared on both paths, paths differ, info only)"""
    txt = litmus_path(litmus_dir, name)
    if not txt:
        return "%-45s no text litmus with this name: not compared" % name, False, False, False, False
    exp, shared = parse_expect(txt), shared_label(txt)
    base = os.path.join(work, name)
    db, fail, _ = record(warprace, "api", gpu_litmus, name, base + ".wrt", base + ".db")
    if fail:
        return "%-45s FAIL %s" % (name, fail), True, False, False, False
    got = found_races(db, shared)
    diffs = ["source-level: " + d for d in check_expectations(exp, got)]
    san_log, info, notes, differ = "", False, [], False
    if plain and name in SANITIZER_UNRECORDED and not all_sanitizer:
        notes.append("sanitizer path not compared: %s" % SANITIZER_UNRECORDED[name])
    elif plain:
        info = name in SANITIZER_UNRECORDED
        sdb, sfail, san_log = record(warprace, "sanitizer", plain, name, base + "-san.wrt",
                                     base + "-san.db")
        if sfail:
            if not info:
                return "%-45s FAIL sanitizer path: %s" % (name, sfail), True, False, False, False
            notes.append("info (%s): sanitizer path failed: %s" % (SANITIZER_UNRECORDED[name], sfail))
        else:
            sdiffs = sanitizer_diffs(exp, got, found_races(sdb, shared)) + identity_diffs(db, sdb)
            if info:
                notes += ["info (%s): %s" % (SANITIZER_UNRECORDED[name], d) for d in sdiffs]
                differ = bool(sdiffs)
                if not differ:
                    notes.append("info: the sanitizer path agrees")
            else:
                diffs += sdiffs
                differ = any(d.startswith("paths ") for d in sdiffs)
    lines = []
    if diffs:
        lines.append("%-45s FAIL\n    %s" % (name, "\n    ".join(diffs)))
    else:
        lines.append("%-45s ok" % name)
    lines += ["    " + n for n in notes]
    if san_log and (diffs or (info and differ)):
        lines.append("    the sanitizer recording said:\n      " +
                     "\n      ".join(summary_lines(san_log)))
    return "\n".join(lines), bool(diffs), True, differ, info


def gpu_main(warprace, gpu_litmus, plain, litmus_dir, work, names):
    ok, why = gpu_available(plain or gpu_litmus)
    if not ok:
        print("SKIP: no usable CUDA GPU on this machine (%s); the GPU litmus tests need "
              "one" % why)
        return 77
    if plain and not os.path.exists(sanitizer_library()):
        print("no compute-sanitizer library at %s: the sanitizer path cannot run; "
              "the source-level path alone is checked" % sanitizer_library())
        plain = None
    print("GPU:", why)
    os.makedirs(work, exist_ok=True)
    names = names or run([gpu_litmus, "--list"]).stdout.split()
    jobs = max(1, int(os.environ.get("WR_GPU_JOBS", "1")))
    all_sanitizer = os.environ.get("WR_GPU_SANITIZER_ALL") == "1"
    failures = checked = differing = informational = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(check_kernel, warprace, gpu_litmus, plain, litmus_dir, work,
                               name, all_sanitizer) for name in names]
        for f in futures:   # in list order, whatever order they finish in
            text, failed, compared, differ, info = f.result()
            print(text, flush=True)
            failures += failed
            checked += compared
            differing += differ and not info
            informational += info
    if plain:
        print("%d compared, %d failed, %d where the two recording paths differ%s" % (
            checked, failures, differing,
            ", %d recorded on the sanitizer path for information" % informational
            if all_sanitizer else ""))
    else:
        print("%d compared, %d failed" % (checked, failures))
    return 1 if failures else 0


def check_recorded(warprace, litmus_dir, traces, work):
    """The checks of gpu_main on recordings made earlier."""
    os.makedirs(work, exist_ok=True)
    names = sorted(f[:-4] for f in os.listdir(traces)
                   if f.endswith(".wrt") and not f.endswith("-san.wrt"))
    if not names:
        print("no recordings in %s" % traces)
        return 2
    failures = checked = 0
    for name in names:
        # traces/gpu/NAME.wrt of a program with a text form of its own in
        # traces/ (the demo): that text's expectations
        beside = os.path.join(os.path.dirname(os.path.abspath(traces)), name + ".txt")
        txt = litmus_path(litmus_dir, name) or (beside if os.path.exists(beside) else None)
        if not txt:
            print("%-45s FAIL no text litmus of this name" % name)
            failures += 1
            continue
        exp, shared = parse_expect(txt), shared_label(txt)
        found = {}
        diffs = []
        for path, suffix in (("source-level", ""), ("sanitizer", "-san")):
            wrt = os.path.join(traces, name + suffix + ".wrt")
            if not os.path.exists(wrt):
                continue
            db = os.path.join(work, name + suffix + ".db")
            fail = analyze(warprace, wrt, db)
            if fail:
                diffs.append("%s: %s" % (path, fail))
                continue
            found[path] = found_races(db, shared)
            if path == "source-level":
                diffs += ["source-level: " + d for d in check_expectations(exp, found[path])]
            elif name not in SANITIZER_UNRECORDED:
                diffs += sanitizer_diffs(exp, found.get("source-level"), found[path])
                if "source-level" in found:
                    diffs += identity_diffs(os.path.join(work, name + ".db"), db)
        checked += 1
        if diffs:
            failures += 1
            print("%-45s FAIL\n    %s" % (name, "\n    ".join(diffs)))
        else:
            print("%-45s ok (%s)" % (name, ", ".join(sorted(found))))
    print("%d recordings checked, %d failed" % (checked, failures))
    return 1 if failures else 0


def self_test(warprace, litmus_dir, work):
    """Everything but the GPU: asm stands in for the recorder."""
    os.makedirs(work, exist_ok=True)
    dbs = {}
    for name in ("syncwarp_partial_mask_race", "syncwarp_full_mask_norace",
                 "scor_race_interblock_blkatom", "scor_norace_interblock_atom",
                 "dsmem_remote_race", "dsmem_handoff_norace"):
        txt = litmus_path(litmus_dir, name)
        wrt, db = os.path.join(work, name + ".wrt"), os.path.join(work, name + ".db")
        fresh(wrt)
        a = run([warprace, "asm", txt, "-o", wrt])
        fail = "asm: " + a.stderr if a.returncode else analyze(warprace, wrt, db)
        if fail:
            print("%s: %s" % (name, fail))
            return 2
        got = found_races(db, shared_label(txt))
        diffs = check_expectations(parse_expect(txt), got)
        if diffs:
            print("%s: the expectations do not hold on the text litmus itself:\n    %s" % (
                name, "\n    ".join(diffs)))
            return 1
        if compare_paths(got, got):
            print("%s: a run compared with itself differs" % name)
            return 1
        dbs[name] = (got, parse_expect(txt))
    # a recording names no catalog allocation for shared memory: its races
    # (own block's or another's through DSMEM) count for the shared label
    db = os.path.join(work, "shared-label.db")
    fresh(db)
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE runs (id INTEGER); INSERT INTO runs VALUES (1);"
                      "CREATE TABLE races (run_id, engine, ex_alloc, ex_space, scope_verdict,"
                      " race_class);"
                      "INSERT INTO races VALUES (1, 'vc', NULL, 'dsmem', NULL, 'inter-block'),"
                      " (1, 'fsm', NULL, 'shared', NULL, 'inter-block'),"
                      " (1, 'lockset', NULL, 'global', NULL, NULL);")
    con.commit()
    con.close()
    got = found_races(db, "sh")
    if got != {"vc": {"sh": {"inter-block"}}, "fsm": {"sh": {"inter-block"}},
               "lockset": {"?": set()}}:
        print("shared and dsmem races without an allocation: %s" % got)
        return 1
    bad = 0
    for racy, fixed in (("syncwarp_partial_mask_race", "syncwarp_full_mask_norace"),
                        ("scor_race_interblock_blkatom", "scor_norace_interblock_atom"),
                        ("dsmem_remote_race", "dsmem_handoff_norace")):
        between = compare_paths(dbs[racy][0], dbs[fixed][0])
        expect_fail = check_expectations(dbs[racy][1], dbs[fixed][0])
        print("%s vs %s: %d differences reported (%s)" % (racy, fixed, len(between),
                                                         "; ".join(between[:2])))
        if not between or not expect_fail:
            bad += 1
    # --recorded: a recording that meets its litmus passes, one that does
    # not (a racy trace under a race-free kernel's name) fails
    rec = os.path.join(work, "recorded")
    os.makedirs(rec, exist_ok=True)
    for name, source in (("syncwarp_partial_mask_race", "syncwarp_partial_mask_race"),
                         ("syncwarp_full_mask_norace", "syncwarp_partial_mask_race")):
        wrt = os.path.join(rec, name + ".wrt")
        fresh(wrt)
        a = run([warprace, "asm", litmus_path(litmus_dir, source), "-o", wrt])
        if a.returncode:
            print("asm: " + a.stderr)
            return 2
    good = os.path.join(work, "recorded-good")
    os.makedirs(good, exist_ok=True)
    shutil.copy(os.path.join(rec, "syncwarp_partial_mask_race.wrt"), good)
    if check_recorded(warprace, litmus_dir, good, os.path.join(work, "rec-good-db")) != 0:
        print("--recorded: a recording that meets its litmus failed")
        bad += 1
    if check_recorded(warprace, litmus_dir, rec, os.path.join(work, "rec-db")) != 1:
        print("--recorded: a racy recording under a race-free kernel's name passed")
        bad += 1
    print("self-test %s" % ("ok" if not bad else "FAILED"))
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args[:1] == ["--recorded"]:
        if len(args) != 5:
            print(__doc__, file=sys.stderr)
            return 2
        return check_recorded(*args[1:])
    if args[:1] == ["--self-test"]:
        if len(args) != 4:
            print(__doc__, file=sys.stderr)
            return 2
        return self_test(*args[1:])
    plain = None
    if args[:1] == ["--sanitizer"]:
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            return 2
        plain, args = args[1], args[2:]
    if len(args) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    warprace, gpu_litmus, litmus_dir, work = args[:4]
    return gpu_main(warprace, gpu_litmus, plain, litmus_dir, work, args[4:])


if __name__ == "__main__":
    sys.exit(main())
