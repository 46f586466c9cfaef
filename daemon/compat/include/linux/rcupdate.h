/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/rcupdate.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_RCUPDATE_H
#define _UK_LINUX_RCUPDATE_H
#include <uk/uk.h>
#endif
