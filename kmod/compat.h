/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota: what differs between the kernels the module supports (Debian's
 * 6.1 and 6.12).  The only place that tests LINUX_VERSION_CODE.
 */
#ifndef _NXQ_COMPAT_H
#define _NXQ_COMPAT_H

#include <linux/version.h>
#include <linux/eventfd.h>

/* eventfd_signal() lost its count argument in 6.8. */
static inline void nxq_eventfd_signal(struct eventfd_ctx *ctx)
{
#if KERNEL_VERSION(6, 8, 0) <= LINUX_VERSION_CODE
	eventfd_signal(ctx);
#else
	eventfd_signal(ctx, 1);
#endif
}

#endif /* _NXQ_COMPAT_H */
