#!/bin/sh
# Build bench/torch_peer (PyTorch's caching allocator timed like bench_gpu's
# warm pairs) against the installed PyTorch: its C++ headers, libc10 and
# libc10_cuda, and CUDA's headers.  Exit 1, saying why, where that is absent.
#   build-torch-peer.sh SRC OUT
src=$1
out=$2
py=${PYTHON:-python3}
cxx=${CXX:-g++}
vars=$($py - <<'PY' 2>/dev/null
import os
import torch
from torch.utils import cpp_extension as ce
try:
    inc = ce.include_paths("cuda")
except TypeError:
    inc = ce.include_paths(cuda=True)
home = ce.CUDA_HOME or ""
if home:
    inc.append(os.path.join(home, "include"))
print("INC='%s'" % " ".join("-I" + p for p in inc))
print("LIB='%s'" % os.path.join(os.path.dirname(torch.__file__), "lib"))
print("ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("CUDALIB='%s'" % (os.path.join(home, "lib64") if home else ""))
print("VER='%s'" % torch.__version__)
PY
) || { echo "torch_peer: not built: $py cannot import torch"; exit 1; }
eval "$vars"
flags="-O2 -std=c++17 -D_GLIBCXX_USE_CXX11_ABI=$ABI $INC"
if $cxx $flags -o "$out" "$src" -L"$LIB" -Wl,-rpath,"$LIB" -lc10_cuda -lc10 2>/tmp/torch_peer.err ||
   { [ -n "$CUDALIB" ] && $cxx $flags -o "$out" "$src" -L"$LIB" -Wl,-rpath,"$LIB" \
	-lc10_cuda -lc10 -L"$CUDALIB" -Wl,-rpath,"$CUDALIB" -lcudart 2>>/tmp/torch_peer.err; }; then
	echo "torch_peer: built against PyTorch $VER"
else
	echo "torch_peer: not built against PyTorch $VER:"
	tail -n 20 /tmp/torch_peer.err
	exit 1
fi
