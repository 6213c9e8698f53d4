#!/usr/bin/env bash
# The side-by-side CPU benchmark of bench/RESULTS.md ("Schedules and CPU
# codegen"): build bench_cpu, then run it once per thread count (default
# "1 2"), tessel, OpenBLAS and oneDNN at the same count in one process.
# Rows: the hand-written traces of bench/traces/ (the main ones first, then
# the variants that show what lowering lacks today: partial tiles), the
# hand-partitioned kernels of bench/traces/handpart/ (what loop
# partitioning would give), tessel's NHWC conv (information), OpenBLAS
# sgemm, and oneDNN with its own layouts (reference) and plain NCHW.
# Above 1 thread it runs twice: with tessel's pool spinning its default
# 10 ms before idle threads sleep (the order of what libgomp and OpenBLAS
# spin), and spinning 100 us (SHORT_SPIN_NS, the default until 2026-11-25;
# on this VM waking a sleeping thread costs 0.2 ms to milliseconds:
# bench/RESULTS.md).
#
#   bench/run_cpu.sh [BUILDDIR] [-- BENCH_CPU_ARGS...]
#   THREADS="1 2" ROUNDS=7 bench/run_cpu.sh
#
# OpenBLAS 0.3.21 misdetects these CPUs (AMD Zen 5 under KVM) and runs about
# 5x slower, so OPENBLAS_CORETYPE is forced to SkylakeX (AVX-512 kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=build
if (($#)) && [ "$1" != "--" ]; then
	builddir=$1
	shift
fi
[ "${1:-}" = "--" ] && shift
if [ ! -f "$builddir/build.ninja" ]; then
	./scripts/setup.sh "$builddir"
fi
ninja -C "$builddir" bench/bench_cpu >/dev/null
export OPENBLAS_CORETYPE=SkylakeX
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, gcc $(gcc -dumpfullversion)"
echo "# uptime: $(uptime)"
tr=bench/traces
cases=(
	--matmul $tr/matmul_1024.trace
	--matmul $tr/matmul_1024_6x64.trace
	--matmul $tr/handpart/matmul_1024_6x64_partitioned.c
	--conv $tr/conv_resnet3x3.trace
	--conv $tr/conv_resnet3x3_f6.trace
	--conv $tr/handpart/conv_resnet3x3_f6_partitioned.c
	--conv-nhwc $tr/conv_resnet3x3_nhwc.trace
)
for t in ${THREADS:-1 2}; do
	spins=(10000000)
	((t > 1)) && spins+=("${SHORT_SPIN_NS:-100000}")
	for spin in "${spins[@]}"; do
		OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t \
			"$builddir/bench/bench_cpu" --threads "$t" --rounds "${ROUNDS:-7}" \
			--spin-ns "$spin" "${cases[@]}" "$@"
	done
done
echo "# uptime: $(uptime)"
