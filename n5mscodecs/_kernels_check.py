"""Say what to do when the compiled kernels cannot be imported (as numpy does).

Importing the package from an unbuilt source checkout, or one built for another
Python or numpy, would otherwise fail deep inside with "cannot import name
'_downsample' from partially initialized module 'n5mscodecs'".
"""

import importlib
from pathlib import Path

KERNELS = ("_label_multiset", "_downsample", "_chunked", "_xxhash")


def require_kernels():
    package = Path(__file__).resolve().parent
    for name in KERNELS:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except ImportError as exc:
            in_checkout = (package.parent / "setup.py").exists()
            where = (
                "You are importing n5mscodecs from its source checkout, whose kernels are not built "
                "(or were built for another Python or numpy). Build them in place with "
                "`pip install -e .` (or `python setup.py build_ext --inplace`) from "
                f"{package.parent}, or run Python from another directory to use an installed n5mscodecs."
                if in_checkout
                else "The installation is incomplete: reinstall n5mscodecs (`pip install --force-reinstall n5mscodecs`)."
            )
            raise ImportError(
                f"n5mscodecs: the compiled kernel n5mscodecs.{name} cannot be imported ({exc}). {where}"
            ) from exc
