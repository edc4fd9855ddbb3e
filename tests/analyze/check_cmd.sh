#!/bin/sh
# `warprace check` end to end without a GPU: a fake injection library and a
# program that writes a real trace (warprace asm of a text trace) and the
# recorder's summary, as the injected recorder would.
#   check_cmd.sh WARPRACE RACEQ TEXT_TRACE_WITH_RACES
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
W=$(abs "$1") RQ=$(abs "$2") TXT=$(abs "$3")
dir=$(mktemp -d) || exit 2
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir "$dir/tmp" "$dir/cwd"
: >"$dir/fake.so"
cat >"$dir/prog.sh" <<'PROG'
#!/bin/sh
"$1" asm "$2" -o "$WARPRACE_OUT" || exit 1
printf 'events=40\ndevice_records=30\nlaunches=2\nlost_records=0\nok=1\n' >"$WARPRACE_STATS"
exit "${3:-0}"
PROG
chmod +x "$dir/prog.sh"
export WARPRACE_INJECT="$dir/fake.so" TMPDIR="$dir/tmp"
cd "$dir/cwd" || exit 2

# races: exit 1, the report, nothing left behind (no trace, no database)
out=$("$W" check --engines vc,fsm -- "$dir/prog.sh" "$W" "$TXT" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "exit $rc, expected 1: $out"
echo "$out" | grep -q '^WARNING: data race (vc)' || fail "no vc race: $out"
echo "$out" | grep -q '^SUMMARY: fsm' || fail "fsm did not run: $out"
echo "$out" | grep -q '^SUMMARY: scoped' && fail "--engines not passed on: $out"
echo "$out" | grep -q '^warprace record: wrote' || fail "no recorder summary: $out"
[ -z "$(ls -A "$dir/tmp" "$dir/cwd" | grep -v ':$' | grep .)" ] ||
    fail "files left behind: $(ls -A "$dir/tmp" "$dir/cwd")"

# --exit-code goes to analyze
"$W" check --exit-code 0 --quiet -- "$dir/prog.sh" "$W" "$TXT" >/dev/null 2>&1 ||
    fail "--exit-code 0: exit $?"

# --keep: the trace stays, the database beside it; --db elsewhere
"$W" check --keep "$dir/kept.wrt" -- "$dir/prog.sh" "$W" "$TXT" >/dev/null 2>&1
[ $? -eq 1 ] || fail "--keep: exit not 1"
"$W" verify "$dir/kept.wrt" >/dev/null 2>&1 || fail "--keep: no sound trace kept"
[ -f "$dir/warprace.db" ] || fail "--keep: no database beside the trace"
"$W" check --db "$dir/other.db" --name nightly -- "$dir/prog.sh" "$W" "$TXT" >/dev/null 2>&1
[ -f "$dir/other.db" ] || fail "--db: not written"
# the run of a temporary trace is named after the program
"$W" check --db "$dir/other.db" -- "$dir/prog.sh" "$W" "$TXT" >/dev/null 2>&1
runs=$("$RQ" "$dir/other.db" runs -f csv 2>&1)
echo "$runs" | grep -q ',nightly,' || fail "--name not passed on: $runs"
echo "$runs" | grep -q ',prog.sh,' || fail "run not named after the program: $runs"

# the program fails after writing: status 2, what was recorded is analyzed
out=$("$W" check -- "$dir/prog.sh" "$W" "$TXT" 3 2>&1); rc=$?
[ $rc -eq 2 ] || fail "failing program: exit $rc, expected 2"
echo "$out" | grep -q 'exited with status 3' || fail "failing program not said: $out"
echo "$out" | grep -q '^WARNING: data race' || fail "failing program: not analyzed: $out"

# nothing to run, nothing recorded, bad usage: status 2 and why
out=$("$W" check -- "$dir/no-such-program" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "missing program: exit $rc"
echo "$out" | grep -q 'nothing was recorded' || fail "missing program: $out"
out=$("$W" check --bogus -- true 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "unknown option '--bogus'" || fail "bad option: $rc $out"
out=$("$W" check --engines 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q -- '--engines needs a value' || fail "missing value: $rc $out"
out=$("$W" check --quiet 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q 'no program to run' || fail "no program: $rc $out"
[ -z "$(ls -A "$dir/tmp")" ] || fail "temporary files left: $(ls -A "$dir/tmp")"
echo "ok"
