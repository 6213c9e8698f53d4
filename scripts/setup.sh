#!/usr/bin/env bash
# Install what tessel needs on Debian 12 (only what is missing), then
# configure and build into build/ (or $1).  Used by both quick-start
# commands and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
	build-essential binutils clang meson ninja-build pkg-config
	libisl-dev libsqlite3-dev libxgboost-dev libcriterion-dev
	libopenblas-dev libdnnl-dev
	ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd
)

missing=()
for p in "${packages[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

builddir="${1:-build}"
shift || true
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" -Dc_std=gnu17 "$@"
elif (($#)); then
	meson configure "$builddir" "$@" >/dev/null
fi
ninja -C "$builddir"
