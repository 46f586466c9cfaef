/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The few CUDA driver API types, values and entry points libnxquota uses,
 * declared from NVIDIA's public driver API documentation so that the
 * library builds with no CUDA toolkit.  These are ABI: layouts and values
 * must match cuda.h exactly (checked by the static asserts below).
 * Entry points are resolved at run time from libcuda.so.1.
 */
#ifndef NXQ_CUDA_API_H
#define NXQ_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct { char bytes[16]; } CUuuid;

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NOT_INITIALIZED	3
#define CUDA_ERROR_NO_DEVICE		100
#define CUDA_ERROR_INVALID_DEVICE	101
#define CUDA_ERROR_NOT_READY		600
#define CUDA_ERROR_NOT_SUPPORTED	801

/* CUmemAllocationType, CUmemAllocationHandleType, CUmemLocationType */
#define CU_MEM_ALLOCATION_TYPE_PINNED		0x1
#define CU_MEM_HANDLE_TYPE_NONE			0x0
#define CU_MEM_LOCATION_TYPE_DEVICE		0x1
/* CUmemAccess_flags */
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE	0x3
/* CUmemAllocationGranularity_flags */
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM	0x0
#define CU_MEM_ALLOC_GRANULARITY_RECOMMENDED	0x1
/* CUdevice_attribute */
#define CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED	102
/* CUevent_flags */
#define CU_EVENT_DISABLE_TIMING			0x2
/* CUstream_flags */
#define CU_STREAM_NON_BLOCKING			0x1
/* CUdriverProcAddress_flags */
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM	0x1

typedef struct {
	int type;	/* CUmemLocationType */
	int id;
} CUmemLocation;

typedef struct {
	int type;			/* CUmemAllocationType */
	int requestedHandleTypes;	/* CUmemAllocationHandleType */
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef struct {
	CUmemLocation location;
	int flags;			/* CUmemAccess_flags */
} CUmemAccessDesc;

_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation");
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp");
_Static_assert(offsetof(CUmemAllocationProp, win32HandleMetaData) == 16, "prop");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc");

/* Entry points (versioned as cuGetProcAddress returns them for 12.0). */
struct nxq_cuda {
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDriverGetVersion)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxPushCurrent)(CUcontext);
	CUresult (*cuCtxPopCurrent)(CUcontext *);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
	CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
					unsigned long long);
	CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
	CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *, size_t,
				const CUmemAllocationProp *, unsigned long long);
	CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			     unsigned long long);
	CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
	CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
	CUresult (*cuEventCreate)(CUevent *, unsigned int);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventQuery)(CUevent);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuEventDestroy)(CUevent);
	/* Used by the GPU test and benchmark only. */
	CUresult (*cuStreamCreate)(CUstream *, unsigned int);
	CUresult (*cuStreamDestroy)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
	CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
	CUresult (*cuMemGetInfo)(size_t *, size_t *);
	int driver_version;
	int via_getprocaddress;	/* 1 if resolved through cuGetProcAddress */
};

/*
 * Load libcuda.so.1 once and resolve the entry points; NULL if it cannot,
 * with the reason in nxq_errmsg() and *err.  Required entry points missing
 * is an error; the optional ones (test/bench only) may stay NULL.
 */
const struct nxq_cuda *nxq__cuda_load(int *err);
/* "CUDA_ERROR_..." for a CUresult. */
const char *nxq__cuda_errname(CUresult r);

#endif /* NXQ_CUDA_API_H */
