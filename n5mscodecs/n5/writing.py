"""What every writer in the package does so that nothing half-done passes for finished data.

- **The incomplete marker.** A dataset being written carries ``n5mscodecs:incomplete``
  in its ``attributes.json`` from before its first block until after its last;
  :func:`n5mscodecs.n5.open`, the zarr store view and the Paintera readers (the
  label-to-block lookup's included) refuse it with :class:`~n5mscodecs.IncompleteError`
  (a killed writer would otherwise leave blocks that read as fill values without a
  word). An overwrite marks *every* dataset it is about to change (for a Paintera
  source, every dataset below it, see :meth:`~n5mscodecs.n5.store.Store.mark_datasets_below`)
  *before* removing anything, and a stage that rewrites a dataset (the label-to-block
  lookup) marks it before its first byte changes; the marks are removed last (for the
  dataset writers, :func:`dataset_writer` does all of this). So an interruption leaves
  either the old data or a marked dataset, never a silently partial one. Java and other
  N5 readers ignore the attribute.
- **The writer lock.** Every writer holds ``.n5ms-lock`` in the location it writes
  while it writes: ``n5ms convert`` and ``paintera.convert``, ``n5ms argmax``,
  ``n5ms commit``/``paintera.commit`` and the assignment writers hold the label
  source's (or target's), ``n5ms ome-zarr``/``paintera.to_ome_zarr`` the zarr
  target's; :func:`n5mscodecs.n5.write`, :func:`~n5mscodecs.n5.write_array`
  and :func:`~n5mscodecs.n5.create_array_dataset` (with or without ``overwrite``) hold
  *the dataset's own* (``DATASET/.n5ms-lock``). A second writer of the same location
  gets :class:`~n5mscodecs.TargetInUseError` naming the first. The dataset's own
  location, not its container's, so that writers of different datasets of one
  container run side by side (as h5py and zarr let them); a dataset writer also looks
  at the locks of the locations above it and refuses while one of them is held (a
  conversion or commit of the Paintera source the dataset belongs to). Writers called
  by a writer that holds a lock (``n5ms argmax`` creating its dataset, the assignment
  writer creating its dataset below the source it locked) reuse it in the same thread
  (``WriterLock(..., reuse=True)``); any other second acquisition is refused, also in
  the same thread. Locally it is an ``flock`` (the system releases
  it when the process dies, so a killed writer never leaves a stale lock); on object
  stores, which have no locks, it is an object that the writer refreshes every 30 s
  and that counts as abandoned after 120 s without a refresh. The refusal says how old
  the heartbeat is and when the lock counts as abandoned; ``break_lock`` (``n5ms
  unlock TARGET``) removes an abandoned one at once, a fresher one only with ``force``
  (a local lock held by a running process never: stop the process).
- **Links.** The lock file is opened without following a symbolic link
  (``O_NOFOLLOW``) inside the container root: a lock path that is a link (even one
  pointing inside the container), anything but a regular file or a file with other hard
  links is refused (a :class:`~n5mscodecs.ConfigurationError` naming it, exit 2 in the CLI)
  before anything is written; the directories above it must resolve inside the container
  root, as for every write. Attribute and marker
  writes go through the store, which writes a new file and renames it over the old
  one (a link there is replaced, never written through) and refuses a path that
  resolves outside the root.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import socket
import stat
import threading
import time
import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, IncompleteError, TargetInUseError
from . import storage
from .metadata import N5_VERSION
from .storage import INCOMPLETE_KEY, LOCK_NAME
from .store import Store
from .stores import open_store

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

    from .storage import PathLike, StorageOptions
    from .store import Where

HEARTBEAT_SECONDS = 30.0
STALE_SECONDS = 120.0


def incomplete_marker(writer: str, finish: str) -> dict[str, str]:
    """The value of :data:`INCOMPLETE_KEY`: who writes, and how a user finishes or replaces it."""
    return {"writer": writer, "finish": finish}


def check_complete(attributes: Mapping[str, Any], name: str) -> None:
    """IncompleteError naming ``name`` when ``attributes`` carry the incomplete marker."""
    marker = attributes.get(INCOMPLETE_KEY)
    if marker is None:
        return
    marker = marker if isinstance(marker, dict) else {}
    writer = marker.get("writer") if isinstance(marker.get("writer"), str) else "a writer"
    finish = marker.get("finish") if isinstance(marker.get("finish"), str) else "write it again"
    raise IncompleteError(
        f"{name}: INCOMPLETE: {writer} was interrupted before it finished this dataset (blocks it did not "
        f"write would read as fill values); {finish}")


def rewrite_hint(writer: str) -> str:
    """How a user finishes a dataset that ``writer`` left incomplete: the ``finish`` of its marker."""
    return f"finish it by writing it again ({writer} with overwrite=True)"


def marked(document: Mapping[str, Any], marker: Mapping[str, str] | None) -> dict[str, Any]:
    """The attributes ``document`` with the incomplete marker ``marker`` (None: without one)."""
    document = {k: v for k, v in document.items() if k != INCOMPLETE_KEY}
    if marker is not None:
        document[INCOMPLETE_KEY] = dict(marker)
    return document


def write_marked(store: Store, document: Mapping[str, Any], marker: Mapping[str, str] | None) -> None:
    """Write the attributes ``document`` of ``store``, with the incomplete marker when given."""
    store.set_attributes("", marked(document, marker))


def mark_complete(location: Where, *, storage_options: StorageOptions = None) -> None:
    """Remove the incomplete marker from the attributes of ``location`` (a location, or its
    store) after its last block."""
    store = open_store(location, storage_options)
    store.check_writable("", "mark complete")
    store.update_attributes(remove=[INCOMPLETE_KEY])


def write_container_version(root: Store | None) -> None:
    """Give the container root ``root`` the attribute ``{"n5": N5_VERSION}``, as Java's N5 writers
    do (other N5 readers, e.g. z5py, refuse a container without it), keeping its other attributes
    and any version already there. Nothing to do for ``root=None``."""
    if root is not None:
        root.update_attributes(defaults={"n5": N5_VERSION})


@contextmanager
def dataset_writer(store: Store, document: Mapping[str, Any], marker: Mapping[str, str] | None, *,
                   overwrite: bool = False, container: PathLike | Store | None = None,
                   complete: bool = True) -> Iterator[None]:
    """What every writer of one dataset does around its blocks (a context manager): it holds the
    dataset's own writer lock (a writer calling it, ``n5ms argmax`` say, holds it already: it
    is reused; a directory made only to hold the lock is removed again when nothing else was
    written there); it writes the attributes ``document``, marked incomplete when ``marker``
    is given, and gives the container root its N5 version (``write_container_version``)
    before the body writes the blocks; after a body that raised nothing it removes the marker
    (unless not ``complete``: the caller then calls :func:`mark_complete` after its own last
    block).

    The container root (``container``, else the nearest ``*.n5`` of the dataset and its
    parents) is found, or ``container`` checked, before anything is written. An existing
    dataset is replaced only with ``overwrite``: its attributes are replaced by the marked new
    ones *before* its blocks are removed, so that an interruption leaves a dataset every reader
    refuses, never old attributes over new blocks; anything else there is refused."""
    created = not store.is_directory()
    try:
        with WriterLock(store, reuse=True):
            root = store.container_root(container)
            if set(store.list_dir()) - {LOCK_NAME}:  # the lock of a writer calling us is no content
                if not overwrite:
                    raise FileExistsError(f"{store.display()} exists (pass overwrite=True to replace it)")
                if "dimensions" not in store.get_attributes():
                    raise ConfigurationError(
                        f"{store.display()}: refusing to overwrite something that is not an N5 dataset")
                store.set_attributes("", marked(document, marker or incomplete_marker(
                    "an overwrite", rewrite_hint("the writer"))))
                store.clear("", {storage.ATTRIBUTES, LOCK_NAME})
            else:
                store.make_directory()
            store.set_attributes("", marked(document, marker))
            write_container_version(root)
            yield
            if complete:  # re-read: the root's version may sit in the same file
                store.update_attributes(remove=[INCOMPLETE_KEY])
    finally:
        if created and store.is_directory() and not store.list_dir():
            store.delete_tree("")


def _owner() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "token": uuid.uuid4().hex}


def _describe_owner(owner: Any) -> str:
    if not isinstance(owner, dict):
        return "another process"
    return f"process {owner.get('pid', '?')} on {owner.get('host', '?')} (since {owner.get('started', '?')})"


def _heartbeat_age(owner: Any) -> float | None:
    """Seconds since an object-store lock's last heartbeat (None: no heartbeat, a local lock)."""
    try:
        return time.time() - float(owner["heartbeat"])
    except (TypeError, KeyError, ValueError):
        return None


