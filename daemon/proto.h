/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nxquotad's socket protocols.
 *
 * The client socket (NXQD_SOCKET_PATH) speaks the ioctls of /dev/nxquota.
 * One SOCK_SEQPACKET message per request, one per reply.  A request is a
 * struct nxqd_req followed by the command's argument struct from
 * <linux/nxquota.h>, exactly as it would be passed to ioctl(2) (its size
 * field first; the message carries size bytes of it).  A reply is a
 * struct nxqd_rep followed, for commands with output, by min(size, the
 * daemon's size) bytes of the argument struct.  Errors are the ioctl's
 * negative errnos.
 *
 * Who asks is taken from the socket, never from the message: SO_PEERCRED at
 * accept, and the kernel-checked SCM_CREDENTIALS of each message (the
 * daemon sets SO_PASSCRED), so a request is the act of the process that
 * sent it.  NXQ_IOC_HOLDER_REGISTER passes its descriptors by SCM_RIGHTS in
 * the same message, in this order: the eventfd (iff eventfd >= 0 in the
 * struct), then the device node (iff NXQ_HOLDER_DEVFD); the numbers in the
 * struct are the sender's and are not used.  A wrong count is -EBADF; a
 * descriptor sent with any other command is closed and the request fails
 * with -EINVAL.
 *
 * The control socket (NXQD_CONTROL_PATH, root only) speaks the module's
 * generic netlink family "nxquota": one netlink message (struct nlmsghdr,
 * struct genlmsghdr, attributes) per SOCK_SEQPACKET message, both ways.
 * nlmsg_type is NXQD_GENL_ID in what the daemon sends and is ignored in
 * what it gets.  A do is answered by its data message, if any, then an
 * NLMSG_ERROR ack; a dump by one message per object, then NLMSG_DONE.
 * NXQUOTA_CMD_EVENT sent as a request subscribes the connection to the
 * "events" group.
 */
#ifndef _NXQD_PROTO_H
#define _NXQD_PROTO_H

#include <linux/types.h>

#define NXQD_SOCKET_PATH	"/run/nxquota/nxquota.sock"
#define NXQD_CONTROL_PATH	"/run/nxquota/control.sock"
#define NXQD_STATE_DIR		"/var/lib/nxquota"

/* nlmsg_type of the family on the control socket (no genl controller). */
#define NXQD_GENL_ID		0x7ffe

/* The longest argument struct a request may carry, as the ioctl's page. */
#define NXQD_ARG_MAX		4096

/* Descriptors one request may carry (NXQ_IOC_HOLDER_REGISTER). */
#define NXQD_FDS_MAX		2

struct nxqd_req {
	__u32 cmd;		/* NXQ_IOC_*; its size bits are ignored */
	__u32 reserved;		/* must be 0 */
};

struct nxqd_rep {
	__s32 err;		/* 0 or -errno */
	__u32 reserved;
};

#endif /* _NXQD_PROTO_H */
