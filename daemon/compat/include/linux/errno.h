/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <linux/errno.h> for userspace: the uapi one only, since glibc's own
 * <errno.h> includes this name too.  The kernel-internal codes the ledger
 * does not use are not defined.
 */
#include_next <linux/errno.h>
