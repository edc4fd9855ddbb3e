#!/bin/sh
# GPU check of the binary-instrumentation path: records the GPU litmus
# kernels (tests/gpu) built WITHOUT the device API through
# libwarprace_sanitizer.so and compares the analyzer's verdicts with the
# source-level recordings.  Skips (77) where there is no GPU or no
# Compute Sanitizer.  $1: the build directory.
build=${1:?build dir}
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || {
    echo "SKIP: no GPU"; exit 77; }
[ -f /usr/local/cuda/compute-sanitizer/libsanitizer-public.so ] || {
    echo "SKIP: no compute-sanitizer in the toolkit"; exit 77; }
lib=$build/recorder/sanitizer/libwarprace_sanitizer.so
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
echo "FAIL: the comparison runner is not written yet (SANITIZER.md, 'Left to do')"
exit 1