def _staleness(owner: Any, target: str) -> str:
    """For an object-store lock: how old its heartbeat is and how to break it if its writer died."""
    age = _heartbeat_age(owner)
    if age is None:
        return ""
    return (f"; its last heartbeat was {age:.0f} s ago: if that writer died, the lock counts as abandoned in "
            f"{max(0.0, STALE_SECONDS - age):.0f} s, or remove it now with `n5ms unlock {storage.display(target)} "
            "--force` (n5mscodecs.n5.writing.break_lock) once you are sure no writer runs")


def break_lock(target: Where, options: StorageOptions = None, *, force: bool = False) -> dict[str, Any] | None:
    """Remove the writer lock of ``target`` (a location, ``options`` its storage options, or a
    store) that a writer left behind; returns what the lock recorded of its owner (``{}``
    when it recorded nothing readable), None when there was no lock.

    On an object store a lock whose heartbeat is older than ``STALE_SECONDS`` (120) (a writer
    that died) is removed; a fresher one only with ``force=True``, since its writer may still
    run and two writers would then write at once (TargetInUseError without it). A local lock
    held by a running process is always refused (the system releases it when the process
    ends: stop the process); a lock file nobody holds is taken and released, which removes it
    (taken first: a writer starting meanwhile keeps its lock)."""
    store = target if isinstance(target, Store) else open_store(target, options)
    store.check_writable(LOCK_NAME, "unlock")
    if not store.exists():
        raise FileNotFoundError(f"{store.display()} does not exist")
    local = store.local_file(LOCK_NAME)
    if local is not None:
        if not os.path.lexists(local):
            return None
        lock = WriterLock(store)
        lock.acquire()   # TargetInUseError naming a running holder: a local lock is never stale
        lock.release()
        return {}
    try:
        owner = store.get_json(LOCK_NAME)
    except ConfigurationError:   # not JSON: no writer's heartbeat
        owner = {}
    if owner is None:
        return None
    age = _heartbeat_age(owner)
    if age is not None and age < STALE_SECONDS and not force:
        raise TargetInUseError(
            f"{store.display()}: its lock's last heartbeat was {age:.0f} s ago ({_describe_owner(owner)}); it counts "
            f"as abandoned after {STALE_SECONDS:.0f} s: pass force=True (--force) only if no writer runs")
    store.delete(LOCK_NAME)
    return owner if isinstance(owner, dict) else {}


