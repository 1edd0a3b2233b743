"""Build the Cython kernels; all metadata lives in pyproject.toml.

Every ``n5mscodecs/**/*.pyx`` becomes an extension module (``n5mscodecs/czi/_chunked.pyx``
is ``n5mscodecs.czi._chunked``). OpenMP is used for
``prange`` when the compiler accepts it (probe below) and skipped otherwise, so
the build never depends on an OpenMP runtime being installed.
Set ``N5MSCODECS_OPENMP=0`` to force a serial build.

The probe compiles with the same environment flags the build uses (``CPPFLAGS``,
``CFLAGS``, ``LDFLAGS``, macOS ``ARCHFLAGS``, ``N5MSCODECS_EXTRA_CFLAGS`` and
``N5MSCODECS_EXTRA_LDFLAGS``), so e.g. ``CFLAGS=-I$(brew --prefix libomp)/include``
and ``LDFLAGS=-L$(brew --prefix libomp)/lib`` enable OpenMP with Apple clang, and a
cross-architecture build whose OpenMP library does not match falls back to serial.
MSVC always has OpenMP (``/openmp``, runtime vcomp140.dll), so Windows is not probed.
"""

import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup


def env_flags(*names):
    """Whitespace-separated flags from the environment variables ``names``."""
    return [flag for name in names for flag in os.environ.get(name, "").split()]


def openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or ([], []) if unavailable."""
    if os.environ.get("N5MSCODECS_OPENMP", "1") == "0":
        return [], []
    if sys.platform == "win32":
        return ["/openmp"], []
    if sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    compiler = compiler.split()
    if shutil.which(compiler[0]) is None:
        return [], []
    source = "#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(source)
        for cflags, ldflags in candidates:
            cmd = (compiler + env_flags("CPPFLAGS", "CFLAGS", "ARCHFLAGS", "N5MSCODECS_EXTRA_CFLAGS")
                   + cflags + [src, "-o", os.path.join(tmp, "probe")]
                   + env_flags("LDFLAGS", "N5MSCODECS_EXTRA_LDFLAGS") + ldflags)
            try:
                ok = subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
            if ok:
                return cflags, ldflags
    print("n5mscodecs: OpenMP not available, building serial kernels", file=sys.stderr)
    return [], []


def build_jobs():
    """Parallel jobs for cythonize and the C compiler: ``N5MSCODECS_BUILD_JOBS``, else every core."""
    return max(1, int(os.environ.get("N5MSCODECS_BUILD_JOBS") or os.cpu_count() or 1))


def extensions():
    cflags, ldflags = openmp_flags()
    if sys.platform != "win32":
        cflags = cflags + ["-O3"]
    extra_c = env_flags("N5MSCODECS_EXTRA_CFLAGS")
    extra_l = env_flags("N5MSCODECS_EXTRA_LDFLAGS")
    exts = []
    for pyx in sorted(glob.glob(os.path.join("n5mscodecs", "**", "*.pyx"), recursive=True)):
        name = os.path.splitext(pyx)[0].replace(os.sep, ".")
        exts.append(
            Extension(
                name,
                [pyx],
                include_dirs=[numpy.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=cflags + extra_c,
                extra_link_args=ldflags + extra_l,
            )
        )
    return cythonize(
        exts,
        nthreads=build_jobs() if sys.platform == "linux" else 0,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )


# the kernels compile in parallel (setuptools' build_ext -j), cythonized in parallel on Linux
# (a fork pool; spawn-based platforms would re-run this script in each worker)
setup(ext_modules=extensions(), options={"build_ext": {"parallel": build_jobs()}})
