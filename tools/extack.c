// SPDX-License-Identifier: GPL-2.0
/*
 * A request's replies, for either authority (ctl.c): the libnl callbacks
 * that read the ack or error with its extended-ack message
 * (NLMSGERR_ATTR_MSG), the records of a dump and its NLM_F_DUMP_INTR flag
 * into a struct reply; ctl_request(), which drives them; ctl_report(),
 * which says what failed and picks the exit status.  Owns nothing past
 * the call: the callbacks live for one request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nlmsghdr *h = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct reply *r = arg;
	size_t off;

	(void)nla;
	r->error = e->error;
	r->done = true;
	r->msg[0] = 0;
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	off = NLMSG_HDRLEN + sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	while (off + NLA_HDRLEN <= h->nlmsg_len) {
		struct nlattr *a = (struct nlattr *)((char *)h + off);

		if (a->nla_len < NLA_HDRLEN)
			break;
		if (a->nla_type == NLMSGERR_ATTR_MSG)
			snprintf(r->msg, sizeof(r->msg), "%.*s",
				 (int)(a->nla_len - NLA_HDRLEN),
				 (char *)a + NLA_HDRLEN);
		off += NLA_ALIGN(a->nla_len);
	}
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct reply *r = arg;

	(void)msg;
	r->done = true;
	return NL_STOP;
}

static int on_intr(struct nl_msg *msg, void *arg)
{
	struct reply *r = arg;

	(void)msg;
	r->intr = true;
	return NL_OK;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 8];
	struct reply *r = arg;
	int err;

	err = genlmsg_parse(nlmsg_hdr(msg), 0, tb, r->maxattr, NULL);
	if (err < 0 || !r->data)
		return NL_OK;
	return r->data(tb, r->arg) < 0 ? NL_STOP : NL_OK;
}

/* Send msg and read until the ack or the end of the dump. */
int ctl_request(struct ctl *n, struct nl_msg *msg, struct reply *r)
{
	struct nl_cb *cb = ctl_cb(n);
	int err;

	if (!cb)
		return -ENOMEM;
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, r);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, r);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, on_intr, r);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, r);
	err = nl_send_auto(n->sk, msg);
	while (err >= 0 && !r->done)
		err = nl_recvmsgs(n->sk, cb);
	nl_cb_put(cb);
	nlmsg_free(msg);
	if (err < 0 && !r->error)
		r->error = -EIO;
	return r->error;
}

struct nl_msg *ctl_new(struct ctl *n, uint8_t cmd, int flags)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, n->family, 0,
				 flags, cmd, NXQUOTA_FAMILY_VERSION)) {
		warnx_("out of memory");
		exit(EX_FAIL);
	}
	return msg;
}

/**
 * ctl_report() - report a failed request on stderr; returns the exit status
 */
int ctl_report(const char *what, struct reply *r)
{
	int err = -r->error;

	if (err == EPERM) {
		warnx_("%s: permission denied (needs CAP_SYS_ADMIN)", what);
		return EX_PERM;
	}
	warnx_("%s: %s (%s)%s%s", what, strerror(err), nxq_errno_name(err),
	       r->msg[0] ? ": " : "", r->msg);
	return EX_FAIL;
}
