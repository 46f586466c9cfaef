/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota: what differs between the kernels the module supports (Debian
 * 12's 6.1 and 6.12, trixie-backports' 6.18 and 7.x; 6.18 and 7.x needed
 * nothing of their own).  The only place that tests LINUX_VERSION_CODE.
 */
#ifndef _NXQ_COMPAT_H
#define _NXQ_COMPAT_H

#include <linux/version.h>
#include <linux/eventfd.h>
#include <linux/netlink.h>

/* eventfd_signal() lost its count argument in 6.8. */
static inline void nxq_eventfd_signal(struct eventfd_ctx *ctx)
{
#if KERNEL_VERSION(6, 8, 0) <= LINUX_VERSION_CODE
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

/*
 * Room for a formatted extended-ack message: 6.2 gave the extack a
 * buffer (80 bytes) for NL_SET_ERR_MSG_FMT(); before, a message is a
 * string that outlives the request.
 */
#ifdef NETLINK_MAX_FMTMSG_LEN
#define NXQ_NL_MSG	NETLINK_MAX_FMTMSG_LEN
#define nxq_nl_set_err_msg(extack, msg, fixed)				\
	do {								\
		(void)(fixed);						\
		NL_SET_ERR_MSG_FMT(extack, "%s", msg);			\
	} while (0)
#else
#define NXQ_NL_MSG	80
#define nxq_nl_set_err_msg(extack, msg, fixed)				\
	do {								\
		(void)(msg);						\
		NL_SET_ERR_MSG(extack, fixed);				\
	} while (0)
#endif

#endif /* _NXQ_COMPAT_H */
