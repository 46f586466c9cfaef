// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-libholder: a libnxquota holder for the real-kernel scenarios.
 *
 *   nxq-libholder DEVICE_KEY BYTES [--cache] [--idle BYTES] [--hold SECONDS]
 *                 [--grow-timeout-ms MS] [--chunk BYTES] [--grow-batch BYTES]
 *
 * Opens a managed context (the library's pressure thread answers tickets),
 * creates a host-backend arena on DEVICE_KEY and allocates BYTES in chunks
 * (1 MiB by default; sizes take K/M/G suffixes).  --idle frees that many
 * bytes of chunks again, kept mapped by the arena (retain_idle is raised
 * to cover them), so a ticket finds idle memory.  --cache registers a
 * reclaim callback that frees the remaining chunks, last first, until
 * the bytes asked are covered.  --grow-timeout-ms makes refused growth wait
 * for a grant.  Then it holds until killed, or for SECONDS and exits 0.
 * --grow-batch sets the arena's grow_batch, the largest physical handle
 * its growth makes; default 2 MiB (one granule): every handle is then
 * one granule, so what the holder frees comes back byte for byte, which
 * the pressure scenarios' exact counts assume (the library's default
 * grows by handles up to 64 MiB, released only whole).
 *
 * One line per event on stdout, each with one write(2) (never buffered,
 * never interleaved with another process's lines):
 *   allocated N charged C          N bytes allocated (C charged)
 *   idle N                         --idle: N bytes freed and kept idle
 *   ticket gen=G bytes=B reason=R level=L
 *   reclaim wanted=W freed=F chunks=K total_chunks=T   (--cache callback)
 *   released N                     bytes the answer gave back
 *   answered gen=G charged=C       (or: answer-failed gen=G err=E)
 *   failed err=NAME allocated=N: MESSAGE     an allocation failed; exit 2
 *   done                           the hold time ended; exit 0
 * Usage errors exit 64; a context or arena that cannot be set up exits 1.
 *
 * Builds static: gcc -static -Iinclude -Iinclude/uapi -o nxq-libholder \
 *     lib/tests-vm/nxq-libholder.c lib/libnxquota.a -lpthread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nxquota.h>

#define MiB (1024ULL * 1024)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void **chunks;
static uint64_t nchunks, chunk = MiB, freed_chunks;

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(1, buf, (size_t)n) != n)
		_exit(3);
}

static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static const char *errname(int e)
{
	switch (e) {
	case ETIMEDOUT: return "ETIMEDOUT";
	case EDQUOT: return "EDQUOT";
	case ENOSPC: return "ENOSPC";
	case ENOMEM: return "ENOMEM";
	case EINTR: return "EINTR";
	case ENODEV: return "ENODEV";
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	default: return "E?";
	}
}

/* Runs on the library's pressure thread. */
static void on_event(const struct nxq_event *ev, void *user)
{
	(void)user;
	if (ev->type == NXQ_EVENT_TICKET) {
		say("ticket gen=%" PRIu64 " bytes=%" PRIu64 " reason=%u level=%u",
		    ev->generation, ev->bytes_wanted, ev->reason, ev->level);
	} else if (ev->type == NXQ_EVENT_ANSWER) {
		if (ev->error) {
			say("answer-failed gen=%" PRIu64 " err=%s", ev->generation,
			    errname(-ev->error));
			return;
		}
		say("released %" PRIu64, ev->released);
		say("answered gen=%" PRIu64 " charged=%" PRIu64, ev->generation, ev->charged);
	}
}

