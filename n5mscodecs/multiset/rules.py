"""Paintera's id space and the switches every label multiset computation takes.

The reserved ids (``MAX_ID`` and above), the check that integer labels fit in the
unsigned 64-bit ids (``reserved=``), and the ``rule=`` ("spec" or "java") and ``keep=``
choices of argmax, downsampling and convert.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    Rule: TypeAlias = Literal["spec", "java"]
    KeepRule: TypeAlias = Literal["highest", "lowest"]
    ReservedRule: TypeAlias = Literal["reject", "accept"]

BACKGROUND = 0
MAX_ID = 0xFFFFFFFFFFFFFFFC
OUTSIDE = 0xFFFFFFFFFFFFFFFD
INVALID = 0xFFFFFFFFFFFFFFFE
TRANSPARENT = 0xFFFFFFFFFFFFFFFF

#: ``rule=``: "spec" (the data type spec, this package's default) or "java" (exactly what
#: imglib2-label-multisets and Paintera compute), for argmax, downsampling and convert.
RULES = ("spec", "java")
KEEP_RULES = ("highest", "lowest")
RESERVED_RULES = ("reject", "accept")


def _voxels(n):
    return f"{n} voxel has" if n == 1 else f"{n} voxels have"


def check_label_range(smallest: int, largest: int, count_outside, *,
                      reserved: ReservedRule = "reject", name: str = "labels") -> None:
    """ConfigurationError when labels spanning ``smallest..largest`` hold values
    Paintera's unsigned ids cannot take as they are (negative, or reserved: above MAX_ID)
    and ``reserved`` is "reject"; ``count_outside(low, high)`` counts the voxels outside
    ``low..high`` for the message (called only then)."""
    if reserved not in RESERVED_RULES:
        raise ConfigurationError(f"reserved must be one of {RESERVED_RULES}, got {reserved!r}")
    if reserved == "accept":
        return
    hint = ("; Paintera's ids are unsigned 64-bit, the top three reserved: pass reserved='accept' "
            "(n5ms convert --reserved accept) to read signed labels as two's-complement uint64 "
            "(-1 TRANSPARENT, -2 INVALID, -3 OUTSIDE) and keep reserved values")
    if smallest < 0:
        raise ConfigurationError(
            f"{name}: {_voxels(count_outside(0, None))} a negative label (smallest {smallest}){hint}")
    if largest > MAX_ID:
        raise ConfigurationError(
            f"{name}: {_voxels(count_outside(None, MAX_ID))} a reserved label above MAX_ID "
            f"(largest {largest:#x}){hint}")


def label_values(labels: np.ndarray, reserved: ReservedRule = "reject", *, name: str = "labels") -> np.ndarray:
    """Integer ``labels`` as uint64 ids (a view where the bits allow), checked as
    :func:`check_label_range` says."""
    dtype = labels.dtype
    needs_check = reserved != "accept" and labels.size and (dtype.kind == "i" or dtype == np.uint64)
    if needs_check:
        def count_outside(low, high):
            outside = np.zeros(labels.shape, bool) if low is None else labels < low
            return int(np.count_nonzero(outside if high is None else outside | (labels > high)))
        check_label_range(int(labels.min()), int(labels.max()), count_outside, reserved=reserved, name=name)
    elif reserved not in RESERVED_RULES:
        raise ConfigurationError(f"reserved must be one of {RESERVED_RULES}, got {reserved!r}")
    if dtype.kind == "i" and dtype.itemsize == 8:
        return labels.view(np.uint64)
    return labels.astype(np.uint64, copy=False)



def check_rule(rule):
    """True for ``rule="java"``: the one switch to Java's behaviour (argmax, downsampling, convert)."""
    if rule not in RULES:
        raise ConfigurationError(f"rule must be one of {RULES}, got {rule!r}")
    return rule == "java"


def check_keep(keep, rule):
    """The cut's ``keep`` under ``rule``: "highest" by default; None under Java's rule, which
    fixes its own cut."""
    java = check_rule(rule)
    if keep is None:
        return None if java else "highest"
    if keep not in KEEP_RULES:
        raise ConfigurationError(f"keep must be one of {KEEP_RULES}, got {keep!r}")
    if java:
        raise ConfigurationError('keep: rule="java" cuts lists as Java does; keep applies to rule="spec" only')
    return keep

