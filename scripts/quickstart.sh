#!/usr/bin/env bash
# The main job: set up and build; evaluate the bundled conv2d+relu op with
# the reference interpreter (outputs in out/); then tune a demo workload,
# matmul 512x512x512 f32, on this CPU (about two minutes; every
# measurement in out/records.db), run the best kernel found checked
# against the interpreter, and time it side by side with OpenBLAS.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh build
tessel=./build/tools/tessel
sizes=N=1,C=3,H=32,W=32,F=8,R=3,S=3,stride=1,pad=1
$tessel check examples/ops.te:conv2d_relu
$tessel interp examples/ops.te:conv2d_relu --set "$sizes" --seed 1 --out out

demo=M=512,N=512,K=512
db=out/records.db
trials=${TRIALS:-160}
echo "== tuning matmul $demo ($trials trials, records in $db)"
$tessel tune matmul --set "$demo" --trials "$trials" --db "$db"
echo "== the best kernel, checked against the interpreter"
$tessel run matmul --set "$demo" --db "$db"
echo "== tuned against OpenBLAS, same inputs, same thread count"
# OpenBLAS 0.3.21 misdetects AVX-512 CPUs and runs about 5x slower
# unless told which kernels to use.
if grep -qw avx512f /proc/cpuinfo; then
	export OPENBLAS_CORETYPE=SkylakeX
fi
$tessel bench matmul --set "$demo" --db "$db" --compare openblas --rounds 5
