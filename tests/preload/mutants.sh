#!/bin/bash
# Each mutant breaks the shim's sources (preload/*.c) once; the tests must
# fail on every one (a mutant that passes is a test that checks nothing).
# Built in a temporary directory: the tree's objects are not touched.  A
# mutant's sed runs on every file; the files it changed are compiled
# again and linked, as preload/Makefile does, with the others' objects.
# Usage: mutants.sh (from make -C preload check-mutants); ONLY=REGEX: some of them
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d /tmp/nxqp-mut.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-cc}
inc="-I$top/include -I$top/include/uapi -I$top/lib -I$top/preload -D_GNU_SOURCE"
pflags="-O2 -fPIC -fvisibility=hidden -pthread -foptimize-sibling-calls"
survived=0
n=0

# One mutant in its own directory $tmp/m$n: the verdict line in res, 1 in
# surv when it survived (or did not apply), fatal when it could not be built.
run_one() { # n name expr what
	d="$tmp/m$1"
	mkdir -p "$d"
	echo 0 > "$d/surv"
	changed=0
	objs=
	for src in "$top"/preload/*.c; do
		b=$(basename "$src" .c)
		sed "$3" "$src" > "$d/$b.c" || { echo "mutant $2: sed failed" > "$d/res"; : > "$d/fatal"; return; }
		if cmp -s "$d/$b.c" "$src"; then
			objs="$objs $tmp/base/$b.o"
			continue
		fi
		changed=$((changed + 1))
		if ! $CC $pflags $inc -c -o "$d/$b.o" "$d/$b.c"; then
			echo "mutant $2: build failed" > "$d/res"; : > "$d/fatal"; return
		fi
		objs="$objs $d/$b.o"
	done
	if [ "$changed" = 0 ]; then
		echo "mutant $2: did not apply (the source changed?)" > "$d/res"
		echo 1 > "$d/surv"
		return
	fi
	# shellcheck disable=SC2086
	$CC -nostdlib -r -o "$d/preload.o" $objs ||
		{ echo "mutant $2: link failed" > "$d/res"; : > "$d/fatal"; return; }
	if [ "$4" != test ]; then
		$CC -O2 -shared -Wl,--version-script="$top/preload/preload.map" -o "$d/libnxquota-preload.so" \
			"$d/preload.o" "$top/lib/libnxquota.a" -ldl -pthread ||
			{ echo "mutant $2: link failed" > "$d/res"; : > "$d/fatal"; return; }
		timeout 180 "$here/$4.sh" "$d/libnxquota-preload.so" >"$d/out" 2>&1
		st=$?
		if grep -q "skipped" "$d/out"; then
			echo "mutant $2: not run ($(grep -m1 skipped "$d/out"))" > "$d/res"
		elif [ $st = 0 ]; then
			echo "mutant $2: SURVIVED" > "$d/res"; echo 1 > "$d/surv"
		else
			echo "mutant $2: killed ($(grep -m1 FAIL "$d/out"))" > "$d/res"
		fi
		return
	fi
	$CC -rdynamic -o "$d/t" "$tmp/test_preload.o" "$d/preload.o" \
		"$top/lib/libnxquota.a" -lcmocka -ldl -pthread ||
		{ echo "mutant $2: link failed" > "$d/res"; : > "$d/fatal"; return; }
	if CMOCKA_TEST_ABORT=0 LD_LIBRARY_PATH="$top/tests/fakecuda:$here/nvml" timeout 60 "$d/t" >"$d/out" 2>&1; then
		echo "mutant $2: SURVIVED" > "$d/res"; echo 1 > "$d/surv"
	else
		echo "mutant $2: killed ($(grep -m1 -E 'FAILED  \] test|Timeout|ERROR' "$d/out" || echo "exit status"))" > "$d/res"
	fi
}

# name~sed expression on preload/*.c~what runs (test: test_preload, app: app.sh,
# py: py.sh, the .so against nxquotad with a fake torch.cuda; daemon: daemon.sh
# with its per-pair counts; budget: budget.sh, issue 20 against nxquotad --
# the last three root only, else not run).  The test_preload
# mutants run $MUTANT_JOBS (6) at a time, each in its own directory (the
# fake driver and a mkstemp file are all they share): they mostly wait on
# the tests' timers, so on 2 cores 6 at a time take half the time of one.
# The others, which start nxquotad or an application, run one at a time.
JOBS=${MUTANT_JOBS:-6}
running=0
# the test program once; each mutant links it with its own preload.o
$CC -O2 $inc -c -o "$tmp/test_preload.o" "$here/test_preload.c" || exit 1
# the unchanged files' objects, once
mkdir -p "$tmp/base"
for src in "$top"/preload/*.c; do
	$CC $pflags $inc -c -o "$tmp/base/$(basename "$src" .c).o" "$src" || exit 1
done
while IFS='~' read -r name expr what; do
	[ -n "$name" ] || continue
	# ONLY=REGEX: only the mutants whose names match
	[ -z "${ONLY:-}" ] || echo "$name" | grep -qE "$ONLY" || continue
	n=$((n + 1))
	if [ "$what" = test ] && [ "$JOBS" -gt 1 ]; then
		if [ "$running" -ge "$JOBS" ]; then
			wait -n
			running=$((running - 1))
		fi
		run_one "$n" "$name" "$expr" "$what" &
		running=$((running + 1))
	else
		wait
		running=0
		run_one "$n" "$name" "$expr" "$what"
	fi
done <<'MUT'
no-depth-guard~s/^\tif (depth)$/\tif (0)/~test
charge-after-driver~/^EXPORT CUresult cuMemAlloc_v2/,/^}/{s/^\tif (charge_plain(ord, bytesize, \&holder))$/\tif (0)/;s/^\tcr = f(dptr, bytesize);$/\tcr = f(dptr, bytesize); if (!cr \&\& charge_plain(ord, bytesize, \&holder)) return CUDA_ERROR_OUT_OF_MEMORY;/}~test
free-keeps-charge~s/^\t\t\trelease_tracked(K_PTR, e);$/\t\t\tfree(e);/~test
release-keeps-charge~s/^\t\t\trelease_tracked(K_HANDLE, e);\t\/\* not mapped: its memory is gone \*\/$/\t\t\tfree(e);/~test
no-getprocaddress-swap~s/^\t\*pfn = wrapper\[i\];$/\t(void)0;/~test
no-dlsym-swap~s/^\t\t\treturn wrapper\[i\];$/\t\t\treturn p;/~test
dlsym-not-tail-call~s/^\treturn real_dlsym(handle, name);$/\tvoid *volatile r = real_dlsym(handle, name); return r;/~app
pool-charged-per-block~s/^\tif (pool_settle(p, 1, cr ? 0 : (size + POOL_STEP - 1) \/ POOL_STEP \* POOL_STEP)) {$/\tif (0) {/~test
trim-keeps-charge~/^EXPORT CUresult cuMemPoolTrimTo/,/^}/s/^\t\tpool_settle(p, 0, 0);$/\t\t;/~test
ticket-answers-zero~s/^\t\treleased = pools_trim(ord);$/\t\treleased = 0; pools_trim(ord);/~test
pool-holder-no-eventfd~s/^\tif ((kind == H_POOL || py_torch_locked() > 0) \&\& (S.ctx->features \& NXQ_FEAT_TICKETS) \&\&$/\tif (0 \&\&/~test
plain-holder-eventfd~s/^\tif ((kind == H_POOL || py_torch_locked() > 0) \&\& (S.ctx->features \& NXQ_FEAT_TICKETS) \&\&$/\tif ((S.ctx->features \& NXQ_FEAT_TICKETS) \&\&/~test
no-fork-reset~s/^\tpthread_atfork(fork_prepare, fork_parent, fork_child);$/\tpthread_atfork(fork_prepare, fork_parent, NULL);/~test
no-authority-not-kept~s/^\t__atomic_store_n(\&S.state, st, __ATOMIC_RELEASE);$/\t__atomic_store_n(\&S.state, st > 0 ? st : 0, __ATOMIC_RELEASE);/~test
unknown-device-refused~s/^\t} else if (r == -ENOENT || r == -ENODEV) {$/\t} else if (0) {/~test
exempt-ignored~s/^\texempt = !!on;$/\t(void)on;/~test
batch-refusal-not-exact~/^int plain_take/,/^}/s/^\tif (!charge(ord, H_PLAIN, d->holder, need, bytes))$/\tif (0)/~test
ticket-no-sync~s/^\treturn sync() ? -1 : 0;$/\treturn 0;/~test
ticket-sync-no-context~s/^\tif (push(c)) {$/\tif (0) {/~test
rollback-no-sync~s/^\t\tif (!cr \&\& sync)$/\t\tif (0)/~test
credit-not-kept~s/^\twhile (cur > keep) {$/\tkeep = 0; while (cur > keep) {/~test
credit-keeps-batch-only~s/^\tkeep = S.batch + __atomic_load_n(\&d->last, __ATOMIC_RELAXED);$/\tkeep = S.batch;/~test
pool-settles-exactly~s/^\tif (pool_settle(p, 1, cr ? 0 : (size + POOL_STEP - 1) \/ POOL_STEP \* POOL_STEP)) {$/\tif (pool_settle(p, 1, 0)) {/~test
ticket-keeps-credit~s/^\t\tplain_drop_credit(ord);$/\t\t;/~test
one-device-always~s/^\tif (one > 0)$/\tif (1)/~test
one-device-never~s/^\t\t\tone = n == 1;$/\t\t\tone = 0;/~test
pool-used-not-bounded~s/^\tused = p->used_ub < p->reserved ? p->used_ub : p->reserved;$/\tused = 0;/~test
pool-used-bound-stale~s/^\t\tp->used_ub = used + size > used ? used + size : UINT64_MAX;$/\t\t;/~test
pool-used-bound-never~s/^\t\tp->used_ub = used + size > used ? used + size : UINT64_MAX;$/\t\tp->used_ub = UINT64_MAX;/~daemon
py-plain-no-eventfd~s/^\tif ((kind == H_POOL || py_torch_locked() > 0) \&\& (S.ctx->features \& NXQ_FEAT_TICKETS) \&\&$/\tif (kind == H_POOL \&\& (S.ctx->features \& NXQ_FEAT_TICKETS) \&\&/~py
py-any-python~s/^\t\treturn 0;\t\/\* Python without PyTorch's CUDA allocator \*\/$/\t\treturn S.py_torch = 1;/~py
py-frees-not-answered~s/^\treleased = d->collected;$/\treleased = credit;/~py
py-wait-unbounded~s/^\t\tif (now >= until)$/\t\tif (0)/~py
py-no-empty-cache~s/^\t\t\tr = P.call_method(m, "empty_cache", NULL);$/\t\t\tr = NULL;/~py
meminfo-free-unclamped~s/^\tif (room < \*freep)$/\tif (0)/~test
meminfo-total-unclamped~s/^\tif (st.limit < \*totalp)$/\tif (0)/~test
meminfo-credit-not-free~s/^\troom = st.room + __atomic_load_n(\&S.dev\[ord\].credit, __ATOMIC_RELAXED);$/\troom = st.room;/~test
meminfo-v1-as-v2~s/^\t\treturn ver >= 3020 ? R_cuMemGetInfo_v2 : R_cuMemGetInfo;$/\t\treturn R_cuMemGetInfo_v2;/~test
totalmem-unclamped~s/^\tif (total_clamp(dev, \&tot))$/\tif (0)/~test
totalmem-v1-unclamped~s/^\t\t\*bytes = (unsigned int)tot;$/\t\t;/~test
totalmem-current-device~s/^\treturn budget_clamp(dev, \&fr, totalp);$/\treturn budget_clamp(cur_dev(), \&fr, totalp);/~test
totalmem-v1-as-v2~s/^\t\treturn ver >= 3020 ? R_cuDeviceTotalMem_v2 : R_cuDeviceTotalMem;$/\t\treturn R_cuDeviceTotalMem_v2;/~test
nvml-not-clamped~s/^\tif (ord < 0 || !budget_clamp(ord, \&fr, \&tot))$/\tif (1)/~test
nvml-dlsym-not-wrapped~s/ \&\& (name\[0\] != 'n' || name\[1\] != 'v')))$/))/~test
refusal-size-rounded-up~s/^\treturn nxq_size_format(v, NXQ_SIZE_IEC, buf, n);$/\tsnprintf(buf, n, "%.1f KiB", (double)v \/ 1024); return buf;/~test
refusal-not-said~s/^\t\trefusal_say(ord, kind, bytes, asked, r, S.wait_ns ? now_ns() - t0 : 0, \&why);$/\t\t;/~test
refusal-not-rate-limited~s/^\tif ((last \&\& now - last < S.gap_ns) ||$/\tif (0 ||/~test
refusal-node-unnamed~s/^\tif (why->path\[0\])$/\tif (0)/~test
refusal-guarantee-unseen~s/^\t\tint guarantee = why->reason == NXQ_REFUSED_MIN;$/\t\tint guarantee = 0;/~test
refusal-credit-unsaid~s/^\tif (asked \&\& asked != bytes)\t\/\* the rest was charged already (the credit) \*\/$/\tif (0)/~test
refusal-not-quiet~s/^\tif (S.quiet)$/\tif (0)/~test
refusal-wait-unsaid~s/^\telse if (S.wait_ns \&\& waited_ns < S.wait_ns)$/\telse if (0)/~test
require-passes~/^int charge_plain/,/^}/s/^\t\tif (S.require) {$/\t\tif (0) {/~test
require-unknown-device-passes~s/^\tif ((r == -ENOENT || r == -ENODEV) \&\& S.require) {$/\tif (0) {/~test
down-for-life~s/^\t\tif (!authority_open(\&ctx))$/\t\tif (0 \&\& !authority_open(\&ctx))/~test
down-not-remembered~s/^\t\t\t\*holderp = PENDING;\t.*$/\t\t\tdown_end(); return 0;/~test
catch-up-forgets-released-handles~s/^\t\t\t\tstruct ent \*a = k == K_MAP ? e->h : e;$/\t\t\t\tstruct ent *a = e;/~test
catch-up-no-pools~s/^\tfor (int i = 0; first \&\& i < MAXPOOL; i++) {$/\tfor (int i = 0; 0 \&\& i < MAXPOOL; i++) {/~test
catch-up-trim-keeps-charge~s/^\t\t\t\tuncharge(d->pholder, rel);$/\t\t\t\t;/~test
catch-up-context-lost~s/^\t\t\*pend = 1;$/\t\t*pend = 0;/~test
owed-not-first~/^int plain_take/,/^}/s/^\tif (owed_first(ord))$/\tif (0)/~test
free-not-paying-owed~/^void plain_give/,/^}/s/^\tif (__builtin_expect(__atomic_load_n(\&d->owed, __ATOMIC_RELAXED) != 0, 0)) {$/\tif (0) {/~test
no-connect-wait~/^int authority_down/,/^}/s/^\tif (!until)$/\tif (1)/~test
connector-busy-loop~s/^\t\tdelay = delay \* 2 < S.gap_ns ? delay \* 2 : S.gap_ns;$/\t\tdelay = 0;/~test
vmm-release-uncharges-mapped~s/^\t\telse if (__atomic_fetch_or(\&e->hst, 1, __ATOMIC_ACQ_REL) == 0)$/\t\telse if (__atomic_fetch_or(\&e->hst, 1, __ATOMIC_ACQ_REL) < 99)/~test
vmm-map-not-counted~s/^\t\t\t__atomic_add_fetch(\&e->hst, 2, __ATOMIC_RELAXED);$/\t\t\t;/~test
vmm-last-unmap-keeps~s/^\tif (__atomic_sub_fetch(\&h->hst, 2, __ATOMIC_ACQ_REL) == 1)$/\tif (__atomic_sub_fetch(\&h->hst, 2, __ATOMIC_ACQ_REL) == 99)/~test
vmm-unmap-first-only~s/^\t\tp += m->bytes;$/\t\tbreak;/~test
vmm-failed-map-keeps~s/^\t\tif (__atomic_sub_fetch(\&h->hst, 2, __ATOMIC_ACQ_REL) == 1)$/\t\tif (__atomic_sub_fetch(\&h->hst, 2, __ATOMIC_ACQ_REL) == 99)/~test
pool-current-device~s/^\tord = stream_dev(s);$/\tord = stream_dev(NULL);/~test
ctx-refused-kept~s/^\t\tif (ctx_charge(dev, bytes, \&pend)) {$/\t\tif (ctx_charge(dev, bytes, \&pend) \&\& 0) {/~test
ctx-env-ignored~s/^\tS.charge_ctx = env_on("NXQUOTA_CHARGE_CONTEXT", 1);$/\tS.charge_ctx = 1;/~test
ctx-no-nvml~s/^\tif (!free_nvml(ord, \&m->before)) {$/\tif (0) {/~test
ctx-release-keeps~s/^\t\tctx_uncharge(ord, S.dev\[ord\].prim_bytes - S.dev\[ord\].prim_pend);$/\t\t;/~test
ctx-destroy-keeps~s/^\t\t\t\tctx_uncharge(e->dev, e->bytes);$/\t\t\t\t;/~test
ctx-charged-twice~s/^\tif (!state || !release || state(dev, \&fl, \&active) || active) {$/\tif (!state || !release || state(dev, \&fl, \&active)) {/~test
ctx-own-ignored~s/^\tint mine = m->own \&\& !own_nvml(ord, \&own) \&\& own;$/\tint mine = 0;/~test
ctx-unbounded~s/^\tif (d > S.ctx_max) {$/\tif (0) {/~test
ctx-max-env-ignored~s/^\tif (nxq__env_size("NXQUOTA_CONTEXT_MAX", \&S.ctx_max) < 0) {$/\tif (0) {/~test
batch-not-probe~s/^\t\tif (!nxq__charge_probe(S.ctx, d->holder, need + S.batch)) {$/\t\tif (!S.ctx->kops->charge(S.ctx, d->holder, need + S.batch, 0, NULL)) {/~test
unplaced-passes~s/^\t\tif (!S.require) {$/\t\tif (1) {/~test
MUT
wait
i=1
while [ "$i" -le "$n" ]; do
	cat "$tmp/m$i/res" 2>/dev/null || echo "mutant $i: no verdict"
	[ -e "$tmp/m$i/fatal" ] && exit 1
	[ "$(cat "$tmp/m$i/surv" 2>/dev/null || echo 1)" = 0 ] || survived=$((survived + 1))
	i=$((i + 1))
done
echo "mutants: $n, survived: $survived"
[ "$survived" -eq 0 ]
