#!/usr/bin/env bash
# The tuner's benchmark of bench/RESULTS.md ("CPU autotuner"): tune each
# workload with `tessel tune` into one record store, then time the best
# kernel side by side with OpenBLAS (matmul) or oneDNN (conv2d) with
# `tessel bench`, or, for the memory-bound ops, against the bandwidth of a
# STREAM-like copy (bench/stream_copy.c).
#
#   bench/tune_cpu.sh [BUILDDIR]                 every group
#   BENCH_GROUPS="matmul conv" bench/tune_cpu.sh some of them
#   TRIALS=1000 CONV_TRIALS=300 DB=out/bench.db bench/tune_cpu.sh
#   CONV_LAYOUT=NHWC BENCH_GROUPS=conv bench/tune_cpu.sh   channels last
#
# Groups: matmul (1024^3, 512^3), irregular (1000^3, 128x3072x768,
# 1x4096x4096), linear (the layout of linear layers, weights stored
# [out, in]: dense 128x768->3072 and matmul 128x3072x768 with
# transpose_b), conv (ResNet-50 layers, batch 1, in CONV_LAYOUT: NCHW,
# the default, or NHWC with HWIO weights; oneDNN runs on the layouts it
# picks itself either way, reorders untimed), memory (softmax and
# layer_norm over [4096, 1024]); not run unless named: layout (a
# 4096x4096 transposition, an NCHW to NHWC copy of [16, 256, 56, 56], a
# sum over the rows of [4096, 4096]) and lowp (against oneDNN: matmul
# 512^3 in u8 with i8 weights, i8 and bf16, summed in i32 or f32; the
# ResNet-50 layer C=64 56x56 3x3 and dense 128x768->3072 in u8 with i8
# weights; on CPUs without AVX512 VNNI or BF16 they run without the dot
# instructions).  Trials per workload: TRIALS (default
# 1000, the issue's budget) and CONV_TRIALS (default TRIALS).  A re-run on
# the same DB resumes: records already there count as known and are not
# measured again, so the budget is the trials of this run.
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${1:-build}
[ -f "$builddir/build.ninja" ] || ./scripts/setup.sh "$builddir"
ninja -C "$builddir" tools/tessel bench/stream_copy >/dev/null
tessel=$builddir/tools/tessel
db=${DB:-out/bench-records.db}
trials=${TRIALS:-1000}
conv_trials=${CONV_TRIALS:-$trials}
rounds=${ROUNDS:-7}
conv_layout=${CONV_LAYOUT:-NCHW}
mkdir -p "$(dirname "$db")"
if grep -qw avx512f /proc/cpuinfo; then
	export OPENBLAS_CORETYPE=SkylakeX
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, gcc $(gcc -dumpfullversion)"
echo "# uptime: $(uptime)"
echo "# records: $db, $trials trials a workload ($conv_trials for conv)"

# tune_and_compare OP SIZES TRIALS VENDOR
tune_and_compare() {
	local op=$1 sizes=$2 n=$3 vendor=$4 start
	echo "== $op $sizes"
	start=$(date +%s)
	"$tessel" tune "$op" --set "$sizes" --trials "$n" --db "$db" \
		2>&1 | grep -E '^(trials|best|stopped|interrupted)'
	echo "tuning time: $(($(date +%s) - start)) s"
	"$tessel" bench "$op" --set "$sizes" --db "$db" --compare "$vendor" --rounds "$rounds"
}

