"""What every writer in the package does so that nothing half-done passes for finished data.

- **The incomplete marker.** A dataset being written carries ``n5mscodecs:incomplete``
  in its ``attributes.json`` from before its first block until after its last;
  :func:`n5mscodecs.n5.open`, the zarr store view and the Paintera readers refuse
  it with :class:`~n5mscodecs.IncompleteError` (a killed writer would otherwise
  leave blocks that read as fill values without a word). An overwrite marks the
  old dataset *before* removing anything, so an interruption leaves either the
  old data or a marked dataset, never a silently partial one. Java and other N5
  readers ignore the attribute.
- **The writer lock.** ``n5ms convert`` and ``n5ms argmax`` hold
  ``TARGET/.n5ms-lock`` while they write. Locally it is an ``flock`` (the
  system releases it when the process dies, so a killed writer never leaves
  a stale lock); on object stores, which have no locks, it is an object that
  the writer refreshes every 30 s and that counts as abandoned after
  120 s without a refresh.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING

from ..errors import IncompleteError, TargetInUseError
from . import storage
from .store import Store, open_store

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .storage import StorageOptions, Where

INCOMPLETE_KEY = "n5mscodecs:incomplete"
LOCK_NAME = ".n5ms-lock"
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


def write_marked(location: Where, document: Mapping[str, Any], marker: Mapping[str, str] | None,
                 options: StorageOptions = None) -> None:
    """Write the attributes ``document`` of ``location``, with the incomplete marker when given."""
    document = {k: v for k, v in document.items() if k != INCOMPLETE_KEY}
    if marker is not None:
        document[INCOMPLETE_KEY] = dict(marker)
    storage.write_attributes(location, document, options)


def mark_complete(location: Where, *, storage_options: StorageOptions = None) -> None:
    """Remove the incomplete marker from the attributes of ``location`` (after its last block)."""
    attributes = storage.read_attributes(location, storage_options)
    if INCOMPLETE_KEY in attributes:
        write_marked(location, attributes, None, storage_options)


def _owner() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "token": uuid.uuid4().hex}


def _describe_owner(owner: Any) -> str:
    if not isinstance(owner, dict):
        return "another process"
    return f"process {owner.get('pid', '?')} on {owner.get('host', '?')} (since {owner.get('started', '?')})"


class WriterLock:
    """The exclusive writer lock of a target (a context manager); see the module notes.

    >>> import tempfile
    >>> target = tempfile.mkdtemp() + "/out.n5/labels"
    >>> with WriterLock(target):
    ...     WriterLock(target).acquire()
    Traceback (most recent call last):
    ...
    n5mscodecs.errors.TargetInUseError: ...
    """

    def __init__(self, target: Where, options: StorageOptions = None) -> None:
        """``target``: the target's location (``options``: its storage options) or store."""
        self.store = target if isinstance(target, Store) else open_store(target, options)
        self.target = self.store.location
        self.path = self.store.url(LOCK_NAME)
        # a local target is locked with flock, an object store with a heartbeat object
        self._lock_file = self.store.local_file(LOCK_NAME)
        self._fd: int | None = None
        self._owner: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def _refuse(self, owner: Any) -> TargetInUseError:
        return TargetInUseError(
            f"{storage.display(self.target)} is being written by {_describe_owner(owner)}: wait for it to finish "
            f"or stop it first (its lock is {storage.display(self.path)})")

    def acquire(self) -> None:
        """Take the lock, or TargetInUseError naming the process that holds it."""
        if self._lock_file is None:
            self._acquire_object()
        else:
            self._acquire_file(self._lock_file)

    def _acquire_file(self, path):
        import fcntl

        os.makedirs(os.path.dirname(path), exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                with os.fdopen(fd, "rb") as f:
                    try:
                        owner = json.loads(f.read() or b"null")
                    except ValueError:
                        owner = None
                raise self._refuse(owner) from None
            # a holder that released (and unlinked) the file between our open and flock leaves us
            # a lock on a file nobody else sees: try again on the file that is there now
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
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
        if isinstance(owner, dict) and time.time() - float(owner.get("heartbeat", 0)) < STALE_SECONDS:
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


__all__ = ["INCOMPLETE_KEY", "LOCK_NAME", "WriterLock", "check_complete", "incomplete_marker", "mark_complete",
           "write_marked"]
