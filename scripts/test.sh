#!/usr/bin/env bash
# Set up, build, and run the whole test suite twice: in the normal gcc
# build and in a clang AddressSanitizer/UBSan build, both with warnings as
# errors.  Each Criterion binary runs
# directly so that its own summary line reaches the log.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh build -Dwerror=true || exit 1
CC=clang ./scripts/setup.sh build-asan -Dwerror=true \
	-Db_sanitize=address,undefined -Db_lundef=false || exit 1

failed=0
run_suite() {
	local builddir=$1
	echo "== test suite in $builddir"
	for t in test_te test_interp test_npy test_ops test_loop test_schedule test_runtime test_codegen test_trace test_db test_model test_sketch test_partition test_measure test_search test_opencl test_cuda test_sketch_gpu; do
		if [ ! -x "$builddir/tests/$t" ]; then
			echo "missing test binary $builddir/tests/$t"
			failed=1
			continue
		fi
		# test_search tunes: two of its runs at once slow each other's
		# kernels, which the tuner then measures again (1.7x the time)
		local jobs=2
		[ "$t" = test_search ] && jobs=1
		"$builddir/tests/$t" --jobs "$jobs" || failed=1
	done
	TESSEL="$builddir/tools/tessel" ./tests/cli/run.sh || failed=1
}

run_suite build
TESSEL_SANITIZED=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	run_suite build-asan
exit $failed
