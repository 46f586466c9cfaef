// SPDX-License-Identifier: GPL-2.0
/*
 * client-bench SOCKET [ROUNDS] [DEVICE]: the cost of the client socket.
 * One connection, one holder (with an eventfd) on DEVICE (default
 * "host0", which must exist and let this process charge 4 KiB); per
 * round, a null request (NXQ_IOC_VERSION) and a charge plus an uncharge
 * of 4 KiB, each timed with CLOCK_MONOTONIC.  Prints median and p99 of
 * both.  make -C daemon bench-client runs it against a fresh daemon.
 */
#include <linux/nxquota.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../proto.h"

static int conn;

/* One request and its reply: the reply's err, or -EPROTO. */
static int call(__u32 cmd, void *arg, size_t len, int fd)
{
	unsigned char msg[sizeof(struct nxqd_req) + 256];
	unsigned char rep[sizeof(struct nxqd_rep) + 256];
	struct nxqd_req req = { .cmd = cmd };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(req) + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct nxqd_rep r;
	ssize_t n;

	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), arg, len);
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(conn, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	n = recv(conn, rep, sizeof(rep), 0);
	if (n < (ssize_t)sizeof(r) || (size_t)n > sizeof(r) + len)
		return -EPROTO;
	memcpy(&r, rep, sizeof(r));
	memcpy(arg, rep + sizeof(r), n - sizeof(r));
	return r.err;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct nxq_holder_reg reg = { .size = sizeof(reg) };
	int rounds = argc > 2 ? atoi(argv[2]) : 20000, i, err, efd;
	double *nul, *chg, t0, t1, t2;

	if (argc < 2 || rounds < 100) {
		fprintf(stderr, "usage: client-bench SOCKET [ROUNDS>=100] [DEVICE]\n");
		return 2;
	}
	nul = calloc(rounds, sizeof(*nul));
	chg = calloc(rounds, sizeof(*chg));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!nul || !chg || conn < 0 || efd < 0 ||
	    connect(conn, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("client-bench");
		return 1;
	}
	snprintf(reg.device, sizeof(reg.device), "%s",
		 argc > 3 ? argv[3] : "host0");
	reg.eventfd = efd;
	err = call(NXQ_IOC_HOLDER_REGISTER, &reg, sizeof(reg), efd);
	if (err) {
		fprintf(stderr, "client-bench: register: %s\n", strerror(-err));
		return 1;
	}
	for (i = 0; i < rounds; i++) {
		struct nxq_version v = { .size = sizeof(v) };
		struct nxq_charge c = {
			.size = sizeof(c), .holder_id = reg.holder_id,
			.bytes = 4096,
		};

		t0 = now_ns();
		err = call(NXQ_IOC_VERSION, &v, sizeof(v), -1);
		t1 = now_ns();
		if (!err)
			err = call(NXQ_IOC_CHARGE, &c, sizeof(c), -1);
		c.bytes = 4096;
		c.flags = 0;
		if (!err)
			err = call(NXQ_IOC_UNCHARGE, &c, sizeof(c), -1);
		t2 = now_ns();
		if (err) {
			fprintf(stderr, "client-bench: round %d: %s\n", i,
				strerror(-err));
			return 1;
		}
		nul[i] = t1 - t0;
		chg[i] = t2 - t1;
	}
	qsort(nul, rounds, sizeof(*nul), cmp);
	qsort(chg, rounds, sizeof(*chg), cmp);
	printf("null request:     median %.1f us, p99 %.1f us (%d rounds)\n",
	       nul[rounds / 2] / 1e3, nul[rounds * 99 / 100] / 1e3, rounds);
	printf("charge+uncharge:  median %.1f us, p99 %.1f us\n",
	       chg[rounds / 2] / 1e3, chg[rounds * 99 / 100] / 1e3);
	free(nul);
	free(chg);
	close(conn);
	return 0;
}
