#!/usr/bin/env bash
# Checks of the `tessel` command as a user runs it: exit statuses, the
# FILE:LINE:COL diagnostics, --help of every subcommand, .npy round trips,
# and bad input of every kind.  Ends with the line "N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tessel=${TESSEL:-$root/build/tools/tessel}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect STATUS PATTERN -- ARGS: run tessel ARGS, expect exit STATUS and
# PATTERN (an extended regex) in its combined output.
expect() {
	local status=$1 pattern=$2
	shift 3
	local out rc
	out=$(timeout 60 "$tessel" "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne "$status" ]; then
		bad "tessel $* exited $rc, expected $status: $out"
	elif ! grep -qE -- "$pattern" <<<"$out"; then
		bad "tessel $* printed no /$pattern/: $out"
	else
		ok
	fi
}

ex=$root/examples/ops.te

# help, for the command and every subcommand
expect 0 'commands:' -- --help
for c in check ops interp; do
	expect 0 "usage: tessel $c" -- "$c" --help
done
expect 1 "unknown command 'frobnicate'" -- frobnicate
expect 1 'usage:' --

# check
expect 0 'C\[i, j\] : f32\[M, N\] = sum\(k in 0\.\.K\)' -- check "$ex:matmul"
expect 0 'f32\[4, 3\]' -- check "$ex:matmul" --set M=4,N=3,K=5
expect 1 'ops.te:2:1: error: the file holds 3 ops' -- check "$ex"
expect 1 "no op 'nope' in the file" -- check "$ex:nope"
expect 1 'cannot open' -- check "$work/missing.te"
expect 1 "size 'K' of op 'matmul' is not bound" -- interp "$ex:matmul" --set M=4,N=3
expect 1 "must be positive" -- interp "$ex:matmul" --set M=4,N=3,K=0
expect 1 "no size or attribute 'Q'" -- interp "$ex:matmul" --set M=4,N=3,K=2,Q=1
expect 1 "are integers" -- interp "$ex:matmul" --set M=4,N=3,K=two
expect 1 "too many elements" -- interp "$ex:matmul" --set M=4000000000,N=4000000000,K=1
expect 1 'NAME=VALUE' -- interp "$ex:matmul" --set M
for f in "$root"/tests/te/errors/*.te; do
	grep -q '^# set:' "$f" && continue
	want=$(cat "${f%.te}.err")
	want=${want#*: error: }
	expect 1 "error: " -- check "$f"
done

# ops
expect 0 'matmul' -- ops
expect 0 'transpose_b' -- ops matmul
expect 1 "no built-in op 'nope'" -- ops nope
expect 1 "neither a .te file nor a built-in op" -- interp nope --set M=1

# interp: seeded inputs are deterministic, outputs are written as .npy
expect 0 'Y: f32\[1, 8, 32, 32\]' -- interp "$ex:conv2d_relu" \
	--set N=1,C=3,H=32,W=32,F=8,R=3,S=3,stride=1,pad=1 --seed 1 --out "$work/a"
"$tessel" interp "$ex:conv2d_relu" --set N=1,C=3,H=32,W=32,F=8,R=3,S=3,stride=1,pad=1 \
	--seed 1 --out "$work/b" >/dev/null 2>&1
if cmp -s "$work/a/Y.npy" "$work/b/Y.npy"; then ok; else bad "same seed gave different outputs"; fi
"$tessel" interp "$ex:conv2d_relu" --set N=1,C=3,H=32,W=32,F=8,R=3,S=3,stride=1,pad=1 \
	--seed 2 --out "$work/c" >/dev/null 2>&1
if cmp -s "$work/a/Y.npy" "$work/c/Y.npy"; then bad "different seeds gave the same output"; else ok; fi

# interp: --in feeds a file; the output of one op is the input of another
expect 0 'wrote' -- interp "$ex:matmul" --set M=4,N=3,K=5 --out "$work/mm"
expect 0 'Y: f32\[4, 3\]' -- interp "$ex:softmax" --set N=4,D=3 --in "X=$work/mm/C.npy" --out "$work/sm"
expect 1 "input 'X'" -- interp "$ex:softmax" --set N=3,D=4 --in "X=$work/mm/C.npy"
expect 1 "has no input 'Q'" -- interp "$ex:softmax" --set N=4,D=3 --in "Q=$work/mm/C.npy"
expect 1 'NAME=FILE.npy' -- interp "$ex:softmax" --set N=4,D=3 --in "$work/mm/C.npy"

# bad .npy files: a clear error naming the file, exit 1
printf 'not a numpy file at all' > "$work/garbage.npy"
expect 1 'garbage.npy' -- interp "$ex:softmax" --set N=4,D=3 --in "X=$work/garbage.npy"
head -c 100 "$work/mm/C.npy" > "$work/truncated.npy"
expect 1 'truncated.npy' -- interp "$ex:softmax" --set N=4,D=3 --in "X=$work/truncated.npy"
expect 1 'missing.npy' -- interp "$ex:softmax" --set N=4,D=3 --in "X=$work/missing.npy"
expect 1 'seed' -- interp "$ex:softmax" --set N=4,D=3 --seed -3
expect 1 '--out' -- interp "$ex:matmul" --set M=4,N=3,K=5 --out /proc/nope/dir

# lower, codegen, run, fuzz-sched
printf 'split C.i 8 -> C.io C.ii\nsplit C.j 4\nreorder C.io C.jo C.k C.ii C.ji\nparallel C.io\nvectorize C.ji\n' > "$work/mm.trace"
expect 0 'for io in 0\.\.3 parallel' -- lower matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'for ji in 0\.\.4 vectorized' -- lower matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'parallel_for' -- codegen matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'C: relative error .* ok' -- run matmul --set M=20,N=12,K=5 --sched "$work/mm.trace" --min-time 0.01
expect 0 '"median_s": [0-9.e-]+, "min_s"' -- run matmul --set M=20,N=12,K=5 --min-time 0.01 --json
expect 0 '"name": "C", "rel_error"' -- run matmul --set M=20,N=12,K=5 --min-time 0.01 --json
expect 0 'Y: relative error' -- run "$ex:conv2d_relu" --set N=1,C=2,H=6,W=6,F=3,R=3,S=3,stride=1,pad=1 --min-time 0.01 --target "cpu -isa=avx2"
expect 0 'wrote' -- run softmax --set shape=[4,6] --min-time 0.01 --out "$work/run"
expect 0 '^20 passed, 0 failed' -- fuzz-sched matmul --set M=9,N=7,K=5 --count 20 --seed 1 --keep "$work/ff"
expect 0 '^15 passed, 0 failed' -- fuzz-sched "$ex:conv2d_relu" --set N=1,C=2,H=5,W=5,F=2,R=3,S=3,stride=1,pad=1 --count 15 --seed 2 --keep "$work/ff"
expect 0 '^15 passed, 0 failed' -- fuzz-sched layer_norm --set shape=[3,7] --count 15 --seed 3 --keep "$work/ff"

# bad schedules and bad targets: clear errors, exit 1
printf 'split C.i 0\n' > "$work/zero.trace"
expect 1 'zero.trace:1:1: error: step 1 \(split\): split C.i: factor must be positive' -- lower matmul --set M=4,N=4,K=4 --sched "$work/zero.trace"
printf '# a comment\n\nsplit C.i 2\nfuse C.i C.j\n' > "$work/stale.trace"
expect 1 "stale.trace:4:1: error: .*loop 'C.i' no longer exists" -- lower matmul --set M=4,N=4,K=4 --sched "$work/stale.trace"
printf 'frobnicate C.i\n' > "$work/unknown.trace"
expect 1 "unknown primitive 'frobnicate'" -- lower matmul --set M=4,N=4,K=4 --sched "$work/unknown.trace"
printf 'split C.i\n' > "$work/arity.trace"
expect 1 'split: wrong arguments; usage' -- lower matmul --set M=4,N=4,K=4 --sched "$work/arity.trace"
printf 'parallel C.k\n' > "$work/dep.trace"
expect 1 'carries a dependence' -- run matmul --set M=4,N=4,K=4 --sched "$work/dep.trace"
expect 1 "no stage 'Q'" -- lower matmul --set M=4,N=4,K=4 --sched <(printf 'compute_root Q\n')
expect 1 'missing.trace' -- lower matmul --set M=4,N=4,K=4 --sched "$work/missing.trace"
expect 1 'target: .*pentium' -- run matmul --set M=4,N=4,K=4 --target "cpu -isa=pentium"
out=$(CC=/nonexistent/cc timeout 60 "$tessel" run matmul --set M=3,N=3,K=7 --min-time 0.01 2>&1)
if [ $? -eq 1 ] && grep -q "not found" <<<"$out"; then ok; else bad "missing compiler: $out"; fi
expect 1 'timeout' -- run matmul --set M=4,N=4,K=4 --timeout -1

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
