// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * replay: a PyTorch allocation trace through libnxquota's CUDA backend on
 * the fake libcuda.so.1 (tests/fakecuda), with the options the PyTorch
 * integration's tensor route uses, to measure the arena's peak mapped and
 * charged bytes without a GPU.
 *
 *   LD_LIBRARY_PATH=tests/fakecuda FAKECUDA_MEM=16384 \
 *	tests/lib/replay [options] TRACE[.gz]...
 *
 * A trace is one event a line, "action addr size stream", as
 * integrations/pytorch/bench captures them with
 * torch.cuda.memory._record_memory_history: alloc, free_requested,
 * free_completed, and the caching allocator's segment_map/segment_unmap
 * (expandable segments) or segment_alloc/segment_free (native); or as the
 * integration writes them with NXQ_TORCH_TRACE: alloc, free_completed and
 * "release 0 BYTES 0" (nxq_torch_release(): a trim by BYTES).  Each
 * alloc becomes nxq_alloc_async() on its stream, each free_completed
 * nxq_free_async() on it (the tensor route's default: async frees; --sync:
 * nxq_alloc/nxq_free); the segment events give the caching allocator's own
 * peak of mapped (or cudaMalloc'ed) memory on the same run.
 *
 * Options:
 *   --grow-batch N[K|M|G]  the arena's grow_batch (default 4M, the
 *                          integration's default)
 *   --sync                 plain nxq_alloc/nxq_free
 *   --chain                one arena for the traces in turn, as the
 *                          benchmark runs its workloads in one process:
 *                          what is live at the end of a trace stays, the
 *                          arena is trimmed, and the next trace's peaks
 *                          count above what is still mapped
 *   --check                exit 1 unless each trace's peak mapped is at
 *                          most the caching allocator's peak from its
 *                          segment events
 *   --max-mapped-mib N     exit 1 if a trace's peak mapped is above N MiB
 *                          (a bound measured elsewhere: on the GPU)
 *   --max-handles-per-gib X  exit 1 if more physical handles (cuMemCreate)
 *                          were created per GiB of peak mapped than X
 *
 * Prints one line per trace: events, live peak, the caching allocator's
 * peak, the arena's peak mapped and charged, handles created.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "nxquota.h"

#define MiB (1024.0 * 1024.0)

struct ent {
	uint64_t key;
	void *p;
	uint64_t size;
};

/* open addressing, keyed by the trace's address (never 0) */
static struct ent *tab;
static uint64_t tmask;
static uint64_t tcount;

static uint64_t hkey(uint64_t k)
{
	return (k * 0x9E3779B97F4A7C15ULL) >> 17;
}

static void tab_grow(void)
{
	uint64_t n = tmask ? (tmask + 1) * 2 : 1 << 16;
	struct ent *t = calloc(n, sizeof(*t));

	if (!t) {
		perror("replay: calloc");
		exit(2);
	}
	for (uint64_t i = 0; tab && i <= tmask; i++) {
		uint64_t h;

		if (!tab[i].key)
			continue;
		for (h = hkey(tab[i].key) & (n - 1); t[h].key; h = (h + 1) & (n - 1))
			;
		t[h] = tab[i];
	}
	free(tab);
	tab = t;
	tmask = n - 1;
}

static void tab_put(uint64_t k, void *p, uint64_t size)
{
	uint64_t h;

	if (!tab || tcount * 2 >= tmask)
		tab_grow();
	for (h = hkey(k) & tmask; tab[h].key; h = (h + 1) & tmask)
		if (tab[h].key == k)
			break;
	if (!tab[h].key)
		tcount++;
	tab[h].key = k;
	tab[h].p = p;
	tab[h].size = size;
}

/* Remove k; backward-shift deletion keeps probe chains intact. */
static int tab_take(uint64_t k, struct ent *out)
{
	uint64_t h, j;

	if (!tab)
		return 0;
	for (h = hkey(k) & tmask; tab[h].key != k; h = (h + 1) & tmask)
		if (!tab[h].key)
			return 0;
	*out = tab[h];
	tab[h].key = 0;
	tcount--;
	for (j = (h + 1) & tmask; tab[j].key; j = (j + 1) & tmask) {
		uint64_t home = hkey(tab[j].key) & tmask;

		/* j stays if its home lies cyclically in (h, j] */
		if (h <= j ? (h < home && home <= j) : (h < home || home <= j))
			continue;
		tab[h] = tab[j];
		tab[j].key = 0;
		h = j;
	}
	return 1;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *e;
	unsigned long long v = strtoull(s, &e, 0);

	switch (*e) {
	case 'K': v <<= 10; e++; break;
	case 'M': v <<= 20; e++; break;
	case 'G': v <<= 30; e++; break;
	}
	if (*e || !v)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The trace, through gzip -dc where it ends in .gz (*pid: the child, or 0). */
static FILE *open_trace(const char *path, pid_t *pid)
{
	size_t n = strlen(path);
	int fd[2];
	FILE *f;

	*pid = 0;
	if (n < 3 || strcmp(path + n - 3, ".gz"))
		return fopen(path, "r");
	if (access(path, R_OK) || pipe(fd))
		return NULL;
	*pid = fork();
	if (*pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	if (*pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("gzip", "gzip", "-dc", "--", path, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	if (!f)
		close(fd[0]);
	return f;
}

/* 0, or -EIO when gzip failed. */
static int close_trace(FILE *f, pid_t pid)
{
	int status = 0;

	fclose(f);
	if (pid > 0 && (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			WEXITSTATUS(status)))
		return -EIO;
	return 0;
}

static long (*f_calls)(const char *);

/* The fake driver's call counters, once the CUDA backend has loaded it. */
static long calls(const char *name)
{
	if (!f_calls) {
		void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

		if (lib)
			f_calls = (long (*)(const char *))dlsym(lib, "fakecuda_calls");
	}
	return f_calls ? f_calls(name) : -1;
}

struct result {
	uint64_t events, live, live_peak, seg, seg_peak, mapped_peak, charged_peak, base;
	long creates, maps;
};

/*
 * One trace into *ap (created here when NULL).  chain: the arena and what
 * is live at the end stay for the next trace, after a trim (what the
 * benchmark does between workloads: nxq_torch_release(), as the caching
 * allocator's empty_cache()); peaks are then counted above what was
 * mapped at the start, as the benchmark counts device memory above its
 * reading before the workload.
 */
static int replay(struct nxq_ctx *ctx, struct nxq_arena **ap, const char *path,
		  uint64_t grow_batch, int sync, int chain, struct result *res)
{
	struct nxq_arena_opts o = {
		.size = sizeof(o), .backend = NXQ_BACKEND_CUDA, .grow_batch = grow_batch,
		.retain_idle = UINT64_MAX - 1,	/* the integration's: keep idle memory */
	};
	struct nxq_stats st = { .size = sizeof(st) };
	struct nxq_arena *a = *ap;
	uint64_t base = 0;
	long c0, m0;
	char line[256];
	FILE *f;
	pid_t zpid;
	int r, n, lineno = 0;

	memset(res, 0, sizeof(*res));
	f = open_trace(path, &zpid);
	if (!f) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return -ENOENT;
	}
	if (!a) {
		r = nxq_arena_create(ctx, &o, &a);
		if (r) {
			fprintf(stderr, "replay: nxq_arena_create: %s\n", nxq_errmsg());
			close_trace(f, zpid);
			return r;
		}
		*ap = a;
	}
	r = nxq_arena_stats(a, &st);
	if (r)
		return r;
	base = st.mapped;
	res->base = base;
	c0 = calls("cuMemCreate");
	m0 = calls("cuMemMap");
	while (fgets(line, sizeof(line), f)) {
		char act[32];
		unsigned long long addr, size, stream;
		struct ent e;
		void *p;

		lineno++;
		n = sscanf(line, "%31s %llu %llu %llu", act, &addr, &size, &stream);
		if (n == 4 && !strcmp(act, "release")) {
			/* NXQ_TORCH_TRACE: nxq_torch_release(), a trim by size bytes */
			res->events++;
			r = nxq_arena_stats(a, &st);
			if (!r && nxq_arena_trim(a, size >= st.charged ? 0 : st.charged - size,
						 NXQ_TRIM_WAIT) < 0)
				r = -EIO;
			if (r) {
				fprintf(stderr, "replay: %s:%d: release: %s\n", path, lineno,
					nxq_errmsg());
				break;
			}
			continue;
		}
		if (n != 4 || !addr) {
			fprintf(stderr, "replay: %s:%d: bad line\n", path, lineno);
			r = -EINVAL;
			break;
		}
		res->events++;
		if (!strcmp(act, "segment_map") || !strcmp(act, "segment_alloc")) {
			res->seg += size;
			if (res->seg > res->seg_peak)
				res->seg_peak = res->seg;
			continue;
		}
		if (!strcmp(act, "segment_unmap") || !strcmp(act, "segment_free")) {
			res->seg -= size;
			continue;
		}
		if (!strcmp(act, "alloc")) {
			void *sp = (void *)(uintptr_t)stream;

			r = sync ? nxq_alloc(a, size, 0, &p) : nxq_alloc_async(a, size, 0, sp, &p);
			if (r) {
				fprintf(stderr, "replay: %s:%d: alloc of %llu: %s\n", path, lineno,
					size, nxq_errmsg());
				break;
			}
			tab_put(addr, p, size);
			res->live += size;
			if (res->live > res->live_peak)
				res->live_peak = res->live;
		} else if (!strcmp(act, "free_completed")) {
			if (!tab_take(addr, &e)) {
				fprintf(stderr, "replay: %s:%d: free of unknown %llu\n", path,
					lineno, addr);
				r = -EINVAL;
				break;
			}
			r = sync ? nxq_free(a, e.p) :
				   nxq_free_async(a, e.p, (void *)(uintptr_t)stream);
			if (r) {
				fprintf(stderr, "replay: %s:%d: free: %s\n", path, lineno,
					nxq_errmsg());
				break;
			}
			res->live -= e.size;
			continue;	/* a free never maps more */
		} else {
			continue;	/* free_requested */
		}
		r = nxq_arena_stats(a, &st);
		if (r)
			break;
		if (st.mapped > res->mapped_peak)
			res->mapped_peak = st.mapped;
		if (st.charged > res->charged_peak)
			res->charged_peak = st.charged;
	}
	if (close_trace(f, zpid) && !r) {
		fprintf(stderr, "replay: %s: gzip -dc failed\n", path);
		r = -EIO;
	}
	res->creates = calls("cuMemCreate") - c0;
	res->maps = calls("cuMemMap") - m0;
	if (chain) {
		/* what the benchmark does between workloads */
		if (nxq_arena_trim(a, 0, NXQ_TRIM_WAIT) < 0)
			return -EIO;
		res->mapped_peak -= res->mapped_peak > base ? base : res->mapped_peak;
		res->charged_peak -= res->charged_peak > base ? base : res->charged_peak;
		return r;
	}
	/* what is still live at the end of the trace */
	for (uint64_t i = 0; tab && i <= tmask; i++)
		if (tab[i].key) {
			nxq_free(a, tab[i].p);
			tab[i].key = 0;
		}
	tcount = 0;
	nxq_arena_destroy(a);
	*ap = NULL;
	return r;
}

int main(int argc, char **argv)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .flags = NXQ_CTX_UNMANAGED };
	struct nxq_ctx *ctx;
	uint64_t grow_batch = 4ULL << 20;
	double max_hpg = 0, max_mib = 0;
	int sync = 0, check = 0, chain = 0, rc = 0, i;
	struct nxq_arena *a = NULL;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--sync")) {
			sync = 1;
		} else if (!strcmp(argv[i], "--chain")) {
			chain = 1;
		} else if (!strcmp(argv[i], "--check")) {
			check = 1;
		} else if (!strcmp(argv[i], "--grow-batch") && i + 1 < argc) {
			if (parse_size(argv[++i], &grow_batch)) {
				fprintf(stderr, "replay: bad --grow-batch %s\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--max-mapped-mib") && i + 1 < argc) {
			char *e;

			max_mib = strtod(argv[++i], &e);
			if (*e || max_mib <= 0) {
				fprintf(stderr, "replay: bad --max-mapped-mib %s\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--max-handles-per-gib") && i + 1 < argc) {
			max_hpg = strtod(argv[++i], NULL);
			if (max_hpg <= 0) {
				fprintf(stderr, "replay: bad --max-handles-per-gib %s\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "replay: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i == argc) {
		fprintf(stderr, "usage: replay [--grow-batch N] [--sync] [--check] "
			"[--max-mapped-mib N] [--max-handles-per-gib X] TRACE...\n");
		return 2;
	}
	if (nxq_ctx_open(&co, &ctx)) {
		fprintf(stderr, "replay: nxq_ctx_open: %s\n", nxq_errmsg());
		return 2;
	}
	for (; i < argc; i++) {
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		struct result res;
		double hpg;

		if (replay(ctx, &a, argv[i], grow_batch, sync, chain, &res)) {
			rc = 2;
			continue;
		}
		hpg = res.mapped_peak ? res.creates / (res.mapped_peak / (MiB * 1024)) : 0;
		printf("%s: %llu events, live peak %.0f MiB, caching allocator peak %.0f MiB, "
		       "nxq peak mapped %.0f MiB (%.3fx), charged %.0f MiB; %ld handles "
		       "(%.1f per GiB mapped at peak), %ld maps%s\n", name,
		       (unsigned long long)res.events, res.live_peak / MiB, res.seg_peak / MiB,
		       res.mapped_peak / MiB,
		       res.seg_peak ? (double)res.mapped_peak / res.seg_peak : 0,
		       res.charged_peak / MiB, res.creates, hpg, res.maps,
		       chain && res.base ? " (peaks above the start's mapped bytes)" : "");
		if (chain && res.base)
			printf("  %s started with %.0f MiB mapped (what the trace before left live)\n",
			       name, res.base / MiB);
		if (check && !res.seg_peak) {
			printf("FAIL %s: no segment_map/segment_alloc events to compare with\n",
			       name);
			rc = rc ? rc : 1;
		} else if (check && res.mapped_peak > res.seg_peak) {
			printf("FAIL %s: nxq peak mapped %.0f MiB > the caching allocator's "
			       "%.0f MiB\n", name, res.mapped_peak / MiB, res.seg_peak / MiB);
			rc = rc ? rc : 1;
		} else if (check) {
			printf("PASS %s: peak mapped <= the caching allocator's\n", name);
		}
		if (max_mib > 0 && res.mapped_peak / MiB > max_mib) {
			printf("FAIL %s: peak mapped %.0f MiB > %.0f MiB\n", name,
			       res.mapped_peak / MiB, max_mib);
			rc = rc ? rc : 1;
		} else if (max_mib > 0) {
			printf("PASS %s: peak mapped <= %.0f MiB\n", name, max_mib);
		}
		if (max_hpg > 0 && (res.creates < 0 || hpg > max_hpg)) {
			printf("FAIL %s: %.1f handles per GiB > %.1f\n", name, hpg, max_hpg);
			rc = rc ? rc : 1;
		}
	}
	if (a)
		nxq_arena_destroy(a);
	nxq_ctx_close(ctx);
	return rc;
}
