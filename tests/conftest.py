"""Fixtures every test directory shares (defined in support.py)."""

from support import s3  # noqa: F401  (the moto S3 server fixture)
