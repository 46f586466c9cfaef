/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nxquotad - the nxquota authority in userspace: its two sockets' wire
 * protocol.  The commands, their argument structs, their rules and errnos
 * are the module's, <linux/nxquota.h>; this header only frames them.
 *
 * ---- The client socket (NXQD_SOCKET_PATH) ----
 *
 * SOCK_SEQPACKET.  One message per request, one per reply.  A request is
 * a struct nxqd_req followed by the command's argument struct, exactly as
 * ioctl(2) would be given it (its size field first; the message carries
 * size bytes of it).  A reply is a struct nxqd_rep followed, for commands
 * with output, by min(size, the daemon's size) bytes of the argument
 * struct.  Errors are the ioctl's negative errnos; a failed command's
 * struct comes back only where the ioctl copies it back (a refused
 * NXQ_IOC_CHARGE of version 1).  Its path field is the client's pointer,
 * which the daemon cannot write through: the refusing node's path, when
 * the daemon names it (path_len not 0), follows the struct in the same
 * reply, path_len + 1 bytes with the NUL, the whole within
 * NXQD_ARG_MAX; the client copies it to its buffer.  The path is as the
 * requesting process's cgroup namespace shows it (the daemon reads it
 * from inside that namespace), never one above its root.
 *
 * Who asks is the kernel's to say, never the message's: the caller is the
 * process that made the connection (SO_PEERCRED, SO_PEERPIDFD).  The
 * daemon sets SO_PASSCRED and compares each request's SCM_CREDENTIALS
 * with the connection's.  A request whose credential names another
 * process (a child that inherited the connection, one it was passed to)
 * is that process's own -- as a child sharing /dev/nxquota's file is a
 * process of its own in the module -- only where nobody but the daemon's
 * root could have named that credential (every pid namespace of the
 * process, up to the daemon's, is owned by the daemon's user namespace);
 * else it is refused and counted: -ENOENT for a command on a holder (as
 * the module answers a process that is not the holder's), -EPERM for
 * NXQ_IOC_HOLDER_REGISTER.
 *
 * NXQ_IOC_HOLDER_REGISTER passes its descriptors by SCM_RIGHTS in the
 * same message, in this order: the eventfd (iff eventfd >= 0 in the
 * struct), then the device node (iff NXQ_HOLDER_DEVFD), open for reading
 * or writing (an O_PATH descriptor is -EBADF, as fget() refuses it); the
 * numbers in the struct are the sender's and are not used.  A wrong count
 * is -EBADF; a descriptor sent with any other command is closed and the
 * request fails with -EINVAL.  More than two descriptors in one message
 * (more than any command takes) are not received: -EBADF or -EINVAL.
 *
 * Versions.  nxqd_req.version is the protocol the request speaks: 0 is
 * the first one (the field was a reserved zero, and flags must be 0),
 * NXQD_PROTO_VERSION this one; a version above the daemon's is
 * -EPROTONOSUPPORT.  Every reply carries the daemon's NXQD_PROTO_VERSION
 * in nxqd_rep.version (0 from a daemon of the first protocol, which also
 * refuses a non-zero version with -EINVAL): a client asks NXQ_IOC_VERSION
 * at NXQD_PROTO_VERSION first; on -EPROTONOSUPPORT it speaks the version
 * the reply names (a daemon of version 1 answers so to version 2), on
 * -EINVAL version 0.  Version 1 brought the restore protocol (below),
 * version 2 tickets told on the connection (below).
 *
 * ---- Tickets on the connection (version 2) ----
 *
 * The module tells a holder of its ticket by the eventfd it registered
 * with.  The daemon cannot write a tenant's eventfd as safely (the tenant
 * shares the file: it can clear O_NONBLOCK and fill the counter), so at
 * version 2 a registration may instead set NXQD_REQ_NOTIFY, with eventfd
 * -1 in the struct and no eventfd passed (both: -EINVAL).  The holder
 * can then be asked, as one with an eventfd can, and is told of each
 * ticket opened or raised by a struct nxqd_notice, a message the daemon
 * sends unasked on the connection the holder was registered on: a
 * struct nxqd_rep whose flags have NXQD_REP_TICKET (never set in a
 * reply), then the daemon's id of the holder.  It carries no ticket: the
 * holder reads it with NXQ_IOC_TICKET_READ, as after an eventfd's wake-up.
 *
 *  - A notice may come at any time between messages, on a connection
 *    idle or with a request in progress (before its reply: a charge
 *    waiting there is answered after); the client reads every message,
 *    handles each notice and goes on waiting for its reply.
 *  - Notices are coalesced per holder: after one is sent, the next is
 *    sent only once the holder's ticket was read (NXQ_IOC_TICKET_READ,
 *    on any connection of its process) -- as an eventfd stays readable
 *    until it is read; a client that reads its ticket after each notice
 *    loses none.  Raises meanwhile are in what it reads.
 *  - The daemon never waits for a client to read: a notice its socket
 *    has no room for is sent when room comes, before any later one for
 *    that holder; one waits per holder at most.  A client that never
 *    reads its connection holds up only its own notices.
 *
 * A registration without NXQD_REQ_NOTIFY keeps the first protocol's
 * eventfd (any version): the daemon writes it from a thread of its own,
 * which it does not start while no client passed one.  libnxquota
 * passes one only to a daemon of version 0 or 1.
 *
 * ---- After a restart: the restore protocol (version 1) ----
 *
 * nxquotad records what each process's holders hold -- the process (pid
 * and start time), each holder's id, device and charge -- before it
 * answers any change of a holder's charge.  A daemon that starts and finds
 * processes of that record still alive opens a grace window (its -G, 5 s
 * by default) in which only restores are granted, and only to them:
 *
 *  1. A client notices the daemon went away at once, not at its next
 *     call: it keeps a connection watched (poll() for POLLHUP/POLLRDHUP,
 *     e.g. from the thread that reads its notices), so an idle process
 *     restores within the window too.
 *  2. It connects again (retrying until the socket answers), asks
 *     NXQ_IOC_VERSION at version 1, and for each holder it kept:
 *       - NXQ_IOC_HOLDER_REGISTER with NXQD_REQ_RESTORE, holder_id (in)
 *         the id the holder had, and the same device, priority, eventfd
 *         (or NXQD_REQ_NOTIFY) and device node as before;
 *       - if it held bytes: NXQ_IOC_CHARGE with NXQD_REQ_RESTORE, bytes
 *         what it held, NXQ_CHARGE_NOWAIT; the reply may take up to the
 *         window's length (see 4), so it must not give up sooner;
 *       - NXQ_IOC_SET_RECLAIMABLE as before, if it had reported any.
 *     A request it had in flight when the connection went is not sent
 *     again as such: a charge was never granted (send it again, after the
 *     restore, as new growth); an uncharge or a ticket answer already
 *     counts in what it restores.
 *  3. Last, once: NXQ_IOC_VERSION with NXQD_REQ_RESTORED.  The process is
 *     then restored, whatever it did not restore (a holder it unregistered
 *     since the record was written) is forgotten, and the window closes
 *     as soon as every listed process still alive is restored or gone.
 *  4. A restore charge of at most what the record has left for that
 *     holder is granted at once; one for more fails with -ERANGE (the
 *     process asks for what it never held).  A restore from a process the
 *     record does not name, or for a holder it does not have, is not a
 *     restore: it is growth.  Growth -- any charge that is not a restore
 *     -- waits (it does not fail) until the window closes, then competes
 *     as usual; with NXQ_CHARGE_WAIT it gives up at its own timeout
 *     (-ETIMEDOUT).  The window closes when every listed process still
 *     alive has restored each holder the record has for it (or said step
 *     3), or is itself waiting on growth; or at its end (-G) whatever is
 *     left.
 *  5. A restore the ledger refuses all the same (a budget was lowered
 *     meanwhile) fails as a charge would (-EDQUOT, -ENOSPC): the client
 *     holds memory the daemon does not count, and gives it back through
 *     its pressure path.
 *
 * A request of version 0 keeps the first protocol's window: a listed
 * process's first charge on each holder it registers again is its restore
 * (up to what the record has for an unclaimed holder of it on that device:
 * the one that held exactly that much, else the smallest that held more);
 * any other charge is growth: -EAGAIN without a wait (the holder's first
 * charge may still be to come), else it waits within its timeout.  A
 * process counts as restored once each holder the record has for it was
 * claimed so.
 *
 * ---- The control socket (NXQD_CONTROL_PATH, root only) ----
 *
 * The module's generic netlink family "nxquota", whose spec is
 * Documentation/netlink/specs/nxquota.yaml: one netlink message (struct
 * nlmsghdr, struct genlmsghdr, attributes) per SOCK_SEQPACKET message, both
 * ways.  nlmsg_type is NXQD_GENL_ID in what the daemon sends and is
 * ignored in what it gets.  A do is answered by its data message, if any,
 * then an NLMSG_ERROR ack; a dump by one message per object, then
 * NLMSG_DONE.  NXQUOTA_CMD_EVENT sent as a request subscribes the
 * connection to the "events" group.  Every message's SCM_CREDENTIALS must
 * be uid 0's and the connecting process's, still live (the daemon sets
 * SO_PASSCRED and pins the connector by a pidfd): a connection passed to
 * another process gets -EPERM for everything, as does one whose pid was
 * the connector's.  Changes and the events need CAP_SYS_ADMIN in the
 * initial user namespace, read on each message: -EPERM without it.  A
 * change that cannot be written to the daemon's state directory is
 * undone and refused with the write's errno.
 */
