#!/usr/bin/env bash
# Build tessel here and gather what a CUDA machine without a package
# registry needs to run its tests and GPU commands: the tessel command, the
# test binaries, and every shared library they link that such a machine
# may lack (ISL, GMP, SQLite, XGBoost, Criterion and theirs).  The C
# library, the CUDA driver and NVRTC stay the machine's own.  Then
# scripts/gpu_run.sh runs there.
#
#   scripts/gpu_bundle.sh [BUNDLE]        default BUNDLE: gpu-bundle
#   RECORDS=bench/records/h200-2026-11-27.jsonl.gz scripts/gpu_bundle.sh
#
# With the device tool: build the bundle here, then run
#   scripts/gpu_run.sh gpu-bundle   carrying gpu-bundle (about 30 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-gpu-bundle}
builddir=build-gpu-bundle
./scripts/setup.sh "$builddir" -Dbuildtype=release >/dev/null
# A record store an earlier GPU session brought back (session.db, see
# scripts/gpu_session.sh) survives a rebuild of the bundle.
kept=
if [ -f "$bundle/session.db" ]; then
	kept=$(mktemp)
	cp "$bundle/session.db" "$kept"
fi
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/tests" "$bundle/lib"
if [ -n "$kept" ]; then
	mv "$kept" "$bundle/session.db"
fi
cp "$builddir/tools/tessel" "$bundle/bin/"
for t in "$builddir"/tests/test_*; do
	[ -f "$t" ] && [ -x "$t" ] && cp "$t" "$bundle/tests/"
done

# The libraries the binaries link, less the C library's own (which must be
# the machine's) and the CUDA driver (which is the machine's by nature).
keep_lib() {
	case $(basename "$1") in
	libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|\
	ld-linux*|libcuda.so*|linux-vdso*) return 1 ;;
	esac
	return 0
}
# The C++ runtime goes to lib/fallback, used only where the machine has
# none (scripts/gpu_env.sh): a newer one there must serve the CUDA
# libraries too.
mkdir -p "$bundle/lib/fallback"
for f in "$bundle"/bin/* "$bundle"/tests/*; do
	ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
	case $(basename "$lib") in
	libstdc++.so.*|libgcc_s.so.*|libgomp.so.*) cp -L "$lib" "$bundle/lib/fallback/" ;;
	*) if keep_lib "$lib"; then cp -L "$lib" "$bundle/lib/"; fi ;;
	esac
done

# NVRTC (loaded with dlopen) is the machine's own: a CUDA machine has the
# toolkit or its wheels, and NVRTC alone is over 100 MiB, more than the
# device tool carries.  BUNDLE_NVRTC=1 brings this machine's anyway.
if [ "${BUNDLE_NVRTC:-0}" = 1 ]; then
	cuda=${CUDA_HOME:-/usr/local/cuda}
	for lib in "$cuda"/lib64/libnvrtc.so.* "$cuda"/lib64/libnvrtc-builtins.so.*; do
		case $lib in *alt*) continue ;; esac
		[ -f "$lib" ] && cp -L "$lib" "$bundle/lib/"
	done
fi

# RECORDS=FILE.jsonl[.gz] (`tessel db export`, e.g. a device session's
# store kept in bench/records/) starts the bundle's session.db, so that a
# device session resumes it (tuning measures no known program again and
# the model starts trained).
if [ -n "${RECORDS:-}" ] && [ ! -f "$bundle/session.db" ]; then
	records=$(mktemp --suffix=.jsonl)
	case $RECORDS in
	*.gz) gunzip -c "$RECORDS" >"$records" ;;
	*) cp "$RECORDS" "$records" ;;
	esac
	"$bundle/bin/tessel" db import "$records" --db "$bundle/session.db"
	rm -f "$records"
fi

cat > "$bundle/MANIFEST" <<EOF
built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n), $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')
source dir compiled into the tests: $PWD
glibc: $(ldd --version | head -1)
EOF
ls "$bundle/lib" >> "$bundle/MANIFEST"
du -sh "$bundle"
