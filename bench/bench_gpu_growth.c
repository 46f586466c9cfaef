// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * bench_gpu, figure 2: growth per GiB.  nxq growing an empty arena by
 * 1 GiB (64 MiB with --short), host time scaled to 1 GiB: in one
 * allocation, and in 16 MiB allocations with the default grow_batch, with
 * grow_batch 1 GiB, and with grow_min 1 GiB too; each with the handles it
 * created and where its time went (first allocation, the rest, minor page
 * faults).  The baselines: one cuMemAlloc of it all (what cudaMalloc
 * does), cuMemAlloc in 16 MiB pieces, one big handle (cuMemCreate +
 * cuMemMap + cuMemSetAccess of the whole GiB, also in a 64 GiB
 * reservation), 64 MiB handles and one handle per 2 MiB granule.
 *
 * The one verdict (not with --short): nxq with grow_min 1 GiB, in 16 MiB
 * pieces, within 1.2x of both one cuMemAlloc and one big handle, the
 * medians of per-round ratios over 31 side-by-side rounds.
 */
#include <stdint.h>
#include <sys/resource.h>

#include "bench_gpu.h"

/* Where a growth's time goes: its first allocation, the rest, page faults. */
struct growth_split {
	double first, rest;	/* medians over reps, seconds, unscaled */
	double faults;		/* minor page faults in the timed loop, median */
};

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/*
 * nxq growing a fresh arena by total bytes in piece-byte allocations, with
 * grow_batch batch (0: the default) and grow_min gmin (0: the default);
 * *handles: the handles (growths) it took; *sp (may be NULL): the split.
 */
static double growth_nxq(struct nxq_ctx *c, uint64_t total, uint64_t piece, uint64_t batch,
			 uint64_t gmin, int reps, uint64_t *handles, struct growth_split *sp)
{
	double v[16], vf[16], vr[16], vp[16];
	void **ps = calloc(total / piece + 1, sizeof(*ps));

	for (int r = 0; r < reps + 1; r++) {
		struct nxq_arena *a = cuda_arena_min(c, batch, NXQ_OPT_ZERO, NXQ_OPT_ZERO, gmin);
		struct nxq_stats s = { .size = sizeof(s) };
		uint64_t n = total / piece;
		long f0 = minflt();
		double t = now(), t1 = 0;

		for (uint64_t i = 0; i < n; i++) {
			NX(nxq_alloc(a, piece, 0, &ps[i]));
			if (!i)
				t1 = now();
		}
		if (r) {
			double t2 = now();

			v[r - 1] = (t2 - t) * (double)(1ULL << 30) / (double)total;
			vf[r - 1] = t1 - t;
			vr[r - 1] = t2 - t1;
			vp[r - 1] = (double)(minflt() - f0);
		}
		NX(nxq_arena_stats(a, &s));
		*handles = s.grows;
		for (uint64_t i = 0; i < n; i++)
			NX(nxq_free(a, ps[i]));
		nxq_arena_destroy(a);
	}
	free(ps);
	if (sp) {
		sp->first = median(vf, reps);
		sp->rest = median(vr, reps);
		sp->faults = median(vp, reps);
	}
	return median(v, reps);
}

/* cuMemAlloc of total in pieces of piece bytes (one piece: one cudaMalloc of it all). */
static double growth_cumemalloc(uint64_t total, uint64_t piece, int reps)
{
	uint64_t n = total / piece;
	CUdeviceptr *p = calloc(n, sizeof(*p));
	double v[16];

	for (int r = 0; r < reps + 1; r++) {
		double t = now();

		for (uint64_t i = 0; i < n; i++)
			CU(cu->cuMemAlloc(&p[i], piece));
		if (r)
			v[r - 1] = (now() - t) * (double)(1ULL << 30) / (double)total;
		for (uint64_t i = 0; i < n; i++)
			CU(cu->cuMemFree(p[i]));
	}
	free(p);
	return median(v, reps);
}

/* One cuCtxPushCurrent + cuCtxPopCurrent of the primary context (the backend's per call). */
static double push_pop_pair(void)
{
	double v[16];

	for (int r = 0; r < 8; r++) {
		double t = now();
		CUcontext x;

		for (int i = 0; i < 1000; i++) {
			cu->cuCtxPushCurrent(pctx);
			cu->cuCtxPopCurrent(&x);
		}
		v[r] = (now() - t) / 1000;
	}
	return median(v, 8);
}

