"""The package's surface: one codec registration path, the error hierarchy's two kinds, the
top-level names, no module aliases."""

import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import n5mscodecs
from n5mscodecs import errors
from n5mscodecs._extras import version_tuple

ROOT = Path(__file__).resolve().parents[1]
CODEC_ENTRY_POINTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["numcodecs.codecs"]


def run_python(code):
    """``code``'s stdout as JSON, run in a fresh interpreter (nothing imported yet)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def test_get_codec_after_importing_only_numcodecs():
    """The entry points alone: numcodecs finds every codec in a process that never imported the package."""
    found = run_python(
        "import json, sys, numcodecs\n"
        "assert 'n5mscodecs' not in sys.modules\n"
        f"ids = {sorted(CODEC_ENTRY_POINTS)!r}\n"
        "codecs = {i: numcodecs.get_codec({'id': i}) for i in ids}\n"
        "print(json.dumps({i: [type(c).__module__, type(c).__name__, c.codec_id] for i, c in codecs.items()}))\n"
    )
    assert sorted(found) == sorted(CODEC_ENTRY_POINTS)
    for codec_id, (module, name, reported_id) in found.items():
        entry_module, entry_name = CODEC_ENTRY_POINTS[codec_id].split(":")
        assert module.startswith(entry_module) and name == entry_name and reported_id == codec_id


def test_importing_the_package_registers_nothing_by_hand():
    """One registration path: after ``import n5mscodecs`` numcodecs' registry holds none of our
    ids until ``get_codec`` loads them from the entry points, which then gives our classes."""
    found = run_python(
        "import json, numcodecs, n5mscodecs\n"
        "from numcodecs.registry import codec_registry\n"
        f"ids = {sorted(CODEC_ENTRY_POINTS)!r}\n"
        "before = sorted(i for i in ids if i in codec_registry)\n"
        "ours = all(type(numcodecs.get_codec({'id': i})) is getattr(n5mscodecs, type(numcodecs.get_codec({'id': i}))"
        ".__name__) for i in ids)\n"
        "print(json.dumps({'before': before, 'ours': ours}))\n"
    )
    assert found == {"before": [], "ours": True}


@pytest.mark.parametrize("old", ["czi_chunked", "label_multiset", "label_multiset_vlen", "n5_label_multiset",
                                 "n5_varlen", "n5_header", "n5_compression", "multiset_array", "payload_layout"])
def test_no_module_aliases(old):
    """The flat module paths of unreleased development versions are gone."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"n5mscodecs.{old}")


def test_storage_errors_are_os_errors_not_value_errors():
    assert issubclass(errors.StorageError, OSError) and issubclass(errors.StorageError, errors.N5msCodecsError)
    assert not issubclass(errors.StorageError, ValueError)
    try:
        raise errors.StorageError("s3://bucket/c.n5/attributes.json: read failed")
    except ValueError:  # parsing code's except ValueError must not swallow a storage failure
        pytest.fail("StorageError caught as a ValueError")
    except OSError as error:
        assert "read failed" in str(error)


def test_input_errors_are_value_errors():
    rejecting_input = [getattr(errors, name) for name in errors.__all__
                       if name not in ("N5msCodecsError", "StorageError")]
    assert len(rejecting_input) == 12
    assert all(issubclass(cls, errors.N5msCodecsError) and issubclass(cls, ValueError) for cls in rejecting_input)
    assert issubclass(errors.InputTypeError, TypeError) and issubclass(errors.MissingExtraError, ImportError)


def test_top_level_names():
    """A list a user reads in a minute: codecs, label multisets, CZI functions, errors."""
    assert len(n5mscodecs.__all__) == len(set(n5mscodecs.__all__)) <= 35
    assert all(hasattr(n5mscodecs, name) for name in n5mscodecs.__all__)
    assert set(errors.__all__) <= set(n5mscodecs.__all__)
    public = {name for name in vars(n5mscodecs) if not name.startswith("_")}
    subpackages = {name for name in public if type(getattr(n5mscodecs, name)) is type(n5mscodecs)}
    assert public - subpackages == set(n5mscodecs.__all__) - {"__version__"}
    for module in ("n5mscodecs.czi", "n5mscodecs.zarr", "n5mscodecs.errors"):
        exported = importlib.import_module(module)
        assert all(hasattr(exported, name) for name in exported.__all__), module


def test_zarr_private_internals_are_reached_from_one_module():
    """The package touches zarr.core only through n5mscodecs.zarr._compat."""
    pytest.importorskip("zarr")
    from n5mscodecs.zarr import _compat

    assert version_tuple("3.1.6.dev12+g0a1b") == (3, 1, 6) and version_tuple("3.4") == (3, 4)
    assert _compat.LOADS_DATA_TYPE_ENTRY_POINTS == (_compat.ZARR_VERSION >= (3, 4, 1))
    for module in PACKAGE.rglob("*.py"):
        if module.name != "_compat.py":
            assert "zarr.core" not in module.read_text().replace("``zarr.core``", ""), module.name


