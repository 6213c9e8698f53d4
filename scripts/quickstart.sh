#!/usr/bin/env bash
# The main job: set up, build, and evaluate the bundled conv2d+relu example
# with the reference interpreter, writing its output to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh build
./build/tools/tessel check examples/ops.te:conv2d_relu
./build/tools/tessel interp examples/ops.te:conv2d_relu \
	--set N=1,C=3,H=32,W=32,F=8,R=3,S=3,stride=1,pad=1 --seed 1 --out out
