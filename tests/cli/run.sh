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
# PATTERN (an extended regex) in its combined output, within $limit
# seconds (60 unless set: `limit=300 expect ...`).
expect() {
	local status=$1 pattern=$2
	shift 3
	local out rc
	out=$(timeout "${limit:-60}" "$tessel" "$@" 2>&1)
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
for c in check ops interp lower codegen run fuzz-sched tune best db report bench; do
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

# Conditions that would keep ISL busy for minutes: refused within its budget.
cat > "$work/too_complex.te" <<'EOF'
op hard(A: f32[N, N]) -> B {
  B[i, j] : f32[N, N] = sum(k in 0..N) select((i * 17 + j * 39 + k * 36) % 97 < 48 && (i * 10 + j * 25 + k * 40) % 89 < 44 && (i * 32 + j * 42 + k * 39) % 83 < 41 && (i * 6 + j * 40 + k * 2) % 79 < 39 && (i * 32 + j * 18 + k * 37) % 101 < 50 && (i * 16 + j * 14 + k * 47) % 103 < 51 && (i * 32 + j * 36 + k * 37) % 107 < 53 && (i * 32 + j * 27 + k * 42) % 109 < 54 && (i * 11 + j * 16 + k * 42) % 113 < 56 && (i * 11 + j * 35 + k * 26) % 127 < 63, A[(i * 31 + j * 37 + k) % 1009 % N, (i * 41 + j * 43) % 1013 % N], 0.0)
}
EOF
expect 1 "too_complex.te:2:3: error: the accesses of stage 'B' are too complex" \
	-- check "$work/too_complex.te" --set N=1024

# ops
expect 0 'matmul' -- ops
expect 0 'transpose_b' -- ops matmul
# out_dtype: a quantized matmul sums i8 products in i32; no narrower sum
expect 0 'C\[i, j\] : i32\[4, 3\] = sum\(k in 0\.\.5\) i32\(A\[i, k\]\) \* i32\(B\[k, j\]\)' -- check matmul --set M=4,N=3,K=5,dtype=i8,out_dtype=i32
expect 0 'Bias: f32\[4\]' -- check dense --set batch=2,in_features=3,out_features=4,dtype=bf16,out_dtype=f32
expect 0 'Y\[n, y, x, f\] : i32\[1, 6, 6, 4\] = sum\(c in 0\.\.8, r in 0\.\.3, s in 0\.\.3\) i32\(P\[n, y \+ r, x \+ s, c\]\) \* i32\(Wt\[r, s, c, f\]\)' -- check conv2d --set N=1,C=8,H=6,W=6,F=4,R=3,S=3,padding=1,layout=NHWC,dtype=i8,out_dtype=i32
expect 1 'out_dtype i8: products of i32 sum in i32 or a wider dtype of the same kind' -- check batch_matmul --set B=2,M=4,N=3,K=5,dtype=i32,out_dtype=i8
expect 1 "attribute 'out_dtype' of op 'matmul': expected one of same\|f64" -- check matmul --set M=4,N=3,K=5,out_dtype=f128
# u8 data with i8 weights (quantized activations); u8 wraps and saturates
expect 0 'op matmul\(A: u8\[4, 5\], B: i8\[5, 3\]\)' -- check matmul --set M=4,N=3,K=5,dtype=u8,weight_dtype=i8,out_dtype=i32
expect 0 'Wt: i8\[3, 3, 8, 4\]' -- check conv2d --set N=1,C=8,H=6,W=6,F=4,R=3,S=3,padding=1,layout=NHWC,dtype=u8,weight_dtype=i8,out_dtype=i32
expect 1 'weight_dtype i8 with dtype u8: weights differ from the data only as the other 8-bit integer type' -- check matmul --set M=4,N=3,K=5,dtype=u8,weight_dtype=i8
expect 0 ': relative error 0 \(tolerance 0\) ok' -- run dense --set batch=3,in_features=40,out_features=24,dtype=u8,weight_dtype=i8,out_dtype=i32 --min-time 0.001
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
# 8 does not divide 20: the full row blocks run without a guard and the
# partial one as the last iteration of the same parallel loop (loop
# partitioning), its rows constant.
expect 0 'for io in 0\.\.3 parallel' -- lower matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'if io < 2 ' -- lower matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'C\[ii \+ 16, jo \* 4 \+ ji\]' -- lower matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'for ji in 0\.\.4 vectorized' -- lower matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'parallel_for' -- codegen matmul --set M=20,N=12,K=5 --sched "$work/mm.trace"
expect 0 'C: relative error .* ok' -- run matmul --set M=20,N=12,K=5 --sched "$work/mm.trace" --min-time 0.01
# an output stored streaming: marked in the program, non-temporal stores
# and a fence in the source, the interpreter's values
printf 'split Y.j 8 -> Y.jo Y.ji\nvectorize Y.ji\nparallel Y.i\nstream Y 1\n' > "$work/stream.trace"
expect 0 'Y: f32\[33, 100\] streamed' -- lower layer_norm --set 'shape=[33, 100]' --sched "$work/stream.trace"
expect 0 'tsl_stream_fence\(\);' -- codegen layer_norm --set 'shape=[33, 100]' --sched "$work/stream.trace"
expect 0 'Y: relative error .* ok' -- run layer_norm --set 'shape=[33, 100]' --sched "$work/stream.trace" --min-time 0.01
expect 0 '"median_s": [0-9.e-]+, "min_s"' -- run matmul --set M=20,N=12,K=5 --min-time 0.01 --json
expect 0 '"name": "C", "rel_error"' -- run matmul --set M=20,N=12,K=5 --min-time 0.01 --json
expect 0 '"cpu_wait": ([0-9.e-]+|null), "outputs"' -- run matmul --set M=20,N=12,K=5 --min-time 0.01 --json
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

# the record store: best, db export/import/info, report, run --db
# (tests/data/records/*.jsonl.in: records in the JSON-lines form, their
# workload key left as @WORKLOAD@ and filled in with the key tessel computes)
for c in best db report; do
	expect 0 "usage: tessel $c" -- "$c" --help
done
expect 0 'db import FILE' -- db --help
expect 0 '--db PATH' -- run --help
fixture='cpu -arch=x86_64 -vendor=tessel -model=fixture -isa=generic -features=none -vector=16 -cores=1 -l1d=32K -l2=1M -l3=8M -line=64'
db=$work/records.db
mm64=(matmul --set M=64,N=64,K=64 --target "$fixture")
mm32=(matmul --set M=32,N=32,K=32 --target "$fixture")
expect 1 'no record store at .*records.db' -- best "${mm64[@]}" --db "$db"
: > "$db"
expect 1 'no record of matmul \(workload [0-9a-f]{16}\)' -- best "${mm64[@]}" --db "$db"
workload_key() {
	"$tessel" best "$@" --db "$db" --json 2>/dev/null |
		sed -nE 's/.*"found": false.*"workload": "([0-9a-f]{16})".*/\1/p'
}
key64=$(workload_key "${mm64[@]}")
key32=$(workload_key "${mm32[@]}")
if [ ${#key64} -eq 16 ] && [ ${#key32} -eq 16 ] && [ "$key64" != "$key32" ]; then ok; else bad "workload keys '$key64' '$key32'"; fi
sed "s/@WORKLOAD@/$key64/" "$root/tests/data/records/matmul.jsonl.in" > "$work/mm.jsonl"
sed "s/@WORKLOAD@/$key32/" "$root/tests/data/records/stale.jsonl.in" > "$work/stale.jsonl"
expect 0 'mm.jsonl: 6 lines, 6 added, 0 skipped' -- db import "$work/mm.jsonl" --db "$db"
expect 0 'mm.jsonl: 6 lines, 0 added, 6 skipped' -- db import "$work/mm.jsonl" --db "$db"
expect 0 'records: 6 \(5 ok, 1 failed\)' -- db info --db "$db"
expect 0 'schema version: 5' -- db info --db "$db"
expect 0 '^measured by other builds than this \(tessel 0\.1\.0\+[^)]+\): 6$' -- db info --db "$db"
expect 0 '^  #1 cpu -arch=x86_64 -vendor=tessel -model=fixture' -- db info --db "$db"
expect 0 "^  $key64 matmul\\(A: f32\\[64, 64\\], B: f32\\[64, 64\\]\\) -> C on #1: 5 records \\(1 failed\\), best [0-9.e-]+ ms \\([0-9.]+ GFLOP/s\\)$" -- db info --db "$db"

# best: the record of lowest median time, its trace, and a replayable file
expect 0 'record: #4 in .*records.db' -- best "${mm64[@]}" --db "$db"
expect 0 'time: median 0.026329 ms, min 0.025719 ms, 19.91 GFLOP/s' -- best "${mm64[@]}" --db "$db"
expect 0 'note: this is tessel 0\.1\.0\+[^;]+; the code it generates for the trace may differ from what was measured' -- best "${mm64[@]}" --db "$db"
expect 0 '^reorder C.io C.jo C.ko C.ii C.ki C.ji$' -- best "${mm64[@]}" --db "$db"
expect 0 '"found": true, .*"id": 4, "median_s": 2.6329e-05' -- best "${mm64[@]}" --db "$db" --json
expect 0 'record: #4' -- best "${mm64[@]}" --db "$db" --out "$work/best.trace"
expect 0 'C: relative error .* ok' -- run "${mm64[@]}" --sched "$work/best.trace" --min-time 0.01
TESSEL_DB=$db expect 0 'record: #4' -- best "${mm64[@]}"
expect 1 'no record of matmul' -- best matmul --set M=64,N=64,K=64 --db "$db"
expect 1 'best: --db needs a value' -- best "${mm64[@]}" --db
expect 1 'best: missing SPEC' -- best --db "$db"

# run --db: the best record's trace, else the default schedule, said so
expect 0 'schedule: best record #4 from .*records.db \(median 0.026329 ms, measured by tessel 0\.1\.0\)' -- run "${mm64[@]}" --db "$db" --min-time 0.01
expect 0 'C: relative error .* ok' -- run "${mm64[@]}" --db "$db" --min-time 0.01
expect 0 '"ok": true' -- run "${mm64[@]}" --db "$db" --min-time 0.01 --json
expect 0 'schedule: no record for this workload/target in .*; default schedule' -- run matmul --set M=64,N=64,K=64 --db "$db" --min-time 0.01
expect 0 'stale.jsonl: 1 lines, 1 added, 0 skipped' -- db import "$work/stale.jsonl" --db "$db"
expect 0 'schedule: best record #7 from .* no longer replays \(.*vectorize.*\); default schedule' -- run "${mm32[@]}" --db "$db" --min-time 0.01
expect 0 'C: relative error .* ok' -- run "${mm32[@]}" --db "$db" --min-time 0.01
expect 1 '--db and --sched' -- run "${mm64[@]}" --db "$db" --sched "$work/best.trace"
expect 1 'no record store at .*missing.db' -- run "${mm64[@]}" --db "$work/missing.db"

# codegen --db and lower --db: the source and the loop program of the best
# record, said on stderr; stdout is what --sched of the best trace prints
for cmd in codegen lower; do
	expect 0 'schedule: best record #4 from .*records.db' -- $cmd "${mm64[@]}" --db "$db"
	"$tessel" $cmd "${mm64[@]}" --db "$db" > "$work/db.$cmd" 2>/dev/null
	"$tessel" $cmd "${mm64[@]}" --sched "$work/best.trace" > "$work/sched.$cmd" 2>/dev/null
	if cmp -s "$work/db.$cmd" "$work/sched.$cmd" && [ -s "$work/db.$cmd" ]; then ok; else
		bad "$cmd --db printed other than $cmd --sched of the best trace"; fi
	expect 0 'schedule: best record #7 from .* no longer replays' -- $cmd "${mm32[@]}" --db "$db"
	expect 0 'schedule: no record for this workload/target in .*; default schedule' -- $cmd matmul --set M=64,N=64,K=64 --db "$db"
	expect 1 '--db and --sched' -- $cmd "${mm64[@]}" --db "$db" --sched "$work/best.trace"
	expect 1 'no record store at .*missing.db' -- $cmd "${mm64[@]}" --db "$work/missing.db"
done
# ... the source builds into a program of one's own (examples/call_matmul.c)
if cc -O2 -std=gnu17 -I"$root/include" -x c "$root/examples/call_matmul.c" \
		"$work/db.codegen" -x none -lm -o "$work/call_matmul" 2>"$work/cc.log" &&
	"$work/call_matmul" | grep -q 'matmul 64x64x64: .*: ok$'; then ok; else
	bad "examples/call_matmul.c with codegen --db's source: $(cat "$work/cc.log")"; fi
expect 1 'target: .*pentium' -- lower matmul --set M=64,N=64,K=64 --target "cpu -isa=pentium"
expect 0 'threadIdx.x' -- lower matmul --set M=64,N=64,K=64 --target opencl

# export: filters, and a round trip through a new store gives the same lines
"$tessel" db export --db "$db" --out "$work/all.jsonl" 2>/dev/null
if [ "$(wc -l < "$work/all.jsonl")" -eq 7 ]; then ok; else bad "export wrote $(wc -l < "$work/all.jsonl") lines, expected 7"; fi
expect 0 'exported 7 records' -- db export --db "$db" --out "$work/all.jsonl"
n=$("$tessel" db export --db "$db" --workload "$key64" --ok-only | wc -l)
if [ "$n" -eq 4 ]; then ok; else bad "export --workload --ok-only wrote $n lines, expected 4"; fi
n=$("$tessel" db export --db "$db" --target "$fixture" | wc -l)
if [ "$n" -eq 6 ]; then ok; else bad "export --target wrote $n lines, expected 6"; fi
expect 0 '<stdin>: 7 lines, 7 added, 0 skipped' -- db import - --db "$work/copy.db" < "$work/all.jsonl"
expect 0 'all.jsonl: 7 lines, 0 added, 7 skipped' -- db import "$work/all.jsonl" --db "$work/copy.db"
"$tessel" db export --db "$work/copy.db" > "$work/again.jsonl"
if cmp -s "$work/all.jsonl" "$work/again.jsonl"; then ok; else bad "export, import, export changed the lines"; fi
expect 1 'target: .*pentium' -- db export --db "$db" --target "cpu -isa=pentium"
printf '%s\n{"tessel_record":1}\n' "$(head -n 1 "$work/mm.jsonl")" > "$work/bad.jsonl"
expect 1 'bad.jsonl:2: ' -- db import "$work/bad.jsonl" --db "$work/copy.db"
expect 0 'records: 7 ' -- db info --db "$work/copy.db"
expect 1 'missing.jsonl: No such file' -- db import "$work/missing.jsonl" --db "$work/copy.db"
expect 1 'no FILE to import' -- db import --db "$work/copy.db"
expect 1 'no record store at' -- db export --db "$work/missing.db"
expect 1 'missing subcommand' -- db
expect 1 "unknown subcommand 'frob'" -- db frob
expect 1 "db export: unexpected argument '--frob'" -- db export --frob
expect 1 'db info takes --db PATH only' -- db info --ok-only

# report: one HTML page with a table and a curve per task, text escaped
expect 0 'wrote .*report.html: 3 tasks, 7 records' -- report --db "$db" --out "$work/report.html"
for want in '<svg' '<table>' "$key64" '6.29x' '19.91' '&lt;b&gt;&amp;amp;' 'default schedule'; do
	if grep -qF -- "$want" "$work/report.html"; then ok; else bad "report.html lacks '$want'"; fi
done
if grep -qE '<script|<link|src=|<b>' "$work/report.html"; then bad "report.html has a script, an external asset or raw markup from the store"; else ok; fi
expect 1 'missing --out' -- report --db "$db"
expect 1 'no record store at' -- report --db "$work/missing.db" --out "$work/r.html"

# bad stores: refused with a clear error, exit 1, and left byte for byte
head -c 8192 /dev/urandom > "$work/random.db"
{ printf 'SQLite format 3\0'; head -c 8176 /dev/urandom; } > "$work/damaged.db"
printf 'key,value\nnot,a database\n' > "$work/text.db"
cp "$db" "$work/newer.db"
LC_ALL=C perl -pi -e 's/schema_version5/schema_version9/' "$work/newer.db"
for f in random damaged text newer; do
	cp "$work/$f.db" "$work/$f.orig"
	expect 1 "$f.db" -- best "${mm64[@]}" --db "$work/$f.db"
	expect 1 "$f.db" -- db import "$work/mm.jsonl" --db "$work/$f.db"
	expect 1 "$f.db" -- db export --db "$work/$f.db"
	expect 1 "$f.db" -- db info --db "$work/$f.db"
	expect 1 "$f.db" -- report --db "$work/$f.db" --out "$work/$f.html"
	expect 1 "$f.db" -- run "${mm64[@]}" --db "$work/$f.db"
	if cmp -s "$work/$f.db" "$work/$f.orig"; then ok; else bad "$f.db was changed"; fi
done
expect 1 'random.db is not an SQLite database' -- best "${mm64[@]}" --db "$work/random.db"
expect 1 'newer.db has schema version 9, newer than this tessel \(5\); refusing' -- db info --db "$work/newer.db"

# bench: tessel beside vendor libraries loaded at run time (where OpenBLAS
# is not installed, it must say so and exit 1 for want of any comparison)
quick=(--rounds 1 --min-time 0.01 --settle 0)
expect 0 'usage: tessel bench' -- bench --help
if ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0'; then
	expect 0 'OpenBLAS .*cblas_sgemm.* [0-9]+\.[0-9]{3}  [0-9.]+e[-+][0-9]+ ok' -- bench matmul --set M=64,N=64,K=64 --compare openblas --threads 1 "${quick[@]}"
	expect 0 'tessel/vendor: median over rounds' -- bench matmul --set M=64,N=64,K=64 --compare openblas "${quick[@]}"
	expect 0 'OpenBLAS .* ok' -- bench matmul --set M=48,N=40,K=24,transpose_a=1,transpose_b=1 --compare openblas "${quick[@]}"
	expect 0 '"vendor": "openblas", .*"disturbed_rounds": [0-9]+, "tessel_vs_vendor": [0-9.e+-]+, "rel_error": [0-9.e+-]+, "ok": true' -- bench dense --set batch=8,in_features=24,out_features=16 --compare openblas "${quick[@]}" --json
	expect 0 'schedule: best record #4 from .*records.db' -- bench "${mm64[@]}" --db "$db" --compare openblas "${quick[@]}"
	expect 0 'schedule: no record for this workload/target in .*; default schedule' -- bench matmul --set M=64,N=64,K=64 --db "$db" --compare openblas "${quick[@]}"
else
	expect 1 'openblas: not available \(dlopen: ' -- bench matmul --set M=64,N=64,K=64 --compare openblas "${quick[@]}"
fi
expect 1 'openblas: no equivalent of conv2d' -- bench conv2d --set N=1,C=4,H=8,W=8,F=4,R=3,S=3 --compare openblas "${quick[@]}"
expect 1 'no vendor library could run conv2d' -- bench conv2d --set N=1,C=4,H=8,W=8,F=4,R=3,S=3 --compare openblas "${quick[@]}"
if [ -n "${TESSEL_SANITIZED:-}" ]; then
	echo "skip: oneDNN runs under ASan (LeakSanitizer dies at exit with oneDNN's threads)"
elif ldconfig -p 2>/dev/null | grep -q 'libdnnl\.so\.2'; then
	expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=4,H=8,W=8,F=4,R=3,S=3,padding=1 --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=3,H=9,W=8,F=5,R=3,S=2,stride=2,padding=1,layout=NHWC --compare onednn "${quick[@]}"
	# grouped and depthwise convolutions, both layouts
	expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=4,H=8,W=8,F=6,R=3,S=3,groups=2 --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=2,C=8,H=7,W=9,F=8,R=3,S=3,groups=8,padding=1,stride=2,layout=NHWC --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=6,H=8,W=8,F=9,R=3,S=2,groups=3,layout=NHWC --compare onednn "${quick[@]}"
	# softmax and log_softmax along any axis against oneDNN's primitives
	expect 0 'oneDNN .* softmax .* ok' -- bench softmax --set 'shape=[3,5,7],axis=1' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .* logsoftmax .* ok' -- bench log_softmax --set 'shape=[6,33]' --compare onednn "${quick[@]}"
	# a transposition against oneDNN's reorder, its rate in GB/s (no arithmetic)
	expect 0 'oneDNN .*reorder.* ok' -- bench transpose --set 'shape=[3,5,4],perm=[2,0,-2]' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*reorder.* ok' -- bench transpose --set 'shape=[6,10]' --compare onednn "${quick[@]}"
	expect 0 'median ms +round medians ms +GB/s' -- bench transpose --set 'shape=[6,10]' --compare onednn "${quick[@]}"
	# pooling: max, average with and without the padding counted (uneven
	# windows, strides and a last window short of the right padding), global
	expect 0 'oneDNN .*pooling.* ok' -- bench max_pool2d --set 'N=1,C=3,H=9,W=8,kernel=3,stride=2,padding=1' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*pooling.* ok' -- bench avg_pool2d --set 'N=2,C=3,H=15,W=16,kernel=[3,2],stride=[2,3],padding=1' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*pooling.* ok' -- bench avg_pool2d --set 'N=2,C=3,H=15,W=16,kernel=[3,2],stride=[2,3],padding=1,count_include_pad=0' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*pooling.* ok' -- bench global_avg_pool --set 'N=2,C=5,H=7,W=7,keepdims=0' --compare onednn "${quick[@]}"
	# layer normalization over the last axis and the last two, without the
	# affine part; batch normalization of NCHW data and of [N, C]
	expect 0 'oneDNN .*layer_normalization.* ok' -- bench layer_norm --set 'shape=[6,40]' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*layer_normalization.* ok' -- bench layer_norm --set 'shape=[3,4,10],axis=-2,eps=0.01' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*layer_normalization.* ok' -- bench layer_norm --set 'shape=[5,24],affine=0' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*batch_normalization.* ok' -- bench batch_norm --set 'shape=[2,5,6,7]' --compare onednn "${quick[@]}"
	expect 0 'oneDNN .*batch_normalization.* ok' -- bench batch_norm --set 'shape=[8,12],eps=0.1' --compare onednn "${quick[@]}"
	# bf16 data (oneDNN's bf16 kernels need AVX-512BW), checked to bf16's
	# tolerance; no bf16 normalization (oneDNN wants their scales in f32)
	if grep -qw avx512bw /proc/cpuinfo; then
		expect 0 'oneDNN .*matmul.* ok' -- bench matmul --set M=24,N=40,K=33,transpose_b=1,dtype=bf16 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*matmul.* ok' -- bench dense --set batch=5,in_features=48,out_features=20,dtype=bf16 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=4,H=8,W=8,F=6,R=3,S=3,padding=1,dtype=bf16 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .* softmax .* ok' -- bench softmax --set 'shape=[6,33],dtype=bf16' --compare onednn "${quick[@]}"
	fi
	if ! grep -qw avx512_fp16 /proc/cpuinfo; then
		expect 1 'onednn: cannot set up matmul \(oneDNN: primitive desc: no implementation on this CPU\)' -- bench matmul --set M=8,N=8,K=8,dtype=f16 --compare onednn "${quick[@]}"
	fi
	if grep -qw avx512bw /proc/cpuinfo; then
		expect 0 'oneDNN .*matmul.* ok' -- bench matmul --set M=24,N=40,K=36,dtype=i8,out_dtype=i32 --compare onednn "${quick[@]}"
		expect 0 'median ms +round medians ms +GOP/s' -- bench matmul --set M=24,N=40,K=36,dtype=i8,out_dtype=i32 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*matmul.* ok' -- bench dense --set batch=5,in_features=48,out_features=20,dtype=bf16,out_dtype=f32 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=16,H=8,W=7,F=32,R=3,S=3,padding=1,layout=NHWC,dtype=i8,out_dtype=i32 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*matmul.* ok' -- bench matmul --set M=24,N=40,K=36,dtype=u8,weight_dtype=i8,out_dtype=i32 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=16,H=8,W=7,F=32,R=3,S=3,padding=1,dtype=u8,weight_dtype=i8,out_dtype=i32 --compare onednn "${quick[@]}"
		expect 0 'oneDNN .*convolution.* ok' -- bench conv2d --set N=1,C=8,H=7,W=8,F=16,R=3,S=3,stride=2,dtype=bf16,out_dtype=f32 --compare onednn "${quick[@]}"
	fi
	expect 1 'onednn: no equivalent of layer_norm in bf16' -- bench layer_norm --set 'shape=[6,40],dtype=bf16' --compare onednn "${quick[@]}"
	expect 1 'onednn: no equivalent of transpose \(dtype i32\)' -- bench transpose --set 'shape=[6,10],dtype=i32' --compare onednn "${quick[@]}"
fi
expect 1 'openblas: no equivalent of matmul from i8 into i32' -- bench matmul --set M=8,N=8,K=8,dtype=i8,out_dtype=i32 --compare openblas "${quick[@]}"
expect 1 'openblas: no equivalent of matmul from u8 with weights of i8 into i32' -- bench matmul --set M=8,N=8,K=8,dtype=u8,weight_dtype=i8,out_dtype=i32 --compare openblas "${quick[@]}"
expect 1 'openblas: no equivalent of matmul in bf16' -- bench matmul --set M=8,N=8,K=8,dtype=bf16 --compare openblas "${quick[@]}"
expect 1 "unknown vendor 'mkl' in --compare \(known: openblas,onednn,cublas,cudnn\)" -- bench matmul --set M=8,N=8,K=8 --compare openblas,mkl
expect 1 'bench: cublas runs on --target cuda, not on --target cpu \(for it: openblas,onednn\)' -- bench matmul --set M=8,N=8,K=8 --compare cublas
expect 1 'bench: openblas runs on the CPU, not on --target cuda \(for it: cublas,cudnn\)' -- bench matmul --set M=8,N=8,K=8 --target cuda --compare openblas
expect 1 'bench: no vendor library runs on OpenCL' -- bench matmul --set M=8,N=8,K=8 --target opencl
expect 1 "unknown CUDA architecture sm_12" -- bench matmul --set M=8,N=8,K=8 --target cuda:sm_12
# bench --vendors: every vendor library loaded and its entry points
# resolved, no device needed (cuBLAS's and cuDNN's where the toolkit is)
expect 0 '^openblas +cpu +(ok: OpenBLAS|not available: )' -- bench --vendors
expect 0 '^cudnn +cuda +(ok: cuDNN [0-9]|not available: )' -- bench --vendors
for lib in libcublas.so.13:cublas libcudnn.so.9:cudnn; do
	if [ -e "/usr/local/cuda/lib64/${lib%%:*}" ]; then
		expect 0 "^${lib##*:} +cuda +ok: " -- bench --vendors
	fi
done
expect 1 "bench: unexpected argument '--vendors'" -- bench --vendors matmul
# bench --target cuda: against cuBLAS on a GPU; here, a clear error
out=$(timeout 300 "$tessel" bench matmul --set M=64,N=64,K=64 --target cuda --rounds 1 --min-time 0.01 --settle 0 2>&1)
if grep -qE 'cuBLAS .*cublasSgemm.* ok|CUDA driver not found|no CUDA device' <<<"$out"; then ok
else bad "bench --target cuda: $out"; fi
expect 1 'bench: --db and --sched' -- bench "${mm64[@]}" --db "$db" --sched "$work/best.trace"
expect 1 'bench: missing SPEC' -- bench --compare openblas
expect 1 'bench: --compare needs a value' -- bench matmul --set M=8,N=8,K=8 --compare

# opencl: OpenCL C, runs and schedule fuzzing on the OpenCL device (PoCL
# on the CPU; skipped, saying so, where there is no device or under ASan,
# which PoCL is not built with: docs/gpu.md)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$(dirname "$tessel")/../pocl-cache}
small=(matmul --set M=9,N=7,K=5)
printf 'split C.i 4 -> C.io C.ii\nbind C.io blockIdx.x\nbind C.ii threadIdx.x\nbind C.j threadIdx.y\n' > "$work/bound.trace"
printf 'bind C.k blockIdx.x\n' > "$work/badbind.trace"
printf 'split C.i 4 -> C.io C.ii\nbind C.io blockIdx.x\nbind C.ii threadIdx.x\ncache_read A shared C\ncompute_at A_shared C.io\nsplit A_shared.ax1 4 -> A_shared.o A_shared.t\nbind A_shared.t threadIdx.x\nstorage_align A_shared.ax0 4 1\n' > "$work/shared.trace"
printf 'bind C.i blockIdx.x\nbind C.k threadIdx.x\n' > "$work/crossthread.trace"
expect 0 '^__kernel void matmul\(' -- codegen "${small[@]}" --target opencl
expect 0 'get_local_id\(1\)' -- codegen "${small[@]}" --target opencl --sched "$work/bound.trace"
expect 0 '__kernel void softmax_1\(' -- codegen softmax --set shape=[4,6] --target opencl
expect 1 'loop bound to blockIdx.x cannot run on the CPU' -- codegen "${small[@]}" --sched "$work/bound.trace"
expect 1 'badbind.trace:1:1: error: step 1 \(bind\): bind C.k blockIdx.x: C.k is a reduction loop; only threadIdx can bind one' -- lower "${small[@]}" --sched "$work/badbind.trace"
expect 0 '__local __attribute__\(\(aligned\(16\)\)\) float A_shared\[' -- codegen "${small[@]}" --target opencl --sched "$work/shared.trace"
expect 0 'barrier\(CLK_LOCAL_MEM_FENCE' -- codegen "${small[@]}" --target opencl --sched "$work/crossthread.trace"
expect 1 'target: opencl takes no options yet' -- codegen "${small[@]}" --target "opencl -device=2"
expect 1 "unknown target kind 'gpu' \(expected cpu, opencl or cuda\)" -- run "${small[@]}" --target gpu
# run --target cuda --db: CPU records are not CUDA's; the default GPU
# schedule is said, then the run goes on (or stops: no driver here)
out=$(timeout 120 "$tessel" run "${small[@]}" --target cuda --db "$db" --min-time 0.01 2>&1)
if grep -qE 'schedule: no record for this workload/target in .*; default schedule' <<<"$out" &&
	grep -qE 'relative error .* ok|CUDA driver not found|no CUDA device' <<<"$out"; then ok
else bad "run --target cuda --db: $out"; fi
probe=$(timeout 60 "$tessel" run "${small[@]}" --target opencl --min-time 0.001 2>&1)
if grep -q 'ERROR: AddressSanitizer\|LeakSanitizer' <<<"$probe" || [ -n "${TESSEL_SANITIZED:-}" ]; then
	echo "skip: OpenCL runs under ASan (PoCL is not built with sanitizers)"
elif grep -q 'OpenCL is not available\|no OpenCL' <<<"$probe"; then
	echo "skip: OpenCL runs: $(grep -o 'OpenCL is not available.*\|no OpenCL.*' <<<"$probe" | head -1)"
else
	expect 0 'C: relative error .* ok' -- run "${small[@]}" --target opencl --min-time 0.001
	expect 0 'device: .*\(OpenCL\)' -- run "${small[@]}" --target opencl --sched "$work/bound.trace" --min-time 0.001
	expect 0 'Y: relative error .* ok' -- run layer_norm --set shape=[4,7] --target opencl --min-time 0.001
	expect 0 'C: relative error .* ok' -- run "${small[@]}" --target opencl --sched "$work/shared.trace" --min-time 0.001
	expect 0 'C: relative error .* ok' -- run "${small[@]}" --target opencl --sched "$work/crossthread.trace" --min-time 0.001
	expect 0 '^10 passed, 0 failed' -- fuzz-sched "${small[@]}" --target opencl --count 10 --seed 1 --keep "$work/ff"
	expect 0 '^6 passed, 0 failed' -- fuzz-sched softmax --set shape=[4,6] --target opencl --count 6 --seed 2 --keep "$work/ff"
	# tune on the device: GPU sketches, the default GPU schedule as the
	# baseline, the best checked against the interpreter, then applied
	gdb=$work/gpu.db
	gmm=(matmul --set M=64,N=64,K=64)
	limit=400 expect 0 'best: [0-9.]+ GFLOP/s .*, [0-9.]+x the default schedule' -- tune "${gmm[@]}" --target opencl --trials 16 --min-time 0.01 --db "$gdb"
	expect 0 'schedule: best record #[0-9]+ from .*gpu.db' -- run "${gmm[@]}" --target opencl --db "$gdb" --min-time 0.001
	expect 0 'C: relative error .* ok' -- run "${gmm[@]}" --target opencl --db "$gdb" --min-time 0.001
	expect 0 'records: 16 \(' -- db info --db "$gdb"
	# the search reaches the register tile fed by shared tiles
	expect 0 'cache_read A shared C_local -> A_shared' -- db export --db "$gdb"
	# its records hold the key of their OpenCL source and PoCL's version;
	# a search measures again first those another build made other code of
	expect 0 '"code_key": "[0-9a-f]{32}", "code": "same"' -- best "${gmm[@]}" --target opencl --db "$gdb" --json
	"$tessel" db export --db "$gdb" --out "$work/gpu.jsonl" >/dev/null 2>&1
	sed -E 's/"code_key":"[0-9a-f]{32}"/"code_key":"0123456789abcdef0123456789abcdef"/; s/"tessel_version":"[^"]*"/"tessel_version":"0.0.1"/' "$work/gpu.jsonl" > "$work/gpu-other.jsonl"
	expect 0 '[1-9][0-9]* added, 0 skipped' -- db import "$work/gpu-other.jsonl" --db "$work/gpu-other.db"
	expect 0 '"code": "other"' -- best "${gmm[@]}" --target opencl --db "$work/gpu-other.db" --json
	limit=400 expect 0 '16 found in the store \(this build makes other code of [1-9][0-9]* of them; 4 measured again\)' -- tune "${gmm[@]}" --target opencl --trials 4 --batch 4 --min-time 0.01 --db "$work/gpu-other.db" --runoff 0
fi

# cuda: CUDA C, cubins from NVRTC with ptxas's report (no GPU needed;
# skipped, saying so, where NVRTC is missing), and runs on the driver
# where there is one, else their clear refusal
expect 0 '^extern "C" __global__ void matmul\(' -- codegen "${small[@]}" --target cuda
expect 0 'int64_t j = \(int64_t\)threadIdx.y;' -- codegen "${small[@]}" --target cuda:sm_80 --sched "$work/bound.trace"
expect 0 'extern "C" __global__ void softmax_4\(' -- codegen softmax --set shape=[4,6] --target cuda
expect 1 'unknown CUDA architecture sm_1000 \(known: .*sm_90' -- codegen "${small[@]}" --target cuda:sm_1000
expect 1 "'foo' is not an architecture sm_NN" -- codegen "${small[@]}" --target cuda:foo
expect 1 'cuda takes no options' -- run "${small[@]}" --target "cuda -arch=sm_90"
expect 1 'codegen: --cubin needs --target cuda' -- codegen "${small[@]}" --cubin "$work/m.cubin"
expect 1 'codegen: --ptx needs --target cuda' -- codegen "${small[@]}" --target opencl --ptx "$work/m.ptx"
expect 1 "'sm_7' is not an architecture sm_NN" -- fuzz-sched "${small[@]}" --target cuda:sm_7 --count 1 --seed 1
probe=$(timeout 60 "$tessel" codegen "${small[@]}" --target cuda --cubin "$work/probe.cubin" 2>&1)
if grep -q 'NVRTC not found' <<<"$probe"; then
	echo "skip: cubins: $(grep -o 'NVRTC not found.*' <<<"$probe" | head -1)"
else
	expect 0 'kernel matmul: grid 1 x 1 x 1, block 63 x 1 x 1; [1-9][0-9]* registers, 0 bytes shared.*: fits sm_90' -- codegen "${small[@]}" --target cuda --cubin "$work/m.cubin"
	if [ -s "$work/m.cubin" ]; then ok; else bad "codegen --cubin wrote no cubin"; fi
	expect 0 'kernel softmax_4: .*: fits sm_80' -- codegen softmax --set shape=[4,6] --target cuda:sm_80 --cubin "$work/s.cubin"
	# NVRTC compiles without loading the CUDA driver: its cache would call
	# cuInit in the tuner, whose forked workers then cannot use CUDA
	loads=$(LD_DEBUG=libs "$tessel" codegen "${small[@]}" --target cuda --cubin "$work/m2.cubin" 2>&1 |
		grep -c 'find library=libcuda\.so' || true)
	if [ "$loads" = 0 ]; then ok; else bad "NVRTC looked for libcuda.so.1 $loads times while compiling"; fi
	expect 1 'NVRTC [0-9.]+ cannot compile for sm_50' -- codegen "${small[@]}" --target cuda:sm_50 --cubin "$work/old.cubin"
	# the PTX of a register tile fed from 16-byte aligned shared tiles
	# loads four floats at once
	expect 0 'ptx: .*tile.ptx \(compute_80, [0-9]+ bytes' -- codegen examples/ops.te:matmul --set M=256,N=256,K=64 --sched tests/sched/shared_register_tile_matmul.trace --target cuda:sm_80 --ptx "$work/tile.ptx"
	if grep -q 'ld\.shared\.v4\.f32' "$work/tile.ptx" && ! grep -q 'ld\.shared\.f32' "$work/tile.ptx"; then ok; else bad "the register tile's shared loads are not ld.shared.v4.f32"; fi
	expect 1 'NVRTC [0-9.]+ cannot compile for sm_50' -- codegen "${small[@]}" --target cuda:sm_50 --ptx "$work/old.ptx"
	expect 0 '^10 passed, 0 failed' -- fuzz-sched "${small[@]}" --target cuda --count 10 --seed 1 --keep "$work/ff"
	expect 0 '^6 passed, 0 failed' -- fuzz-sched softmax --set shape=[4,6] --target cuda:sm_80 --count 6 --seed 2 --keep "$work/ff"
	# a CUDA record's code key: tessel best builds the trace with NVRTC
	# and compares it with the record's (no device needed)
	read -r ckey ctarget < <("$tessel" best "${small[@]}" --target cuda --db "$db" --json 2>/dev/null |
		sed -nE 's/.*"workload": "([0-9a-f]{16})", "target": "([^"]*)".*/\1 \2/p')
	printf '{"tessel_record":4,"workload":"%s","op":"matmul","target_kind":"cuda","target":"%s","trace":"split C.i 4 -> C.io C.ii\\nbind C.io blockIdx.x\\nbind C.ii threadIdx.x\\nbind C.j threadIdx.y\\n","cost_median_s":1e-05,"code_key":"0123456789abcdef0123456789abcdef","error":"ok","measured_at":"2026-12-02T12:00:00Z","tessel_version":"0.1.0"}\n' \
		"$ckey" "$ctarget" > "$work/cuda-record.jsonl"
	expect 0 '1 lines, 1 added' -- db import "$work/cuda-record.jsonl" --db "$work/cuda-record.db"
	expect 0 '"code_key": "0123456789abcdef0123456789abcdef", "code": "other"' -- best "${small[@]}" --target cuda --db "$work/cuda-record.db" --json
fi
probe=$(timeout 120 "$tessel" run "${small[@]}" --target cuda --min-time 0.001 2>&1)
if grep -q 'CUDA driver not found' <<<"$probe"; then
	expect 1 'the kernel failed \(exit status 1\): CUDA driver not found \(libcuda.so.1\)' -- run "${small[@]}" --target cuda
elif grep -q 'no CUDA device' <<<"$probe"; then
	echo "skip: CUDA runs: $(grep -o 'no CUDA device.*' <<<"$probe" | head -1)"
else
	expect 0 'C: relative error .* ok' -- run "${small[@]}" --target cuda --min-time 0.001
	expect 0 'device: .*\(CUDA\)' -- run "${small[@]}" --target cuda --sched "$work/bound.trace" --min-time 0.001
	expect 0 'Y: relative error .* ok' -- run layer_norm --set shape=[4,7] --target cuda --min-time 0.001
fi

# tune: a short search on a small op, resumed, applied; bad options; and
# Ctrl-C, which commits what was measured and exits 130
mm32=(matmul --set M=32,N=32,K=32)
tdb=$work/tune.db
expect 0 'trials: 8 measured in [0-9]+ rounds, 0 errors; 0 found in the store' -- tune "${mm32[@]}" --trials 8 --batch 4 --min-time 0.005 --db "$tdb"
expect 0 'best: [0-9.]+ GFLOP/s' -- tune "${mm32[@]}" --trials 4 --batch 4 --min-time 0.005 --db "$tdb" --seed 2 --epsilon 1
expect 0 '12 found in the store' -- tune "${mm32[@]}" --trials 4 --batch 4 --min-time 0.005 --db "$tdb" --seed 3 --jobs 1
expect 0 'GFLOP/s' -- best "${mm32[@]}" --db "$tdb"
expect 0 'C: relative error .* ok' -- run "${mm32[@]}" --db "$tdb"
expect 0 'records: 16 \(16 ok' -- db info --db "$tdb"
expect 0 "5 of the 16 records of other workloads in the store train a prior" -- tune matmul --set M=16,N=16,K=16 --trials 4 --batch 4 --min-time 0.005 --db "$tdb" --other-records 5 --verbose
# the run-off: the fastest records measured again together; its winner
# is the best from then on, and --runoff 0 holds none
expect 0 'run-off: the 8 fastest records measured again together, [0-9]+ failed; #[0-9]+ won at [0-9.e-]+ ms \(recorded at [0-9.e-]+ ms\)' -- tune "${mm32[@]}" --trials 4 --batch 4 --min-time 0.005 --db "$tdb" --seed 4
expect 0 "the run-off's winner at [0-9.e-]+ ms" -- best "${mm32[@]}" --db "$tdb"
# ... measured by this build, which says its commit, so no note
out=$("$tessel" best "${mm32[@]}" --db "$tdb" 2>&1)
if grep -qE '^record: .* by tessel [0-9.]+\+[0-9a-z-]+$' <<<"$out" && ! grep -q '^note: this is tessel' <<<"$out"; then ok; else
	bad "best of this build's records: $out"; fi
expect 0 '"runoff_s": [0-9.e-]+, ' -- best "${mm32[@]}" --db "$tdb" --json
# ... with the key of the code it ran, which this build makes again; a
# record whose code key says other code is told apart
expect 0 '"code_key": "[0-9a-f]{32}", "code": "same"' -- best "${mm32[@]}" --db "$tdb" --json
"$tessel" db export --db "$tdb" --out "$work/tune.jsonl" >/dev/null 2>&1
sed -E 's/"code_key":"[0-9a-f]{32}"/"code_key":"0123456789abcdef0123456789abcdef"/; s/"tessel_version":"[^"]*"/"tessel_version":"0.0.1"/' "$work/tune.jsonl" > "$work/other-code.jsonl"
expect 0 '[1-9][0-9]* added, 0 skipped' -- db import "$work/other-code.jsonl" --db "$work/other-code.db"
expect 0 '^note: this build \(tessel [^)]+\) makes other code of the trace than the record measured' -- best "${mm32[@]}" --db "$work/other-code.db"
expect 0 '"code": "other"' -- best "${mm32[@]}" --db "$work/other-code.db" --json
expect 0 'best record #[0-9]+ from .*other-code.db \(median [0-9.e-]+ ms, measured by tessel 0\.0\.1; this build makes other code of it\)' -- run "${mm32[@]}" --db "$work/other-code.db"
# ... and a search measures such records again first, in place
others_of() {
	"$tessel" db info --db "$1" 2>/dev/null |
		sed -nE 's/^measured by other builds than this \(tessel [^)]+\): ([0-9]+)$/\1/p'
}
before=$(others_of "$work/other-code.db")
expect 0 '20 found in the store \(this build makes other code of 20 of them; 4 measured again\)' -- tune "${mm32[@]}" --trials 4 --batch 4 --min-time 0.005 --db "$work/other-code.db" --runoff 0
after=$(others_of "$work/other-code.db")
if [ -n "$before" ] && [ "$after" = "$((before - 4))" ]; then ok; else
	bad "records of other builds before and after measuring 4 again: '$before', '$after'"; fi
expect 0 'run-offs: [1-9]' -- db info --db "$tdb"
expect 0 '32\]\) -> C on #1: 20 records \(0 failed\), best [0-9.e-]+ ms \([0-9.]+ GFLOP/s\) in the run-off' -- db info --db "$tdb"
expect 0 'best record #[0-9]+ from .* \(median [0-9.e-]+ ms in the run-off\)' -- run "${mm32[@]}" --db "$tdb"
expect 0 'wrote .*tune.html' -- report --db "$tdb" --out "$work/tune.html"
if grep -qF 'the winner of the latest run-off, with its time there' "$work/tune.html"; then ok; else bad "tune.html does not name the run-off's winner"; fi
out=$(timeout 60 "$tessel" tune "${mm32[@]}" --trials 4 --batch 4 --min-time 0.005 --db "$tdb" --seed 5 --runoff 0 2>&1)
if [ $? -eq 0 ] && grep -q '^best: ' <<<"$out" && ! grep -q 'run-off' <<<"$out"; then
	ok
else
	bad "tessel tune --runoff 0 held a run-off or failed: $out"
fi
expect 0 'tune: run-off: measuring at most 3 of the fastest records again together$' -- tune matmul --set M=16,N=16,K=8 --trials 4 --batch 4 --min-time 0.005 --db "$work/runoff.db" --runoff 3
expect 1 "--runoff expects an integer in 0..64, got '-1'" -- tune "${mm32[@]}" --trials 4 --runoff -1 --db "$tdb"
expect 1 "--other-records expects an integer in 0..1000000, got '-1'" -- tune "${mm32[@]}" --trials 4 --other-records -1 --db "$tdb"
expect 0 'round 6: [0-9]+ candidates evolved in [0-9.]+ s, 8 ordered by their code' -- tune "${mm32[@]}" --trials 24 --batch 4 --min-time 0.005 --db "$work/shortlist.db" --shortlist 2 --verbose
OBJDUMP=/bin/false expect 0 'the compiled code of [0-9]+ candidates so far could not be read.*/bin/false failed' -- tune matmul --set M=20,N=20,K=20 --trials 8 --batch 4 --min-time 0.005 --db "$work/unread.db" --shortlist 2 --verbose
expect 1 "--shortlist expects an integer in 0..64, got '-1'" -- tune "${mm32[@]}" --trials 4 --shortlist -1 --db "$tdb"
# a space smaller than the trials asked for: the search says it is covered
expect 0 'stopped: the search space has no program left that was not measured' -- tune transpose --set 'shape=[4,4],perm=[1,0]' --trials 200 --min-time 0.005 --db "$work/covered.db"
expect 1 "--trials expects an integer in 1..1000000, got '0'" -- tune "${mm32[@]}" --trials 0 --db "$tdb"
expect 1 "--trials expects an integer in 1..1000000, got '-3'" -- tune "${mm32[@]}" --trials -3 --db "$tdb"
expect 1 'missing --trials' -- tune "${mm32[@]}" --db "$tdb"
expect 1 "--timeout expects a number of seconds, got '-1'" -- tune "${mm32[@]}" --trials 4 --timeout -1 --db "$tdb"
expect 1 'timeout must be positive' -- tune "${mm32[@]}" --trials 4 --timeout 0 --db "$tdb"
expect 1 "--epsilon expects a number in \\[0, 1\\], got '1.5'" -- tune "${mm32[@]}" --trials 4 --epsilon 1.5 --db "$tdb"
expect 1 "--passes expects an integer in 1..100, got '0'" -- tune "${mm32[@]}" --trials 4 --passes 0 --db "$tdb"
expect 1 "--jobs expects an integer in 1..1024, got '0'" -- tune "${mm32[@]}" --trials 4 --jobs 0 --db "$tdb"
expect 1 "unknown target" -- tune "${mm32[@]}" --trials 4 --target tpu --db "$tdb"
expect 1 'tessel cannot measure on CUDA here: CUDA driver not found \(libcuda.so.1\)' -- tune "${mm32[@]}" --trials 4 --target cuda:sm_80 --db "$work/cuda.db"
expect 1 'unknown CUDA architecture sm_1000' -- tune "${mm32[@]}" --trials 4 --target cuda:sm_1000 --db "$work/cuda.db"
expect 1 "random.db is not an SQLite database" -- tune "${mm32[@]}" --trials 4 --db "$work/random.db"
if cmp -s "$work/random.db" "$work/random.orig"; then ok; else bad "tune changed random.db"; fi
idb=$work/interrupted.db
"$tessel" tune matmul --set M=64,N=48,K=32 --trials 100000 --early-stop 0 --batch 4 \
	--min-time 0.005 --db "$idb" >"$work/int.out" 2>&1 &
tpid=$!
for _ in $(seq 1 300); do
	n=$("$tessel" db info --db "$idb" 2>/dev/null | sed -n 's/^records: \([0-9]*\).*/\1/p')
	[ "${n:-0}" -ge 8 ] && break
	sleep 0.1
done
kill -INT "$tpid"
wait "$tpid"
rc=$?
if [ "$rc" -eq 130 ] && grep -q 'interrupted: every measured batch is committed' "$work/int.out"; then
	ok
else
	bad "tune after SIGINT exited $rc: $(cat "$work/int.out")"
fi
# Every candidate measured is committed, and only those: a batch the
# interrupt cut short keeps its measured part (what the search counted),
# so the store need not hold whole batches.
n=$("$tessel" db info --db "$idb" 2>/dev/null | sed -n 's/^records: \([0-9]*\).*/\1/p')
measured=$(sed -n 's/^trials: \([0-9]*\) measured.*/\1/p' "$work/int.out")
if [ "${n:-0}" -ge 8 ] && [ "${n:-0}" = "${measured:-none}" ]; then ok; else
	bad "interrupted store holds $n records, the tuner measured ${measured:-?}"; fi
expect 0 'trials: 4 measured' -- tune matmul --set M=64,N=48,K=32 --trials 4 --batch 4 --min-time 0.005 --db "$idb"

# Sums in groups (dot_pairs, dot_quads): every candidate of a short tuning
# run of a bf16 and of two quantized matmuls (i8, u8 with i8 weights) that
# carries one computes the op, where the CPU has the instructions: AVX512
# BF16 and VNNI, or AVX2 without AVX-512 (pairs of 8-bit integers).
group_specs=()
if grep -qw avx512_bf16 /proc/cpuinfo && grep -qw avx512_vnni /proc/cpuinfo; then
	group_specs=(M=48,N=64,K=40,dtype=bf16 M=48,N=64,K=40,dtype=i8,out_dtype=i32
		M=48,N=64,K=40,dtype=u8,weight_dtype=i8,out_dtype=i32)
elif grep -qw avx2 /proc/cpuinfo && ! grep -qw avx512f /proc/cpuinfo; then
	group_specs=(M=48,N=64,K=40,dtype=i8,out_dtype=i32
		M=48,N=64,K=40,dtype=u8,weight_dtype=i8,out_dtype=i32)
else
	echo "skip: sums in groups (this CPU has neither AVX512 BF16 and VNNI nor AVX2 alone)"
fi
if [ "${#group_specs[@]}" -gt 0 ]; then
	for spec in "${group_specs[@]}"; do
		gdb="$work/groups.db"
		rm -f "$gdb" "$work"/group-*.trace
		"$tessel" tune matmul --set "$spec" --trials 24 --seed 2 --min-time 0.002 \
			--db "$gdb" >/dev/null 2>&1
		"$tessel" db export --db "$gdb" --out "$work/groups.jsonl" 2>/dev/null
		python3 - "$work/groups.jsonl" "$work" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    trace = json.loads(line).get("trace", "")
    if "dot_pairs" in trace or "dot_quads" in trace:
        with open("%s/group-%d.trace" % (sys.argv[2], n), "w") as f:
            f.write(trace)
        n += 1
PY
		traces=("$work"/group-*.trace)
		if [ -e "${traces[0]}" ]; then ok; else bad "no candidate of matmul $spec sums in groups"; fi
		for t in "${traces[@]}"; do
			[ -e "$t" ] && expect 0 ': relative error .* ok' -- run matmul --set "$spec" --sched "$t" --min-time 0.001
		done
	done
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