def test_wrap_private_function_is_idempotent_and_skips_missing_functions(monkeypatch):
    pytest.importorskip("zarr")
    import types

    from n5mscodecs.zarr._compat import wrap_private_function

    module = types.ModuleType("n5mscodecs_test_module")
    module.double = lambda x: 2 * x
    monkeypatch.setitem(sys.modules, module.__name__, module)
    wrapped = 0

    def plus_one(original):
        nonlocal wrapped
        wrapped += 1
        return lambda x: original(x) + 1

    assert wrap_private_function(module.__name__, "double", plus_one)
    assert wrap_private_function(module.__name__, "double", plus_one)  # kept, not wrapped twice
    assert module.double(3) == 7 and wrapped == 1
    assert not wrap_private_function(module.__name__, "missing", plus_one) and not hasattr(module, "missing")


# the imported package (a source tree or an installed wheel: both hold the .pyx and .pyi files)
PACKAGE = Path(n5mscodecs.__file__).parent
KERNELS = sorted(path.relative_to(PACKAGE.parent).with_suffix("") for path in PACKAGE.rglob("*.pyx"))


def test_every_kernel_has_a_stub():
    assert len(KERNELS) >= 7  # the package's .pyx files were found
    assert [k for k in KERNELS if not (PACKAGE.parent / k).with_suffix(".pyi").is_file()] == []


@pytest.mark.parametrize("kernel", KERNELS, ids=str)
def test_kernel_stubs_match_the_compiled_modules(kernel):
    """Every kernel has a ``.pyi`` beside its ``.pyx`` naming each public function and class of
    the compiled module with its parameters (names, order and defaults) as the kernel has them."""
    import ast
    import inspect

    stub = ast.parse((PACKAGE.parent / kernel).with_suffix(".pyi").read_text())
    module = importlib.import_module(".".join(kernel.parts))
    stubbed = {node.name: node for node in stub.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    compiled = {name: value for name, value in vars(module).items()
                if not name.startswith("_") and (inspect.isclass(value) or callable(value))
                and getattr(value, "__module__", None) == module.__name__}
    assert sorted(stubbed) == sorted(compiled)
    for name, node in stubbed.items():
        if isinstance(node, ast.ClassDef):
            continue
        parameters = list(inspect.signature(compiled[name]).parameters.values())
        assert [a.arg for a in node.args.args] == [p.name for p in parameters], name
        defaults = [ast.literal_eval(d) for d in node.args.defaults]
        assert defaults == [p.default for p in parameters if p.default is not inspect.Parameter.empty], name


def test_no_test_reads_the_clock():
    """Tests assert mechanisms (what failed, how often it was tried, how many requests
    overlapped), never elapsed wall time: a busy machine makes any time bound flaky. (A
    timestamp, ``time.time()``, may be written: a stale heartbeat is a date, not a duration.)"""
    import re

    clock = re.compile(r"\btime\.(perf_counter|monotonic|process_time)(_ns)?\(|\btimeit\b")
    readers = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "tests").rglob("*.py"))
               for number, line in enumerate(path.read_text().splitlines(), 1) if clock.search(line)]
    assert readers == []


def test_one_import_opens_label_multiset_arrays_with_plain_zarr(tmp_path):
    """``import n5mscodecs`` is all plain zarr needs for a ``label_multiset`` array (an
    ``ome-zarr --multisets`` export): zarr >= 3.4.1 loads the data type from its entry point,
    older zarr 3 is handed it by the import (it ignores data type entry points)."""
    zarr = pytest.importorskip("zarr", minversion="3")
    import n5mscodecs.zarr as nz

    array = zarr.create_array(str(tmp_path / "m.zarr"), shape=(4, 3, 2), chunks=(2, 3, 2), dtype="label_multiset")
    nz.write_label_multisets(array, np.arange(24, dtype=np.uint64).reshape(4, 3, 2) % 5)
    found = run_python(
        "import json, sys, zarr, n5mscodecs\n"
        "imported = 'n5mscodecs.zarr' in sys.modules\n"
        f"a = zarr.open_array({str(tmp_path / 'm.zarr')!r}, mode='r')\n"
        "print(json.dumps({'dtype': type(a.metadata.data_type).__name__, 'item': str(a[1, 2, 1]),\n"
        "                  'imported': imported}))\n"
    )
    assert found["dtype"] == "LabelMultisetDType" and found["item"] == "LabelMultiset({1: 1})"
    assert found["imported"] == n5mscodecs._extras.zarr_needs_data_type_registration()
