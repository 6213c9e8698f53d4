#!/usr/bin/env bash
# The GPU backend's benchmark of bench/RESULTS.md: tune each workload with
# `tessel tune --target cuda` into one record store, then time the best
# kernel side by side with cuBLAS (matmul) or cuDNN (conv2d) with
# `tessel bench --target cuda` (fp32 without tensor cores on every side;
# kernel durations from CUPTI, the L2 evicted before each run).  Runs on
# the CUDA machine from the bundle scripts/gpu_bundle.sh makes (nothing
# is built there):
#
#   bench/tune_cuda.sh [BUNDLE]                  every group
#   BENCH_GROUPS="matmul" TRIALS=200 bench/tune_cuda.sh gpu-bundle
#   CONV_BATCHES="1 32" CONV_TRIALS=100 DB=/tmp/cuda.db bench/tune_cuda.sh
#
# Groups: matmul (4096^3), conv (six ResNet-50 layers, NCHW, batch sizes
# CONV_BATCHES, default "1 32").  Trials per workload: TRIALS (default
# 300) and CONV_TRIALS (default TRIALS); TUNE_SECONDS, when set, ends each
# workload's tuning after that many seconds (SIGINT: what was measured is
# kept) and BENCH_SECONDS bounds each comparison (default 120).
# CONV_LAYERS=N takes N layers only, from the CONV_FIRST-th (default 1).
# A re-run on the same DB
# resumes without measuring known programs again, so a budget can be
# spent in several calls of the device tool (10 minutes each).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=$(cd "${1:-gpu-bundle}" && pwd)
tessel=$bundle/bin/tessel
if [ ! -x "$tessel" ]; then
	echo "tune_cuda: no bundle at $bundle (make one with scripts/gpu_bundle.sh)" >&2
	exit 2
fi
# shellcheck source=scripts/gpu_env.sh
. scripts/gpu_env.sh
db=${DB:-${TMPDIR:-/tmp}/tessel-cuda-bench.db}
trials=${TRIALS:-300}
conv_trials=${CONV_TRIALS:-$trials}
rounds=${ROUNDS:-5}
log=${OUT:-${TMPDIR:-/tmp}}/tune_bench.log   # the tuners' whole output

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1) || true
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), ${gpu:-no nvidia-smi}"
echo "# records: $db, $trials trials a workload ($conv_trials for conv)"

# tune_and_compare OP SIZES TRIALS VENDOR
tune_and_compare() {
	local op=$1 sizes=$2 n=$3 vendor=$4 start
	echo "== $op $sizes"
	start=$(date +%s)
	timeout -k 10 -s INT "${TUNE_SECONDS:-86400}" "$tessel" tune "$op" --set "$sizes" \
		--target cuda --trials "$n" --db "$db" --verbose 2>&1 | tee -a "$log" |
		grep -E '^(trials|best|stopped|interrupted|tessel: error|tune: round)' || true
	echo "tuning time: $(($(date +%s) - start)) s"
	timeout -k 10 "${BENCH_SECONDS:-120}" "$tessel" bench "$op" --set "$sizes" \
		--target cuda --db "$db" --compare "$vendor" --rounds "$rounds" --settle 0 || true
}

for group in ${BENCH_GROUPS:-matmul conv}; do
	case $group in
	matmul)
		tune_and_compare matmul M=4096,N=4096,K=4096 "$trials" cublas
		;;
	conv)
		for n in ${CONV_BATCHES:-1 32}; do
			for layer in $(grep -v '^#' bench/resnet50_conv_layers |
				tail -n "+${CONV_FIRST:-1}" | head -n "${CONV_LAYERS:-100}"); do
				tune_and_compare conv2d "N=$n,$layer" "$conv_trials" cudnn
			done
		done
		;;
	*)
		echo "unknown group '$group' (matmul conv)" >&2
		exit 1
		;;
	esac
done
