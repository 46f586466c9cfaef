/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ctl.c and state.c share beyond daemon/nxqd.h: the module's two
 * validators that live in its sysfs shell (kmod/sysfs.c, not built here),
 * and the control socket's stop and socket-activation helpers.
 */
#ifndef _NXQD_CTL_H
#define _NXQD_CTL_H

#include <sys/types.h>
#include "ledger.h"

/* kmod/sysfs.c's nxq_parse_devt(), into makedev(): 0 or -EINVAL. */
int nxqd_parse_devt(const char *s, dev_t *devt);
/* kmod/sysfs.c's nxq_limit_valid(). */
bool nxqd_limit_valid(enum nxq_limit which, u32 v);

/* Close the control socket and every connection; remove the file. */
void nxqd_ctl_stop(void);
/* A socket systemd passed (LISTEN_FDS) named @name, or -1. */
int nxqd_listen_fds(const char *name);

#endif /* _NXQD_CTL_H */
