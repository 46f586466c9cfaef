/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Between ctl.c (the control socket: transport, who may speak, dispatch,
 * events) and ctl_ops.c (the family's operations).  A struct ctl_req is
 * one parsed request, on the loop, for the time of its handling.
 */
#ifndef _NXQD_CTL_H
#define _NXQD_CTL_H

#include <linux/genetlink.h>
#include <net/netlink.h>

/* room for a formatted extended-ack message */
#define CTL_ACK_MSG	640

struct ctl_conn;

struct ctl_req {
	struct ctl_conn *c;
	struct nlmsghdr *nlh;
	struct genlmsghdr *gh;
	struct nlattr *tb[NXQUOTA_A_BUDGET_LAST + 1];
	struct netlink_ext_ack ext;
	char msg_buf[CTL_ACK_MSG];	/* a formatted message */
	bool acked;			/* a dump answered by its DONE */
};

/* ctl.c: an attribute the operation needs is missing (-EINVAL to say). */
bool ctl_missing(struct ctl_req *r, int type);
/* ctl.c: a refusal the ABI explained; returns @err. */
int ctl_fail(struct ctl_req *r, const struct nxq_abi_fail *why, int err);
/* ctl.c: one message of a dump; then its end (the request is answered). */
void ctl_dump_one(struct ctl_req *r, u8 cmd, const struct nxq_abi_msg *m);
void ctl_dump_done(struct ctl_req *r);
/* ctl.c: requests refused for who sent them. */
unsigned long ctl_creds_refused(void);

/* ctl_ops.c: the operations; 0 or -errno (a dump answers itself). */
int ctl_device_dump(struct ctl_req *r);
int ctl_device_add(struct ctl_req *r);
int ctl_device_del(struct ctl_req *r);
int ctl_device_set(struct ctl_req *r);
int ctl_budget_dump(struct ctl_req *r);
int ctl_budget_set(struct ctl_req *r);
int ctl_budget_clear(struct ctl_req *r);
int ctl_holder_dump(struct ctl_req *r);

#endif /* _NXQD_CTL_H */