# flags of os.open that only some systems have
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

# the locks this process holds: lock key -> [the thread holding it, how many times it took it]
_HELD: dict[str, list[int]] = {}
_HELD_LOCK = threading.Lock()


def _held_by_this_thread(key: str) -> bool:
    with _HELD_LOCK:
        holder = _HELD.get(key)
    return holder is not None and holder[0] == threading.get_ident()


class WriterLock:
    """The exclusive writer lock of a target (a context manager); see the module notes.

    >>> import tempfile
    >>> target = tempfile.mkdtemp() + "/out.n5/labels"
    >>> with WriterLock(target):
    ...     WriterLock(target).acquire()
    Traceback (most recent call last):
    ...
    n5mscodecs.errors.TargetInUseError: ...

    ``reuse=True`` (for a writer that a writer may call, such as :func:`n5mscodecs.n5.write`):
    a lock this thread holds already, on the target or a location above it, is taken once
    more instead of refused. ``wait``: seconds to keep trying while another thread or
    process holds it (for short critical sections such as handing out one id), before
    TargetInUseError.
    """

    def __init__(self, target: Where, options: StorageOptions = None, *, reuse: bool = False,
                 wait: float = 0.0) -> None:
        """``target``: the target's location (``options``: its storage options) or store; a
        location is opened when the lock is first taken."""
        self.reuse = reuse
        self.wait = wait
        self._target = (target, options)
        self._fd: int | None = None
        self._owner: dict[str, Any] | None = None
        self._nested = False
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    @functools.cached_property
    def store(self) -> Store:
        """The target's store."""
        return open_store(*self._target)

    @property
    def target(self) -> str:
        """The target's location."""
        return self.store.location

    @property
    def path(self) -> str:
        """The location of the lock (file or object)."""
        return self.store.url(LOCK_NAME)

    @functools.cached_property
    def _lock_file(self) -> str | None:
        """The local lock file, locked with flock; None: an object store's lock is a heartbeat object."""
        return self.store.local_file(LOCK_NAME)

    @functools.cached_property
    def _key(self) -> str:
        """What tells this lock's target apart from other locations: the key of the locks this process holds."""
        return self.store.resolved()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def _refuse(self, owner: Any, target: str | None = None, path: str | None = None) -> TargetInUseError:
        target = self.target if target is None else target
        path = self.path if path is None else path
        return TargetInUseError(
            f"{storage.display(target)} is being written by {_describe_owner(owner)}: wait for it to finish "
            f"or stop it first (its lock is {storage.display(path)}{_staleness(owner, target)})")

    def acquire(self) -> None:
        """Take the lock, or TargetInUseError naming the process that holds it (with ``reuse``,
        this thread already holding it takes it once more). A lock held on a location above the
        target (by a writer of the group holding it) refuses it too. With ``wait``, a lock
        another thread or process holds is tried again until ``wait`` seconds have passed."""
        deadline = time.monotonic() + self.wait
        while True:
            try:
                return self._acquire_once()
            except TargetInUseError:
                if time.monotonic() >= deadline or _held_by_this_thread(self._key):
                    raise
                time.sleep(0.01)

    def _acquire_once(self) -> None:
        self.store.check_writable(LOCK_NAME, "lock")
        me = threading.get_ident()
        with _HELD_LOCK:
            holder = _HELD.get(self._key)
            if self.reuse and holder is not None and holder[0] == me:
                holder[1] += 1
                self._nested = True
                return
        if holder is not None:
            this = "this thread" if holder[0] == me else "another thread"
            raise self._refuse({"pid": f"{os.getpid()} ({this})", "host": socket.gethostname()})
        self._check_above()
        if self._lock_file is None:
            self._acquire_object()
        else:
            self._acquire_file(self._lock_file)
        with _HELD_LOCK:
            _HELD[self._key] = [me, 1]

    def _check_above(self) -> None:
        """TargetInUseError when a location above the target is being written (its lock held),
        unless by this thread with ``reuse`` (a writer calling a writer)."""
        local = self.store.local_file()
        if local is not None:
            directory = os.path.abspath(local)
            while os.path.dirname(directory) != directory:
                directory = os.path.dirname(directory)
                if self.reuse and _held_by_this_thread(os.path.realpath(directory)):
                    return
                owner = _file_lock_owner(os.path.join(directory, LOCK_NAME))
                if owner is not False:
                    raise self._refuse(owner, directory, os.path.join(directory, LOCK_NAME))
            return
        store = self.store
        root = storage.container_root(self.target)  # its location: the walk below goes up once
        for _ in range(0 if root is None else storage.depth_below(self.target, root)):
            store = store.parent()
            if self.reuse and _held_by_this_thread(store.resolved()):
                return
            owner = store.get_json(LOCK_NAME)
            if _beating(owner):
                raise self._refuse(owner, store.location, store.url(LOCK_NAME))

    def _acquire_file(self, path):
        import fcntl

        self.store.make_directory()  # confined to the container root, as every write
        while True:
            fd = _open_lock_file(path, self.store.display(LOCK_NAME))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                with os.fdopen(fd, "rb") as f:
                    try:
                        owner = json.loads(f.read(storage.MAX_JSON_BYTES) or b"null")
                    except ValueError:
                        owner = None
                raise self._refuse(owner) from None
            # a holder that released (and unlinked) the file between our open and flock leaves us
            # a lock on a file nobody else sees: try again on the file that is there now
            try:
                same = os.lstat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._owner = _owner()
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(self._owner).encode())
        self._fd = fd

    def _acquire_object(self):
        owner = self.store.get_json(LOCK_NAME)
        if _beating(owner):
            raise self._refuse(owner)
        self._owner = _owner()
        self._write_heartbeat()
        # two writers that both found no lock: the later write wins, the other backs off
        time.sleep(0.2)
        if (self.store.get_json(LOCK_NAME) or {}).get("token") != self._owner["token"]:
            self._owner = None
            raise self._refuse(self.store.get_json(LOCK_NAME))
        self._stop.clear()
        self._heartbeat = threading.Thread(target=self._beat, name="n5ms-lock-heartbeat", daemon=True)
        self._heartbeat.start()

    def _write_heartbeat(self):
        self.store.set_json(LOCK_NAME, {**self._owner, "heartbeat": time.time()})

    def _beat(self):
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                self._write_heartbeat()
            except Exception:  # a failed refresh is retried at the next beat
                pass

    def release(self) -> None:
        """Give the lock up (removing the lock file or object); nothing to do when not held."""
        if self._nested:
            self._nested = False
            with _HELD_LOCK:
                _HELD[self._key][1] -= 1
            return
        if self._fd is None and self._owner is None:
            return
        try:
            if self._fd is not None and self._lock_file is not None:  # the local lock file's descriptor
                fd, self._fd = self._fd, None
                try:
                    os.unlink(self._lock_file)
                except FileNotFoundError:
                    pass
                os.close(fd)
            elif self._owner is not None:
                self._stop.set()
                if self._heartbeat is not None:
                    self._heartbeat.join()
                self._owner = None
                self.store.delete(LOCK_NAME)
        finally:
            with _HELD_LOCK:
                _HELD.pop(self._key, None)


