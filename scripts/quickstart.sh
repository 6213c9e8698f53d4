#!/usr/bin/env bash
# The main job: set up and build; evaluate the bundled conv2d+relu op with
# the reference interpreter (outputs in out/); then compile it for this CPU
# under its default schedule and under the hand-written schedule
# examples/conv2d_relu.trace, each run checked against the interpreter and
# timed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh build
sizes=N=1,C=3,H=32,W=32,F=8,R=3,S=3,stride=1,pad=1
./build/tools/tessel check examples/ops.te:conv2d_relu
./build/tools/tessel interp examples/ops.te:conv2d_relu --set "$sizes" --seed 1 --out out
echo "== default schedule"
./build/tools/tessel run examples/ops.te:conv2d_relu --set "$sizes" --seed 1
echo "== examples/conv2d_relu.trace"
./build/tools/tessel run examples/ops.te:conv2d_relu --set "$sizes" --seed 1 \
	--sched examples/conv2d_relu.trace
