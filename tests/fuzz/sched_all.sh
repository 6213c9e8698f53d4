#!/usr/bin/env bash
# Run `tessel fuzz-sched` over every op of the library (small sizes, so
# that each schedule compiles and runs quickly): COUNT random schedules per
# op (default 2000) from SEED (default 1). Prints one line per op and a
# total; failing schedules are saved under fuzz-failures/. Not part of the
# test suite (it takes hours at 2000); the suite runs a few hundred.
set -u
cd "$(dirname "$0")/../.."
count=${1:-2000}
seed=${2:-1}
tessel=${TESSEL:-build/tools/tessel}
unary="shape=[3,5]"
binary="a=[2,1,3],b=[4,3]"
specs=(
	"matmul M=9,N=7,K=5"
	"batch_matmul B=2,M=5,N=4,K=3"
	"dense batch=3,in_features=6,out_features=4"
	"conv2d N=1,C=3,H=6,W=5,F=4,R=3,S=3,padding=1"
	"max_pool2d N=1,C=2,H=7,W=7,kernel=3,stride=2,padding=1"
	"avg_pool2d N=1,C=2,H=6,W=6,kernel=2"
	"global_avg_pool N=2,C=3,H=4,W=3"
	"softmax shape=[4,6]"
	"log_softmax shape=[3,2,5]"
	"layer_norm shape=[4,7]"
	"batch_norm shape=[2,3,3,3]"
	"reduce_sum shape=[3,4,5],axes=[0,2]"
	"reduce_mean shape=[4,5],axes=[1]"
	"reduce_max shape=[5,4],axes=[0],keepdims=1"
	"reduce_min shape=[3,6]"
	"reduce_prod shape=[3,4],axes=[1]"
	"transpose shape=[2,3,4],perm=[2,0,1]"
	"reshape shape=[4,6],newshape=[3,-1]"
	"pad shape=[3,4],pads=[1,0,2,1]"
	"concat shape=[5,3],sizes=[2,3],axis=0"
	"softmax_cross_entropy N=4,C=5"
)
for op in relu neg exp log sqrt rsqrt tanh erf sigmoid abs floor gelu; do
	specs+=("$op $unary")
done
for op in add sub mul div maximum minimum pow equal not_equal less less_equal greater greater_equal; do
	specs+=("$op $binary")
done
start=$(date +%s)
total_pass=0
total_fail=0
for spec in "${specs[@]}"; do
	set -- $spec
	line=$("$tessel" fuzz-sched "$1" --set "$2" --count "$count" --seed "$seed" 2>&1 | tail -1)
	echo "$1: $line"
	p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
	f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
	total_pass=$((total_pass + ${p:-0}))
	total_fail=$((total_fail + ${f:-$count}))
done
echo "${#specs[@]} ops, $(( $(date +%s) - start )) s"
echo "$total_pass passed, $total_fail failed"