/*
 * handle bytes per handle: create + map each, set access per 64 MiB (or the
 * handle), in a reservation of va bytes (0: just total).
 */
static double growth_handles_va(CUdevice dev, uint64_t total, uint64_t handle, uint64_t g,
				int reps, uint64_t va)
{
	CUmemAllocationProp prop = { 0 };
	CUmemAccessDesc acc = { 0 };
	uint64_t nh = total / handle, per = handle >= (64ULL << 20) ? 1 : (64ULL << 20) / handle;
	CUmemGenericAllocationHandle *h = calloc(nh, sizeof(*h));
	CUdeviceptr base;
	double v[16];

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (per > nh)
		per = nh;
	for (int r = 0; r < reps + 1; r++) {
		double t;

		/* a fresh VA range each time, untimed, as an arena reserves its own */
		CU(cu->cuMemAddressReserve(&base, va ? va : total, g, 0, 0));
		t = now();

		for (uint64_t i = 0; i < nh; i++) {
			CU(cu->cuMemCreate(&h[i], handle, &prop, 0));
			CU(cu->cuMemMap(base + i * handle, handle, 0, h[i], 0));
			if ((i + 1) % per == 0)
				CU(cu->cuMemSetAccess(base + (i + 1 - per) * handle, per * handle,
						      &acc, 1));
		}
		if (r)
			v[r - 1] = (now() - t) * (double)(1ULL << 30) / (double)total;
		for (uint64_t i = 0; i < nh; i++) {
			CU(cu->cuMemUnmap(base + i * handle, handle));
			CU(cu->cuMemRelease(h[i]));
		}
		CU(cu->cuMemAddressFree(base, va ? va : total));
	}
	free(h);
	return median(v, reps);
}

static double growth_handles(CUdevice dev, uint64_t total, uint64_t handle, uint64_t g, int reps)
{
	return growth_handles_va(dev, total, handle, g, reps, 0);
}

/*
 * Figure 2 on device dev, in arenas of context c (g: its granule): prints
 * the rows, then the side-by-side rounds and their PASS or FAIL line.
 */