#ifndef _UAPI_LINUX_NXQUOTAD_H
#define _UAPI_LINUX_NXQUOTAD_H

#include <linux/types.h>

/*
 * The client socket sits in a directory of its own, NXQD_SOCKET_DIR, that
 * holds nothing else (never the control socket): a container is given the
 * directory, not the socket file.  A bind mount of the file keeps the
 * inode it found, and a daemon that starts again without socket
 * activation binds a new one, so the container's processes could never
 * reach it again; through the directory they find the new socket,
 * reconnect and restore (issue 29).  nxquotad creates the directory
 * (0755) when it is missing.  Daemons before it listened on
 * NXQD_SOCKET_PATH_V0: libnxquota connects there when NXQD_SOCKET_PATH
 * does not exist and that does.
 */
#define NXQD_SOCKET_DIR		"/run/nxquota/client"
#define NXQD_SOCKET_PATH	NXQD_SOCKET_DIR "/nxquota.sock"
#define NXQD_SOCKET_PATH_V0	"/run/nxquota/nxquota.sock"
#define NXQD_CONTROL_PATH	"/run/nxquota/control.sock"
#define NXQD_STATE_DIR		"/var/lib/nxquota"

/* The protocol this header describes (nxqd_req.version, nxqd_rep.version). */
#define NXQD_PROTO_VERSION	2