def _beating(owner: Any) -> bool:
    """Whether an object store's lock object ``owner`` was refreshed within STALE_SECONDS."""
    return isinstance(owner, dict) and time.time() - float(owner.get("heartbeat", 0)) < STALE_SECONDS


def lock_held(store: Store) -> bool:
    """Whether a writer holds the writer lock of ``store`` now (a reader waiting for a writer to
    finish asks this): locally a held ``flock``, on an object store a lock object refreshed
    within STALE_SECONDS."""
    local = store.local_file(LOCK_NAME)
    if local is not None:
        return _file_lock_owner(local) is not False
    return _beating(store.get_json(LOCK_NAME))


def _open_lock_file(path: str, name: str) -> int:
    """A descriptor of the lock file ``path`` (created if missing), opened without following a
    link; a link, anything but a regular file, or a file with other hard links (whose bytes
    live elsewhere too) is a ConfigurationError naming ``name``."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise ConfigurationError(f"{name}: lock: {kind}; refusing to write a lock through it (remove it if no "
                           "writer runs)")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # made a link after the lstat
            raise ConfigurationError(f"{name}: lock: a symbolic link; refusing to write a lock through it") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        kind = "not a regular file" if not stat.S_ISREG(info.st_mode) else "a file with other hard links"
        raise ConfigurationError(f"{name}: lock: {kind}; refusing to write a lock into it (remove it if no "
                                 "writer runs)")
    return fd


def _file_lock_owner(path: str) -> Any:
    """The owner recorded in the local lock file ``path`` while a writer holds it, else False
    (no file, a link, not a regular file, unreadable, or a stale one nobody holds)."""
    import fcntl

    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return json.loads(f.read(storage.MAX_JSON_BYTES) or b"null")
            except ValueError:
                return None
        except OSError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
    return False


__all__ = ["INCOMPLETE_KEY", "LOCK_NAME", "WriterLock", "break_lock", "check_complete", "dataset_writer",
           "incomplete_marker", "lock_held", "mark_complete", "marked", "rewrite_hint",
           "write_container_version", "write_marked"]
