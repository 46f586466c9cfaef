# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""A fake 'torch' for tests/preload/py.sh (no GPU, no PyTorch here): importing
it imports torch.cuda, as the real one does."""
from . import cuda  # noqa: F401
