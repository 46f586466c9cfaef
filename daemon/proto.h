/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nxquotad's wire protocol moved to <linux/nxquotad.h> (include/uapi), with
 * a version.  This name stays for the programs that include it by path
 * (lib/sock.h, tests/vm/authority.h, tests/lib/fake_srv.h) until they
 * include the uapi header themselves.
 */
#ifndef _NXQD_PROTO_H
#define _NXQD_PROTO_H

#include "../include/uapi/linux/nxquotad.h"

#endif /* _NXQD_PROTO_H */
