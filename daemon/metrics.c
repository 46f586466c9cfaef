// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's /metrics endpoint (-M ADDR): Prometheus' text exposition of
 * the ledger, the one `nxquotactl metrics` prints (tools/prom.c renders
 * both), over HTTP on a loopback address or a unix socket.
 *
 * HTTP is libmicrohttpd's, not ours: its own thread accepts, parses and
 * writes, with a bound on connections (in all and per address) and an
 * idle timeout, so a scraper that connects and sends nothing, or reads
 * slowly, holds one of a few connections for a few seconds and never the
 * event loop.  A scrape reads the ledger as any client of the control
 * socket does (DEVICE_GET, BUDGET_GET, HOLDER_GET dumps, which the loop
 * serves between charges, bounded by NXQD_METRICS_DUMP_S), then reads
 * the hook's records and NVML and renders, all on this thread, into a
 * buffer that libmicrohttpd sends and frees.
 *
 * Owns the libmicrohttpd daemon and its listening socket, from
 * nxqd_metrics_start() to nxqd_metrics_stop(); the control socket's path
 * is main()'s.  Compiled against the tools' headers, not daemon/compat:
 * it calls nothing of the ledger but through the control socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"

#ifndef NXQD_METRICS

int nxqd_metrics_start(const char *addr, const char *ctl)
{
	(void)ctl;
	fprintf(stderr, "nxquotad: -M %s: this nxquotad was built without "
		"libmicrohttpd (libmicrohttpd-dev), so it has no /metrics\n",
		addr);
	return -EOPNOTSUPP;
}

void nxqd_metrics_stop(void)
{
}

#else /* NXQD_METRICS */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

#include <microhttpd.h>

/* the tools' headers, not daemon/'s of the same names */
#include "../tools/ctl.h"
#include "../tools/ledger.h"
#include "../tools/nxquotactl.h"
#include "../tools/prom.h"

#define NXQD_METRICS_TYPE	"text/plain; version=0.0.4; charset=utf-8"

extern int nxqd_verbose;

static struct MHD_Daemon *nxqd_mhd;
static const char *nxqd_metrics_ctl;
static char nxqd_metrics_unix[sizeof(((struct sockaddr_un *)0)->sun_path)];

/*
 * One scrape: the ledger through the control socket, the hook's names,
 * NVML, rendered into *buf (malloc'd, *len bytes).  0, or -1 and why.
 */
static int nxqd_scrape(char **buf, size_t *len, char *why, size_t size)
{
	struct timeval tv = { .tv_sec = NXQD_METRICS_DUMP_S };
	struct ctl n = { .control = nxqd_metrics_ctl };
	struct attribution at;
	struct prom_k8s k;
	struct ledger l;
	FILE *f;
	int rc;

	rc = ctl_connect(&n);
	if (rc) {
		snprintf(why, size, "cannot connect to the control socket %s",
			 nxqd_metrics_ctl);
		ctl_close(&n);
		return -1;
	}
	/* a loop that does not answer fails the scrape, not this thread */
	setsockopt(n.ufd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(n.ufd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	rc = read_ledger(&n, NULL, &l);
	ctl_close(&n);
	if (rc) {
		snprintf(why, size, "reading the ledger failed (see the log)");
		return -1;
	}
	if (prom_k8s_read(&k))
		fprintf(stderr, "nxquotad: metrics: the hook's records: %s; "
			"series unnamed\n", strerror(ENOMEM));
	attribute(&l, NULL, &at);
	*buf = NULL;
	f = open_memstream(buf, len);
	if (f) {
		prom_render(f, &l, &k, &at);
		rc = fclose(f) ? -1 : 0;
	} else {
		rc = -1;
	}
	attribution_free(&at);
	prom_k8s_free(&k);
	ledger_free(&l);
	if (rc) {
		free(*buf);
		snprintf(why, size, "out of memory");
	}
	return rc;
}

static enum MHD_Result nxqd_reply(struct MHD_Connection *c, unsigned int code,
				  char *body, size_t len, const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result nxqd_text(struct MHD_Connection *c, unsigned int code,
				 const char *msg)
{
	char *s = strdup(msg);

	return s ? nxqd_reply(c, code, s, strlen(s), "text/plain; charset=utf-8") :
		   MHD_NO;
}

static double nxqd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* libmicrohttpd's handler: GET or HEAD of /metrics; nothing else. */
static enum MHD_Result nxqd_answer(void *cls, struct MHD_Connection *c,
				   const char *url, const char *method,
				   const char *version, const char *upload,
				   size_t *upload_size, void **con_cls)
{
	char why[256], *buf;
	double t0;
	size_t len;

	(void)cls;
	(void)version;
	(void)upload;
	(void)con_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return nxqd_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				 "only GET and HEAD\n");
	if (*upload_size)
		return nxqd_text(c, MHD_HTTP_BAD_REQUEST, "no body, please\n");
	if (strcmp(url, "/metrics"))
		return nxqd_text(c, MHD_HTTP_NOT_FOUND,
				 "nxquotad serves /metrics only\n");
	t0 = nxqd_now_ms();
	if (nxqd_scrape(&buf, &len, why, sizeof(why))) {
		fprintf(stderr, "nxquotad: metrics: %s\n", why);
		strcat(why, "\n");
		return nxqd_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, why);
	}
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: metrics: %zu bytes in %.1f ms\n",
			len, nxqd_now_ms() - t0);
	return nxqd_reply(c, MHD_HTTP_OK, buf, len, NXQD_METRICS_TYPE);
}

