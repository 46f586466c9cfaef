/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/err.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_ERR_H
#define _UK_LINUX_ERR_H
#include <uk/uk.h>
#endif