# tune_and_bandwidth OP SIZES TRIALS BYTES: bytes read once and written
# once over the tuned time, against the copy's bandwidth measured in the
# same window: ROUNDS rounds of a copy then the tuned kernel, the ratio
# of each round, and their median (the bandwidth of this machine moves
# by half from one minute to the next).
tune_and_bandwidth() {
	local op=$1 sizes=$2 n=$3 bytes=$4 json median copy ratios=""
	echo "== $op $sizes"
	"$tessel" tune "$op" --set "$sizes" --trials "$n" --db "$db" \
		2>&1 | grep -E '^(trials|best|stopped|interrupted)'
	for ((r = 0; r < rounds; r++)); do
		copy=$("$builddir/bench/stream_copy" --mib 256 | sed -n 's/.*"median_gbs": \([0-9.e+-]*\).*/\1/p')
		json=$("$tessel" run "$op" --set "$sizes" --db "$db" --json --min-time 0.5 2>/dev/null)
		median=$(sed -n 's/.*"median_s": \([0-9.e+-]*\).*/\1/p' <<<"$json")
		ratios+="$(awk -v b="$bytes" -v t="$median" -v c="$copy" 'BEGIN {
			gbs = b / t * 1e-9
			printf "%.4f %.2f %.4f", t * 1e3, c, gbs / c
		}') "
	done
	awk -v list="$ratios" 'BEGIN {
		n = split(list, f, " ") / 3
		for (i = 0; i < n; i++) { t[i] = f[3 * i + 1]; c[i] = f[3 * i + 2]; q[i] = f[3 * i + 3] }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (q[j] < q[i]) { x = q[i]; q[i] = q[j]; q[j] = x }
		printf "tuned: %d rounds (kernel median ms, copy GB/s):", n
		for (i = 0; i < n; i++) printf " %s/%s", t[i], c[i]
		printf "\ntuned: of the copy bandwidth in the same round: median %.2f (%.2f to %.2f)\n", q[int(n / 2)], q[0], q[n - 1]
	}'
}

for group in ${BENCH_GROUPS:-matmul irregular linear conv memory}; do
	case $group in
	matmul)
		tune_and_compare matmul M=1024,N=1024,K=1024 "$trials" openblas
		tune_and_compare matmul M=512,N=512,K=512 "$trials" openblas
		;;
	irregular)
		tune_and_compare matmul M=1000,N=1000,K=1000 "$trials" openblas
		tune_and_compare matmul M=128,N=3072,K=768 "$trials" openblas
		tune_and_compare matmul M=1,N=4096,K=4096 "$trials" openblas
		;;
	linear)
		tune_and_compare dense batch=128,in_features=768,out_features=3072 "$trials" openblas
		tune_and_compare matmul M=128,N=3072,K=768,transpose_b=1 "$trials" openblas
		;;
	conv)
		for layer in $(grep -v '^#' bench/resnet50_conv_layers); do
			tune_and_compare conv2d "N=1,$layer,layout=$conv_layout" "$conv_trials" onednn
		done
		;;
	memory)
		bytes=$((2 * 4096 * 1024 * 4))
		tune_and_bandwidth softmax "shape=[4096, 1024]" "$trials" "$bytes"
		tune_and_bandwidth layer_norm "shape=[4096, 1024]" "$trials" "$bytes"
		;;
	lowp)
		q=dtype=u8,weight_dtype=i8,out_dtype=i32
		tune_and_compare matmul "M=512,N=512,K=512,$q" "$trials" onednn
		tune_and_compare matmul M=512,N=512,K=512,dtype=i8,out_dtype=i32 "$trials" onednn
		tune_and_compare matmul M=512,N=512,K=512,dtype=bf16,out_dtype=f32 "$trials" onednn
		tune_and_compare conv2d "N=1,C=64,H=56,W=56,F=64,R=3,S=3,padding=1,layout=$conv_layout,$q" \
			"$conv_trials" onednn
		tune_and_compare dense "batch=128,in_features=768,out_features=3072,$q" "$trials" onednn
		;;
	layout)
		tune_and_bandwidth transpose "shape=[4096, 4096],perm=[1, 0]" "$trials" \
			$((2 * 4096 * 4096 * 4))
		tune_and_bandwidth transpose "shape=[16, 256, 56, 56],perm=[0, 2, 3, 1]" "$trials" \
			$((2 * 16 * 256 * 56 * 56 * 4))
		tune_and_bandwidth reduce_sum "shape=[4096, 4096],axes=[0]" "$trials" \
			$((4096 * 4096 * 4 + 4096 * 4))
		;;
	*)
		echo "unknown group '$group' (matmul irregular linear conv memory layout lowp)" >&2
		exit 1
		;;
	esac
done
echo "# uptime: $(uptime)"
