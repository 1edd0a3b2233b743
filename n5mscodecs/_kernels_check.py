"""Say what to do when the compiled kernels cannot be imported (as numpy does).

Importing the package from an unbuilt source checkout, or one built for another
Python or numpy, would otherwise fail deep inside with "cannot import name
'_downsample' from partially initialized module".
"""

import importlib
import importlib.machinery
from pathlib import Path

KERNELS = ("_status", "multiset._kernels", "multiset._downsample", "payload._kernels", "czi._chunked", "n5._xxhash")


def _advice(package):
    if (package.parent / "setup.py").exists():
        return ("You are importing n5mscodecs from its source checkout, whose kernels are not built "
                "(or were built for another Python or numpy). Build them in place with "
                f"`pip install -e .` (or `python setup.py build_ext --inplace`) from {package.parent}, "
                "or run Python from another directory to use an installed n5mscodecs.")
    return "The installation is incomplete: reinstall n5mscodecs (`pip install --force-reinstall n5mscodecs`)."


def require_kernels():
    package = Path(__file__).resolve().parent  # n5mscodecs/
    for name in KERNELS:
        stem = package.joinpath(*name.split("."))
        built = any(stem.with_name(stem.name + suffix).exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)
        if not built:
            raise ImportError(f"n5mscodecs: the compiled kernel n5mscodecs.{name} is missing. {_advice(package)}")
    for name in KERNELS:
        try:
            importlib.import_module(f"{__package__}.{name}")
        except ImportError as exc:
            raise ImportError(
                f"n5mscodecs: the compiled kernel n5mscodecs.{name} cannot be imported ({exc}). {_advice(package)}"
            ) from exc
