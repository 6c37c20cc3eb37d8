"""Large blocks go back to the system when freed, so memory bounded in bytes stays bounded in the process.

glibc's malloc serves a block of 128 KiB or more from its own mapping, returned when freed, but each time such a
block is freed it raises that threshold to the block's size (up to 32 MiB): from then on request bodies, stored
responses and their encoded copies of a few MiB come from the heap, where freed space stays with the process and
fragments. A store bounded at 64 MiB then grew the process by twice that, more with non-ASCII text (its copies
are larger). Setting the threshold once fixes it at 128 KiB: each large block is its own mapping again.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger("toolsift.heap")
M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h
LARGE_BLOCK = 128 * 1024  # glibc's own starting threshold


def release_large_blocks() -> bool:
    """Fix glibc's mmap threshold for this process; False where the C library is not glibc (nothing to fix)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: the C library's, without a search
    except (OSError, AttributeError):  # musl, macOS: no mallopt, and no sliding threshold
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    done = bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
    if not done:
        log.warning("could not fix the C library's mmap threshold; large freed blocks may stay with the process")
    return done
