/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nxquotad's socket protocol (provisional: issue 11, item 2 is not done).
 *
 * One SOCK_SEQPACKET message per request, one per reply.  A request is a
 * struct nxqd_req followed by the command's argument struct from
 * <linux/nxquota.h>, exactly as it would be passed to ioctl(2) (its size
 * field first; the message carries size bytes of it).  A reply is a
 * struct nxqd_rep followed, for commands with output, by min(size, the
 * daemon's size) bytes of the argument struct.  Errors are the ioctl's
 * negative errnos.  Who asks is taken from the socket (SO_PEERCRED),
 * never from the message.
 */
#ifndef _NXQD_PROTO_H
#define _NXQD_PROTO_H

#include <linux/types.h>

#define NXQD_SOCKET_PATH	"/run/nxquota/nxquota.sock"

/* The longest argument struct a request may carry, as the ioctl's page. */
#define NXQD_ARG_MAX		4096

struct nxqd_req {
	__u32 cmd;		/* NXQ_IOC_*; its size bits are ignored */
	__u32 reserved;		/* must be 0 */
};

struct nxqd_rep {
	__s32 err;		/* 0 or -errno */
	__u32 reserved;
};

#endif /* _NXQD_PROTO_H */
