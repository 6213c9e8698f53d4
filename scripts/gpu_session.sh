#!/usr/bin/env bash
# One call of the device tool on a CUDA machine, from a bundle made by
# scripts/gpu_bundle.sh: the CUDA tests, then tuning and the vendor
# comparison (bench/tune_cuda.sh) within a budget of seconds, every log
# and the record store packed into $OUT (the device tool's output folder,
# at most 8 files come back).  Run from the repository root:
#
#   scripts/gpu_session.sh [BUNDLE]        default BUNDLE: gpu-bundle
#   SESSION_SECONDS=420 CONV_LAYERS=2 scripts/gpu_session.sh
#
# SESSION_SECONDS (default 480) is the whole budget: the tests get at most
# 120 s, the matmul 4096^3 then MATMUL_SHARE% (default 40) of what is
# left, HAND_TRACE (trace files, if set, separated by spaces) 30 s each
# against cuBLAS, and the conv layers
# (CONV_LAYERS of bench/resnet50_conv_layers, default 1, from the
# CONV_FIRST-th, default 1, at each
# batch of CONV_BATCHES, default "1 32") share the rest; each tuning ends
# (SIGINT, what was measured kept) with 30 s left for its comparison.
# The record store is BUNDLE/session.db when there is one (the store an
# earlier session brought back, copied there before the call: tuning
# resumes without measuring known programs again), and comes back as
# $OUT/session.db.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle=$(cd "${1:-gpu-bundle}" && pwd) || exit 2
if [ ! -x "$bundle/bin/tessel" ]; then
	echo "gpu_session: no bundle at $bundle (make one with scripts/gpu_bundle.sh)" >&2
	exit 2
fi
# shellcheck source=scripts/gpu_env.sh
. scripts/gpu_env.sh
out=${OUT:-$bundle/logs}
logs=$(mktemp -d)
mkdir -p "$out"
start=$SECONDS
budget=${SESSION_SECONDS:-480}
left() { echo $((budget - (SECONDS - start))); }

# The tests read their data from the source directory they were built in.
src=$(sed -n 's/^source dir compiled into the tests: //p' "$bundle/MANIFEST")
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
	mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
fi
{
	head -3 "$bundle/MANIFEST"
	echo "machine: $(uname -n), $(nproc) CPUs"
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 ||
		echo "no nvidia-smi"
} | tee "$logs/machine.txt"

timeout -k 10 120 "$bundle/tests/test_cuda" --jobs "$(nproc)" --verbose >"$logs/test_cuda.log" 2>&1
echo "test_cuda rc=$? $(grep -a 'Synthesis' "$logs/test_cuda.log" | tail -1)"
grep -a -E '^\[(FAIL|SKIP)\]' "$logs/test_cuda.log" | head -20

export DB=${TMPDIR:-/tmp}/tessel-cuda-session.db OUT=$logs ROUNDS=${ROUNDS:-3}
rm -f "$DB"
if [ -f "$bundle/session.db" ]; then
	cp "$bundle/session.db" "$DB"
	echo "records: resuming $bundle/session.db"
fi
export TRIALS=${TRIALS:-100000} BENCH_SECONDS=30
first=${CONV_FIRST:-1}
layers=$(grep -v '^#' bench/resnet50_conv_layers | tail -n "+$first" | head -n "${CONV_LAYERS:-1}" | wc -l)
batches=${CONV_BATCHES:-1 32}
nconv=$((layers * $(wc -w <<<"$batches")))
tune=$(( ($(left) * ${MATMUL_SHARE:-40} / 100) - 30 ))
if [ "$tune" -gt 20 ]; then
	BENCH_GROUPS=matmul TUNE_SECONDS=$tune bench/tune_cuda.sh "$bundle"
fi
# What the search space holds: traces written or edited by hand (the
# classic SGEMM blocking, tests/sched/shared_register_tile_matmul.trace;
# a best record with and without vectorized fetches,
# bench/traces/matmul_4096_h200*.trace), each against cuBLAS.
for trace in ${HAND_TRACE:-}; do
	[ "$(left)" -gt 60 ] || break
	echo "== matmul M=4096,N=4096,K=4096, the hand-written trace $trace"
	timeout -k 10 30 "$bundle/bin/tessel" bench matmul --set M=4096,N=4096,K=4096 \
		--target cuda --sched "$trace" --compare cublas --rounds 3 --settle 0 || true
done
if [ "$nconv" -gt 0 ]; then
	tune=$(( $(left) / nconv - 30 ))
	if [ "$tune" -gt 20 ]; then
		BENCH_GROUPS=conv CONV_FIRST=$first CONV_LAYERS=$layers CONV_BATCHES=$batches \
			TUNE_SECONDS=$tune \
			bench/tune_cuda.sh "$bundle"
	fi
fi

cp "$DB" "$out/session.db" 2>/dev/null
tar czf "$out/logs.tgz" -C "$logs" .
rm -rf "$logs"
echo "session: $((SECONDS - start)) s of $budget"