void growth_per_gib(struct nxq_ctx *c, CUdevice dev, uint64_t g, int reps)
{
	const uint64_t total = short_run ? (64ULL << 20) : (1ULL << 30);
	const uint64_t piece = 16ULL << 20;
	static const struct {
		const char *name;
		uint64_t piece, batch;
		int gmin;	/* grow_min = the total (1 GiB) */
	} cf[] = {
		{ "one allocation of it all, defaults", 0, 0, 0 },
		{ "16 MiB pieces, defaults (grow_batch 64 MiB)", 1, 0, 0 },
		{ "16 MiB pieces, grow_batch 1 GiB", 1, 1ULL << 30, 0 },
		{ "16 MiB pieces, grow_batch 1 GiB, grow_min = it all", 1, 1ULL << 30, 1 },
	};
	double tg[4], cm, cm16, big, big_va, h64, small, pp;
	struct growth_split sp[4];
	uint64_t nh[4];

	for (int i = 0; i < 4; i++)
		tg[i] = growth_nxq(c, total, cf[i].piece ? piece : total, cf[i].batch,
				  cf[i].gmin ? total : NXQ_OPT_ZERO, reps,
				  &nh[i], &sp[i]);
	cm = growth_cumemalloc(total, total, reps);
	cm16 = growth_cumemalloc(total, piece, reps);
	big = growth_handles(dev, total, total, g, reps);
	big_va = growth_handles_va(dev, total, total, g, reps, 64ULL << 30);
	pp = push_pop_pair();
	h64 = growth_handles(dev, total, 64ULL << 20, g, reps);
	small = growth_handles(dev, total, g, g, reps);

	printf("  2. growth per GiB (%llu MiB grown from an empty arena, host time scaled "
	       "to 1 GiB, median; handles: physical handles created):\n",
	       (unsigned long long)(total >> 20));
	/*
	 * No verdict per row: these are timed one after the other, and
	 * the driver's own time moves 2x between minutes on the H200;
	 * the one verdict is the side-by-side rounds' below.
	 */
	for (int i = 0; i < 4; i++) {
		printf("     nxq: %-48s %8.3f ms  %5.2fx cudaMalloc  %5.2fx big handle  "
		       "%3llu handles%s\n", cf[i].name, tg[i] * 1e3, tg[i] / cm, tg[i] / big,
		       (unsigned long long)nh[i],
		       cf[i].gmin ? "  (judged side by side below)" : "");
		printf("          first allocation %8.1f us, the other %llu %8.1f us (%.0f ns "
		       "each), %.0f minor page faults\n", sp[i].first * 1e6,
		       (unsigned long long)(total / (cf[i].piece ? piece : total) - 1),
		       sp[i].rest * 1e6,
		       cf[i].piece ? sp[i].rest * 1e9 / (double)(total / piece - 1) : 0.0,
		       sp[i].faults);
	}
	printf("     one cuMemAlloc (cudaMalloc) of it all       %9.3f ms\n", cm * 1e3);
	printf("     cuMemAlloc in 16 MiB pieces                 %9.3f ms  %5.2fx cudaMalloc\n",
	       cm16 * 1e3, cm16 / cm);
	printf("     one big handle: create + map + set access   %9.3f ms  %5.2fx cudaMalloc\n",
	       big * 1e3, big / cm);
	printf("     the same in a 64 GiB reservation (va_size)  %9.3f ms  %5.2fx big handle\n",
	       big_va * 1e3, big_va / big);
	printf("     (one cuCtxPushCurrent + cuCtxPopCurrent: %.0f ns; a growth makes three)\n",
	       pp * 1e9);
	printf("     64 MiB handles: create + map + set access   %9.3f ms  %5.2fx big handle\n",
	       h64 * 1e3, h64 / big);
	printf("     %llu MiB handles (one per granule)            %9.3f ms  %5.2fx big handle\n",
	       (unsigned long long)(g >> 20), small * 1e3, small / big);
	printf("     (targets: <= 1.2x cudaMalloc of the same total and <= 1.2x one big "
	       "handle; no module here: the real NXQ_IOC_CHARGE is one per handle, see 4.)\n");
	{
		/*
		 * The target, side by side: the driver's own time for the
		 * same work moves by 2x between minutes on the H200, so
		 * each round times the three in turn and the ratios are
		 * taken per round (the configuration meant to meet it;
		 * the defaults are reported above).  Each is a tenth of
		 * a millisecond of driver work, and where it stands in
		 * the round matters: on an H100, 9 rounds in a fixed
		 * order read 0.96x to 1.18x from one run to the next
		 * (one round 0.3x to 5x), and with the first place
		 * turning one round's ratio ranged 0.01x to 100x.  So 31
		 * rounds, each of the three first in a third of them,
		 * and the quartiles printed beside the median.
		 */
		enum { ROUNDS = 31 };
		double rc[ROUNDS], rb[ROUNDS], mc, mb;
		uint64_t h1;
		int met;

		for (int k = 0; k < ROUNDS; k++) {
			double gx = 0, m = 0, bh = 0;

			for (int j = 0; j < 3; j++) {
				switch ((j + k) % 3) {
				case 0:
					gx = growth_nxq(c, total, piece, 1ULL << 30, total, 1,
							&h1, NULL);
					break;
				case 1:
					m = growth_cumemalloc(total, total, 1);
					break;
				default:
					bh = growth_handles(dev, total, total, g, 1);
				}
			}

			rc[k] = gx / m;
			rb[k] = gx / bh;
		}
		mc = median(rc, ROUNDS);	/* sorts rc: the quartiles are at hand */
		mb = median(rb, ROUNDS);
		met = mc <= 1.2 && mb <= 1.2;
		printf("     side by side, %d rounds of (nxq with grow_min = it all, one "
		       "cuMemAlloc, one big handle), each first in turn:\n", ROUNDS);
		printf("       nxq / cudaMalloc %.2fx (quartiles %.2f..%.2f, rounds %.2f..%.2f), "
		       "nxq / big handle %.2fx (%.2f..%.2f, %.2f..%.2f)\n",
		       mc, rc[ROUNDS / 4], rc[3 * ROUNDS / 4], rc[0],
		       rc[ROUNDS - 1], mb, rb[ROUNDS / 4],
		       rb[3 * ROUNDS / 4], rb[0], rb[ROUNDS - 1]);
		if (!short_run)
			printf("%s growth per GiB in 16 MiB pieces with grow_min 1 GiB: %.2fx "
			       "cudaMalloc, %.2fx big handle, medians of per-round ratios "
			       "(target <= 1.2x both)\n", met ? "PASS" : "FAIL", mc, mb);
	}
}
