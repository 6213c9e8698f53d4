#!/usr/bin/env bash
# Run tessel's tests and GPU checks on a CUDA machine from a bundle made
# by scripts/gpu_bundle.sh on the build machine (nothing is installed or
# built here).  Run from the repository root:
#
#   scripts/gpu_run.sh [BUNDLE]           default BUNDLE: gpu-bundle
#   GPU_SUITES="test_cuda test_opencl" scripts/gpu_run.sh   some suites
#   GPU_SUITES=all scripts/gpu_run.sh     every suite, the CPU's too
#
# The default suites are those with GPU tests (test_cuda, test_sketch_gpu):
# the others are CI's and need no GPU.  Every step is time-boxed (a suite
# SUITE_TIMEOUT seconds, default 180; a command 60), so that one hang
# cannot spend a device machine's lease.
#
# Logs go to $OUT (the device tool's output folder) when it is set, else to
# BUNDLE/logs; the last lines printed are a table of the suites.  Exit 1
# when a suite fails.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=$(cd "${1:-gpu-bundle}" && pwd)
logs=${OUT:-$bundle/logs}
mkdir -p "$logs"
if [ ! -x "$bundle/bin/tessel" ]; then
	echo "gpu_run: no bundle at $bundle (make one with scripts/gpu_bundle.sh)" >&2
	exit 2
fi

# shellcheck source=scripts/gpu_env.sh
. scripts/gpu_env.sh

# The tests read their data from the source directory they were built in.
src=$(sed -n 's/^source dir compiled into the tests: //p' "$bundle/MANIFEST")
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
	mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
fi

{
	cat "$bundle/MANIFEST" | head -3
	echo "machine: $(uname -n), $(nproc) CPUs"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "no nvidia-smi"
} | tee "$logs/machine.txt"

"$bundle/bin/tessel" bench --vendors 2>&1 | tee -a "$logs/machine.txt"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$logs/machine.txt"

suites=${GPU_SUITES:-test_cuda test_sketch_gpu}
failed=0
summary=()
for t in "$bundle"/tests/test_*; do
	name=$(basename "$t")
	if [ "$suites" != all ] && [[ " $suites " != *" $name "* ]]; then
		continue
	fi
	start=$SECONDS
	timeout -k 10 "${SUITE_TIMEOUT:-180}" "$t" --jobs "$(nproc)" --verbose \
		>"$logs/$name.log" 2>&1
	rc=$?
	line=$(grep -a 'Synthesis' "$logs/$name.log" | tail -1)
	skips=$(grep -ac 'SKIP' "$logs/$name.log")
	summary+=("$(printf '%-16s rc=%-3s %s (%s skipped, %d s)' "$name" "$rc" \
		"${line#*Synthesis: }" "$skips" $((SECONDS - start)))")
	[ "$rc" -eq 0 ] || failed=1
done

# The GPU path end to end, checked against the interpreter: the default
# GPU schedule of some ops through NVRTC and the driver.
tessel=$bundle/bin/tessel
for spec in "matmul --set M=512,N=512,K=512" "conv2d --set N=1,C=64,H=56,W=56,F=64,R=3,S=3,padding=1" \
	"softmax --set shape=[4096,1024]" "layer_norm --set shape=[4096,1024]"; do
	# shellcheck disable=SC2086
	if timeout -k 10 60 "$tessel" run $spec --target cuda --min-time 0.5 \
		>>"$logs/run_cuda.log" 2>&1; then
		summary+=("$(printf '%-16s ok   %s' "run --target cuda" "$spec")")
	else
		summary+=("$(printf '%-16s FAIL %s (see run_cuda.log)' "run --target cuda" "$spec")")
		failed=1
	fi
done

# The CUDA runner: a short tuning run, then the best record run and
# checked again.
tdb=${TMPDIR:-/tmp}/tessel-cuda-tune.db
rm -f "$tdb"
start=$SECONDS
if timeout -k 10 -s INT 120 "$tessel" tune matmul --set M=512,N=512,K=512 --target cuda \
	--trials 48 --db "$tdb" >>"$logs/tune_cuda.log" 2>&1 &&
	timeout -k 10 60 "$tessel" run matmul --set M=512,N=512,K=512 --target cuda \
	--db "$tdb" >>"$logs/tune_cuda.log" 2>&1; then
	summary+=("$(printf '%-16s ok   %s' "tune --target cuda" \
		"matmul 512^3, 48 trials in $((SECONDS - start)) s")")
else
	summary+=("$(printf '%-16s FAIL %s (see tune_cuda.log)' "tune --target cuda" "matmul 512^3")")
	failed=1
fi

# The vendor comparison: the tuned matmul against cuBLAS, a default-
# schedule conv2d against cuDNN (outputs checked against each other).
for step in "matmul --set M=512,N=512,K=512 --db $tdb --compare cublas" \
	"conv2d --set N=1,C=64,H=56,W=56,F=64,R=3,S=3,padding=1 --compare cudnn"; do
	# shellcheck disable=SC2086
	if timeout -k 10 60 "$tessel" bench $step --target cuda --rounds 3 --min-time 0.1 \
		--settle 0 >>"$logs/bench_cuda.log" 2>&1; then
		summary+=("$(printf '%-16s ok   %s' "bench --target cuda" "${step%% --*}")")
	else
		summary+=("$(printf '%-16s FAIL %s (see bench_cuda.log)' "bench --target cuda" "${step%% --*}")")
		failed=1
	fi
done

echo
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
exit $failed
