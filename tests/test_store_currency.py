"""The store as the package's currency (issue 43): every N5 entry point takes a store, a
read-only store makes every write path refuse (and leaves the bytes as they were), and the
package has no import cycle."""

import ast
import hashlib
import os
import uuid
from pathlib import Path

import numpy as np
import pytest

import n5mscodecs
from n5mscodecs import ReadOnlyError, n5
from n5mscodecs.n5.writing import WriterLock

LABELS = (np.arange(60, dtype=np.uint64).reshape(5, 4, 3) // 7) + 1


def _tree_digest(root: Path) -> dict[str, str]:
    """Every file below ``root`` and a hash of its bytes (what "nothing changed" means)."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file()}


@pytest.fixture(params=["local", "memory"])
def container(request, tmp_path):
    """A container's store with a group, a label multiset dataset and a plain one."""
    if request.param == "local":
        store = n5.open_store(tmp_path / "c.n5")
    else:
        pytest.importorskip("fsspec")
        store = n5.open_store(f"memory://{uuid.uuid4().hex}/c.n5")
    root = n5.open(store, mode="w")
    root.create_group("g").attrs["note"] = "kept"
    root.create_label_multiset_dataset("g/labels", LABELS, chunks=2)
    root.create_dataset("g/plain", data=LABELS.astype(np.uint16), chunks=2)
    return store


def test_entry_points_take_a_store_and_give_what_the_location_gives(container):
    by_store = n5.open(container.child("g/labels"))
    by_location = n5.open(container.url("g/labels"), storage_options=container.storage_options)
    assert np.array_equal(by_store.read_labels(), by_location.read_labels())
    assert np.array_equal(by_store.read_labels(), LABELS)
    assert sorted(n5.open(container)["g"]) == ["labels", "plain"]
    assert n5.read_attributes(container.child("g")) == {"note": "kept"}
    # writers take a store (a group's child, or one the user made)
    written = n5.write(container.child("more/labels"), LABELS, chunks=3)
    assert written.store.url() == container.url("more/labels")
    assert np.array_equal(n5.open_dataset(container.child("more/labels")).read_labels(), LABELS)
    plain = n5.write_array(container.child("more/plain"), LABELS.astype(np.int32), chunks=4)
    assert np.array_equal(plain[:], LABELS)
    assert container.get_attributes() == {"n5": n5.N5_VERSION}  # the root version, found going up
    n5.write_attributes(container.child("more"), {"a": 1})
    assert n5.read_attributes(container.child("more")) == {"a": 1}


def test_zarr_entry_points_take_a_package_store(container):
    zarr = pytest.importorskip("zarr")
    from n5mscodecs.zarr import open_labels, open_n5_store

    assert np.array_equal(open_labels(container, "g/labels")[:], LABELS)
    array = zarr.open_array(open_n5_store(container, multisets="labels"), path="g/labels", mode="r")
    assert np.array_equal(array[:], LABELS)


def _writes(root, store):
    """Every way to change what a container holds through the public classes built on ``store``."""
    group = root["g"]
    labels, plain = group["labels"], group["plain"]
    return {
        "create_group": lambda: root.create_group("new"),
        "require_group": lambda: root.require_group("new"),
        "create_dataset": lambda: group.create_dataset("d", data=np.zeros(3, np.uint8)),
        "require_dataset": lambda: group.require_dataset("d", shape=3, dtype="uint8"),
        "create_label_multiset_dataset": lambda: group.create_label_multiset_dataset("m", LABELS, 2),
        "group[name] = array": lambda: group.__setitem__("d", np.zeros(3, np.uint8)),
        "del group[name]": lambda: group.__delitem__("plain"),
        "group attrs set": lambda: group.attrs.__setitem__("note", "changed"),
        "group attrs del": lambda: group.attrs.__delitem__("note"),
        "group attrs update": lambda: group.attrs.update({"x": 1}),
        "labels[...] = ": lambda: labels.__setitem__((0, 0, 0), 9),
        "labels.write_block": lambda: labels.write_block((0, 0, 0), np.full((2, 2, 2), 9, np.uint64)),
        "labels.write_block_bytes": lambda: labels.write_block_bytes((0, 0, 0), b"x"),
        "labels.resize": lambda: labels.resize((6, 4, 3)),
        "labels attrs": lambda: labels.attrs.__setitem__("x", 1),
        "plain[...] = ": lambda: plain.__setitem__((0, 0, 0), 9),
        "plain.write_block": lambda: plain.write_block((0, 0, 0), np.ones((2, 2, 2), np.uint16)),
        "plain.write_varlength_block": lambda: plain.write_varlength_block((0, 0, 0), [1, 2]),
        "plain.resize": lambda: plain.resize((2, 2, 2)),
        "plain attrs": lambda: plain.attrs.__setitem__("x", 1),
        "n5.write": lambda: n5.write(store.child("g/labels"), LABELS, 2, overwrite=True),
        "n5.write_array": lambda: n5.write_array(store.child("g/plain"), LABELS, 2, overwrite=True),
        "n5.create_array_dataset": lambda: n5.create_array_dataset(store.child("g/x"), (2,), 2, "uint8"),
        "n5.write_attributes": lambda: n5.write_attributes(store.child("g"), {}),
        "n5.mark_complete": lambda: n5.mark_complete(store.child("g/labels")),
        "WriterLock": lambda: WriterLock(store.child("g")).acquire(),
        "n5.open(mode='w')": lambda: n5.open(store, mode="w"),
        "store.set": lambda: store.set("g/labels/0/0/0", b""),
        "store.delete_tree": lambda: store.delete_tree("g"),
    }


@pytest.mark.parametrize("how", ["open_store(read_only=True)", "mode r"])
def test_a_read_only_store_refuses_every_write_and_changes_nothing(container, how, tmp_path):
    if how == "mode r":
        root = n5.open(container, mode="r")
        store = root.store
    else:
        store = n5.open_store(container, read_only=True)
        root = n5.open(store, mode="r+")  # r+ over a read-only store: still read-only
    assert store.read_only and root.read_only
    before = _tree_digest(tmp_path / "c.n5") if container.is_local else None
    for name, write in _writes(root, store).items():
        with pytest.raises(ReadOnlyError, match="read-only"):
            write()
            pytest.fail(f"{name} wrote through a read-only store")
    if container.is_local:
        assert _tree_digest(tmp_path / "c.n5") == before
    assert np.array_equal(n5.open(container)["g/labels"].read_labels(), LABELS)
    assert n5.read_attributes(container.child("g")) == {"note": "kept"}


def test_a_read_only_paintera_store_refuses_the_paintera_writers(tmp_path):
    from n5mscodecs import paintera

    paintera.convert(LABELS, tmp_path / "p.n5" / "labels", block_size=2)
    before = _tree_digest(tmp_path / "p.n5")
    store = n5.open_store(tmp_path / "p.n5" / "labels", read_only=True)
    for write in (lambda: paintera.convert(LABELS, store, block_size=2, overwrite=True),
                  lambda: paintera.write_assignment(store, {1: 2}),
                  lambda: paintera.commit(store, np.full((2, 2, 2), 5, np.uint64), offset=(0, 0, 0))):
        with pytest.raises(ReadOnlyError):
            write()
    assert _tree_digest(tmp_path / "p.n5") == before


def test_file_urls_are_their_paths(tmp_path):
    n5.write(tmp_path / "c.n5" / "labels", LABELS, chunks=2)
    store = n5.open_store(f"file://{tmp_path}/c.n5")
    assert store.location == f"{tmp_path}/c.n5" and store.child("labels").parent().location == store.location
    assert np.array_equal(n5.open(f"file://{tmp_path}/c.n5/labels").read_labels(), LABELS)


def test_locations_keep_their_spelling_going_up_and_down(tmp_path):
    """A location written with ``..`` (as ``../shared/data`` is): a child's parent is the location
    its group gives, so a dataset's ``.parent`` is the group it was opened from."""
    (tmp_path / "x").mkdir()
    n5.write(tmp_path / "c.n5" / "g" / "labels", LABELS, chunks=2)
    store = n5.open_store(f"{tmp_path}/x/../c.n5")
    assert store.child("g/labels").parent().url() == store.url("g") == f"{tmp_path}/x/../c.n5/g"
    root = n5.open(store)
    assert root["g/labels"].parent.path == root["g"].path
    assert np.array_equal(root["g/labels"].parent["labels"].read_labels(), LABELS)


# ---------------------------------------------------------------------------------------------
# no import cycles


def _imports(package: Path, name: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (module level and inside functions; not the
    ones only a type checker reads), from the source."""
    modules = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        typing_only = {id(node) for block in ast.walk(tree)
                       if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                       for node in ast.walk(block)}
        here = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                base = here.split(".")[: len(here.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for candidate in [target, *(f"{target}.{alias.name}" for alias in node.names)]:
                    if candidate in modules and candidate != module:
                        graph[module].add(candidate)
            elif isinstance(node, ast.Import):
                graph[module].update(alias.name for alias in node.names if alias.name in modules)
    # importing a.b.c runs a/__init__ and a/b/__init__ first: edges to those packages too, except
    # to the packages the importing module lies in (their __init__ runs before it anyway)
    def ancestors(module: str) -> set[str]:
        parts = module.split(".")
        return {".".join(parts[:n]) for n in range(1, len(parts))}

    return {m: {p for t in targets for p in ancestors(t) | {t} if p in modules and p != m and p not in ancestors(m)}
            for m, targets in graph.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (the modules along it), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[module] = 2
        stack.pop()
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_a_submodule_import_runs_its_packages():
    graph = _imports(Path(n5mscodecs.__file__).parent, "n5mscodecs")
    # n5.dataset must not reach paintera at all: importing paintera.anything runs paintera/__init__,
    # which builds on n5 (to_dask gets Paintera's resolver handed down instead)
    assert not any(t.startswith("n5mscodecs.paintera") for t in graph["n5mscodecs.n5.dataset"])
    assert "n5mscodecs.n5" in graph["n5mscodecs.paintera.assignment"]  # via n5.block etc.: the package runs


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_package_has_no_import_cycle():
    package = Path(n5mscodecs.__file__).parent
    graph = _imports(package, "n5mscodecs")
    assert "n5mscodecs.n5.store" in graph["n5mscodecs.n5.group"]  # the graph is read
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])
    assert os.path.exists(package / "py.typed")
