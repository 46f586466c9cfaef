#!/bin/sh
# Build and run bench/vmm_pages.cu (does VMM mapping in small handles cost
# GPU time?); "skipped" without nvcc or a GPU.  Figures: bench/RESULTS.rst.
#   sh bench/vmm-pages.sh [--gib N] [--rounds N]
cd "$(dirname "$0")" || exit 1
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
	echo "skipped: no nvcc"
	exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "skipped: no GPU"
	exit 0
fi
CUDA=$(dirname "$(dirname "$NVCC")")
# libcuda.so may exist only as the driver's libcuda.so.1: link the toolkit's stub
"$NVCC" -O2 -o vmm_pages vmm_pages.cu -L"$CUDA/lib64/stubs" \
	-L"$CUDA/targets/x86_64-linux/lib/stubs" -lcuda || exit 1
exec ./vmm_pages "$@"
