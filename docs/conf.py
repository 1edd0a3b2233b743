"""Sphinx configuration for the n5mscodecs documentation.

Build (warnings are errors, as in CI): ``sphinx-build -W --keep-going -b html docs docs/_build/html``
or ``bash .ci/docs.sh``. Needs the package installed (autodoc imports the
compiled extension modules) and ``docs/requirements.txt``. Nothing here
fetches from the network: no intersphinx.
"""

import n5mscodecs

project = "n5mscodecs"
author = "n5mscodecs developers"
copyright = "n5mscodecs developers"
version = release = n5mscodecs.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", ".venv*", "**/.venv*", "requirements.txt", "Thumbs.db", ".DS_Store"]

# markdown: "{eval-rst}" blocks for autodoc; header anchors for "page.md#section" links
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# numpydoc-style docstrings through napoleon
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
napoleon_preprocess_types = True

autodoc_member_order = "bysource"
autodoc_preserve_defaults = True   # show INVALID, DEFAULT_CODECS, ... instead of their values
autodoc_typehints = "none"          # signatures carry no annotations worth showing
autodoc_default_options = {"members": True}
autodoc_inherit_docstrings = False  # numcodecs'/zarr's base-class docstrings are not ours to format
add_module_names = False

html_theme = "furo"
html_title = f"n5mscodecs {release}"
html_static_path = []

# -n (nitpicky) is on in CI: every cross-reference must resolve. Nothing is
# fetched (no intersphinx), so names of other projects cannot resolve; they are
# listed here, as are the plain-words types of numpydoc "Parameters" sections.
nitpicky = True
napoleon_type_aliases = {
    "ChunkedInfo": ":class:`~n5mscodecs.czi.ChunkedInfo`",
    "FragmentSegmentAssignment": ":class:`~n5mscodecs.paintera.FragmentSegmentAssignment`",
}
_external = [
    "numpy.ndarray", "numpy.dtypes.ObjectDType", "numcodecs.abc.Codec",
    "zarr.abc.store.Store", "zarr.abc.codec.ArrayBytesCodec", "zarr.abc.codec.BytesBytesCodec",
    "zarr.core.dtype.wrapper.ZDType", "zarr.storage.WrapperStore", "distributed.Client", "os.PathLike",
]
_descriptive_types = [
    "ndarray", "bytes-like", "path", "sequence", "callable", "writable buffer", "out",
    "integer ndarray", "dask array", "int64 ndarray", "uint64 ndarray", "uint32 ndarray", "mapping", "pairs",
]
nitpick_ignore = [("py:class", name) for name in _external + _descriptive_types] + [
    ("py:meth", "numpy.ndarray.transpose"),
]
