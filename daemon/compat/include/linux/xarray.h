/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/xarray.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_XARRAY_H
#define _UK_LINUX_XARRAY_H
#include <uk/uk.h>
#endif