/* nlmsg_type of the family on the control socket (no genl controller). */
#define NXQD_GENL_ID		0x7ffe

/* The longest argument struct a request may carry, as the ioctl's page. */
#define NXQD_ARG_MAX		4096

/* Descriptors one request may carry (NXQ_IOC_HOLDER_REGISTER). */
#define NXQD_FDS_MAX		2

/* nxqd_req.flags (version 1; NXQD_REQ_NOTIFY version 2) */
/*
 * On NXQ_IOC_HOLDER_REGISTER: the registration restores the holder whose
 * id on the daemon that went away is holder_id (in).  On NXQ_IOC_CHARGE:
 * the charge restores what that holder held.
 */
#define NXQD_REQ_RESTORE	(1U << 0)
/* On NXQ_IOC_VERSION: this process has restored all it will restore. */
#define NXQD_REQ_RESTORED	(1U << 1)
/*
 * On NXQ_IOC_HOLDER_REGISTER (version 2): tell the holder of its tickets
 * on this connection (struct nxqd_notice), not through an eventfd.
 */
#define NXQD_REQ_NOTIFY		(1U << 2)
#define NXQD_REQ_FLAGS_ALL	(NXQD_REQ_RESTORE | NXQD_REQ_RESTORED | \
				 NXQD_REQ_NOTIFY)

/* nxqd_rep.flags (version 2): the message is a struct nxqd_notice. */
#define NXQD_REP_TICKET		(1U << 0)

struct nxqd_req {
	__u32 cmd;		/* NXQ_IOC_*; its size bits are ignored */
	union {
		__u32 reserved;	/* version 0's name for both: 0 */
		struct {
			__u16 version;	/* 0, or NXQD_PROTO_VERSION */
			__u16 flags;	/* NXQD_REQ_*; 0 at version 0 */
		};
	};
};

struct nxqd_rep {
	__s32 err;		/* 0 or -errno */
	union {
		__u32 reserved;
		struct {
			__u16 version;	/* the daemon's NXQD_PROTO_VERSION */
			__u16 flags;	/* 0 in a reply; NXQD_REP_TICKET */
		};
	};
};

/* A ticket notice (version 2, NXQD_REQ_NOTIFY): see the top of this file. */
struct nxqd_notice {
	struct nxqd_rep rep;	/* err 0, flags NXQD_REP_TICKET */
	__u64 holder_id;	/* the holder asked: the daemon's id */
};

#endif /* _UAPI_LINUX_NXQUOTAD_H */
