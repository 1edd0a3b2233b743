import os

import numpy
import pytest

# gcsfs (read at its import) would probe every bucket's type over gRPC, which the GCS emulator
# of tests/n5/test_remote.py does not serve: 60 s time-outs per call
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


@pytest.fixture(autouse=True)
def _doctest_numpy(doctest_namespace):
    doctest_namespace["np"] = numpy