/* A port, 1..65535: 0, or -1. */
static int nxqd_port(const char *s, in_port_t *port)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || *s == '+' || !v ||
	    v > 65535)
		return -1;
	*port = htons((in_port_t)v);
	return 0;
}

/*
 * ADDR as a socket address: "PORT" (127.0.0.1), "IPV4:PORT",
 * "[IPV6]:PORT" or "/PATH".  0, or -EINVAL.  *loopback: whether only
 * this host can reach it.
 */
static int nxqd_metrics_addr(const char *addr, struct sockaddr_storage *ss,
			     socklen_t *sl, bool *loopback)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_un *su = (struct sockaddr_un *)ss;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon;

	memset(ss, 0, sizeof(*ss));
	*loopback = true;
	if (addr[0] == '/') {
		if (strlen(addr) >= sizeof(su->sun_path))
			return -EINVAL;
		su->sun_family = AF_UNIX;
		strcpy(su->sun_path, addr);
		*sl = sizeof(*su);
		return 0;
	}
	if (!nxqd_port(addr, &s4->sin_port)) {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*sl = sizeof(*s4);
		return 0;
	}
	colon = strrchr(addr, ':');
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, colon - addr);
	host[colon - addr] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1 ||
		    nxqd_port(colon + 1, &s6->sin6_port))
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		*sl = sizeof(*s6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		return 0;
	}
	if (inet_pton(AF_INET, host, &s4->sin_addr) != 1 ||
	    nxqd_port(colon + 1, &s4->sin_port))
		return -EINVAL;
	s4->sin_family = AF_INET;
	*sl = sizeof(*s4);
	*loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	return 0;
}

/* The listening socket of ADDR: its descriptor, or a negative errno. */
static int nxqd_metrics_listen(const struct sockaddr_storage *ss,
			       socklen_t sl)
{
	const struct sockaddr_un *su = (const struct sockaddr_un *)ss;
	int fd, one = 1, err;
	struct stat st;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ss->ss_family != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* a socket left by a daemon that died is replaced; a live one is not */
	if (ss->ss_family == AF_UNIX && !lstat(su->sun_path, &st) &&
	    S_ISSOCK(st.st_mode)) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (probe >= 0 && connect(probe, (const struct sockaddr *)ss, sl) &&
		    errno == ECONNREFUSED)
			unlink(su->sun_path);
		if (probe >= 0)
			close(probe);
	}
	if (bind(fd, (const struct sockaddr *)ss, sl) ||
	    (ss->ss_family == AF_UNIX && chmod(su->sun_path, 0600)) ||
	    listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (ss->ss_family == AF_UNIX)
		strcpy(nxqd_metrics_unix, su->sun_path);
	return fd;
}

int nxqd_metrics_start(const char *addr, const char *ctl)
{
	struct sockaddr_storage ss;
	bool loopback;
	socklen_t sl;
	int fd;

	if (nxqd_metrics_addr(addr, &ss, &sl, &loopback)) {
		fprintf(stderr, "nxquotad: -M %s: not PORT, 127.0.0.1:PORT, "
			"[::1]:PORT, ADDRESS:PORT or an absolute socket path\n",
			addr);
		return -EINVAL;
	}
	if (!loopback)
		fprintf(stderr, "nxquotad: -M %s: not a loopback address: "
			"whoever reaches it sees every tenant's cgroups\n", addr);
	fd = nxqd_metrics_listen(&ss, sl);
	if (fd < 0) {
		fprintf(stderr, "nxquotad: -M %s: %s\n", addr, strerror(-fd));
		return fd;
	}
	nxqd_metrics_ctl = ctl;
	prog = "nxquotad: metrics";	/* the tools' messages (ctl.c) */
	nxqd_mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				    MHD_USE_AUTO | MHD_USE_ERROR_LOG,
				    0, NULL, NULL, nxqd_answer, NULL,
				    MHD_OPTION_LISTEN_SOCKET, fd,
				    MHD_OPTION_CONNECTION_LIMIT,
				    (unsigned int)NXQD_METRICS_CONNS,
				    MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				    (unsigned int)(ss.ss_family == AF_UNIX ? 0 :
						   NXQD_METRICS_PER_IP),
				    MHD_OPTION_CONNECTION_TIMEOUT,
				    (unsigned int)NXQD_METRICS_TIMEOUT_S,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				    (size_t)16384,
				    MHD_OPTION_END);
	if (!nxqd_mhd) {
		fprintf(stderr, "nxquotad: -M %s: libmicrohttpd did not start\n",
			addr);
		close(fd);
		if (nxqd_metrics_unix[0])
			unlink(nxqd_metrics_unix);
		nxqd_metrics_unix[0] = '\0';
		return -EIO;
	}
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: metrics on %s\n", addr);
	return 0;
}

void nxqd_metrics_stop(void)
{
	int fd;

	if (!nxqd_mhd)
		return;
	/* the socket is ours (MHD_OPTION_LISTEN_SOCKET): close it after */
	fd = MHD_quiesce_daemon(nxqd_mhd);
	MHD_stop_daemon(nxqd_mhd);
	nxqd_mhd = NULL;
	if (fd >= 0)
		close(fd);
	if (nxqd_metrics_unix[0])
		unlink(nxqd_metrics_unix);
	nxqd_metrics_unix[0] = '\0';
}

#endif /* NXQD_METRICS */