/* The "cache": the chunks still held, freed last first. */
static int reclaim(struct nxq_arena *a, uint64_t wanted, void *user)
{
	uint64_t freed = 0, k = 0;

	(void)user;
	pthread_mutex_lock(&lock);
	while (nchunks && freed < wanted) {
		if (nxq_free(a, chunks[nchunks - 1]))
			break;
		nchunks--;
		freed += chunk;
		k++;
	}
	freed_chunks += k;
	say("reclaim wanted=%" PRIu64 " freed=%" PRIu64 " chunks=%" PRIu64
	    " total_chunks=%" PRIu64, wanted, freed, k, freed_chunks);
	pthread_mutex_unlock(&lock);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: nxq-libholder DEVICE_KEY BYTES [--cache] [--idle BYTES] "
		"[--hold SECONDS] [--grow-timeout-ms MS] [--chunk BYTES] [--grow-batch BYTES]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	struct nxq_ctx_opts co = { .size = sizeof(co), .on_event = on_event };
	struct nxq_arena_opts ao = { .size = sizeof(ao), .backend = NXQ_BACKEND_HOST };
	uint64_t bytes, idle = 0, wait_ms = 0, hold = 0, total, batch = 2 * MiB;
	int cache = 0, has_hold = 0, r;
	struct nxq_stats st;
	struct nxq_ctx *ctx;
	struct nxq_arena *a;

	if (argc < 3 || parse_size(argv[2], &bytes) || !bytes)
		usage();
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--cache")) {
			cache = 1;
		} else if (!strcmp(argv[i], "--idle") && i + 1 < argc) {
			if (parse_size(argv[++i], &idle))
				usage();
		} else if (!strcmp(argv[i], "--hold") && i + 1 < argc) {
			if (parse_size(argv[++i], &hold))
				usage();
			has_hold = 1;
		} else if (!strcmp(argv[i], "--grow-timeout-ms") && i + 1 < argc) {
			if (parse_size(argv[++i], &wait_ms) || !wait_ms)
				usage();
		} else if (!strcmp(argv[i], "--grow-batch") && i + 1 < argc) {
			if (parse_size(argv[++i], &batch) || !batch)
				usage();
		} else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) {
			if (parse_size(argv[++i], &chunk) || !chunk)
				usage();
		} else {
			usage();
		}
	}
	if (idle > bytes)
		usage();
	ao.device_key = argv[1];
	ao.grow_batch = batch;
	ao.grow_timeout_ms = wait_ms ? wait_ms : NXQ_OPT_ZERO;
	if (idle)
		ao.retain_idle = idle + 64 * MiB;	/* keep the --idle bytes mapped */
	r = nxq_ctx_open(&co, &ctx);
	if (r) {
		fprintf(stderr, "nxq-libholder: %s\n", nxq_errmsg());
		return 1;
	}
	r = nxq_arena_create(ctx, &ao, &a);
	if (r) {
		fprintf(stderr, "nxq-libholder: %s\n", nxq_errmsg());
		return 1;
	}
	chunks = calloc(bytes / chunk + 1, sizeof(*chunks));
	if (!chunks)
		return 1;
	if (cache && nxq_arena_add_reclaim(a, reclaim, NULL)) {
		fprintf(stderr, "nxq-libholder: %s\n", nxq_errmsg());
		return 1;
	}
	for (total = 0; total < bytes; total += chunk) {
		void *p;

		pthread_mutex_lock(&lock);
		r = nxq_alloc(a, chunk, 0, &p);
		if (!r) {
			memset(p, 0x5a, chunk);		/* touch it: real pages */
			chunks[nchunks++] = p;
		}
		pthread_mutex_unlock(&lock);
		if (r) {
			say("failed err=%s allocated=%" PRIu64 ": %s", errname(-r), total,
			    nxq_errmsg());
			return 2;
		}
	}
	st.size = sizeof(st);
	nxq_arena_stats(a, &st);
	say("allocated %" PRIu64 " charged %" PRIu64, total, st.charged);
	if (idle) {
		uint64_t n = 0;

		pthread_mutex_lock(&lock);
		while (n < idle && nchunks) {
			nxq_free(a, chunks[--nchunks]);
			n += chunk;
		}
		pthread_mutex_unlock(&lock);
		nxq_arena_report(a);
		say("idle %" PRIu64, n);
	}
	if (has_hold) {
		struct timespec ts = { .tv_sec = (time_t)hold };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		say("done");
		return 0;
	}
	for (;;)
		pause();
}
