/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquotad's /metrics endpoint (metrics.c, `-M ADDR`): the exposition of
 * `nxquotactl metrics` over HTTP, served by libmicrohttpd's own thread.
 * Built from the tools' files, not the compat layer: this header is all
 * nxquotad.c sees of it.
 */
#ifndef NXQD_METRICS_H
#define NXQD_METRICS_H

/* The limits a scraper meets (README.md, "Metrics"). */
#define NXQD_METRICS_CONNS	8	/* connections at once, in all */
#define NXQD_METRICS_PER_IP	4	/* of them from one address (TCP) */
#define NXQD_METRICS_TIMEOUT_S	5	/* a connection idle this long ends */
#define NXQD_METRICS_DUMP_S	5	/* the ledger's dump, at most */

/*
 * Serve /metrics on @addr: "PORT" or "127.0.0.1:PORT" (loopback),
 * "[::1]:PORT", another address only as "HOST:PORT" with a numeric
 * address, or an absolute path for a unix socket (made 0600: the
 * exposition names every tenant's cgroups).  A scrape reads the ledger
 * through the control socket @ctl, as nxquotactl does.  Return: 0, or a
 * negative errno having said why on stderr (-EOPNOTSUPP: built without
 * libmicrohttpd).
 */
int nxqd_metrics_start(const char *addr, const char *ctl);
/* Stop serving (waits for a scrape in progress); nothing if not started. */
void nxqd_metrics_stop(void);

#endif /* NXQD_METRICS_H */
