# cython: freethreading_compatible = True
"""The status codes every kernel returns (declared in ``_status.pxd``), as the IntEnum ``Status``."""
