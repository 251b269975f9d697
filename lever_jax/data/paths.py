"""One path layer for every file the package reads or writes: local paths and URLs (``gs://``).

Local paths (no ``scheme://``, or ``file://``) go straight to the OS, exactly as before. Anything
else goes through fsspec (``gs://`` needs ``gcsfs``, the ``cloud`` extra); the Google Cloud
Storage client honours ``STORAGE_EMULATOR_HOST`` (``http://127.0.0.1:PORT``), which is how the
tests run against a local emulator instead of a real bucket. Without the package a ``gs://``
path fails with one line saying which extra to install -- never a local folder ``./gs:``.

Writes to object stores are staged in a local temporary file and uploaded in one request on
success: an object appears whole or not at all, the same guarantee ``os.replace`` gives locally.

Libraries that do their own I/O are pointed at the same store by :func:`configure_remote`
(called before any remote use): orbax's etils ``epath`` goes through fsspec/gcsfs too (not
``tf.io.gfile``), and with an emulator set, tensorstore (orbax's array writer) talks to it as well
(``TENSORSTORE_GCS_HTTP_URL``) with a fixed test token instead of looking for credentials.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

from lever_jax.data.errors import UserError

PathLike = str | os.PathLike
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


class CloudPathError(UserError, RuntimeError):
    """A remote path was given but its filesystem is unavailable (missing package, bad URL):
    one line naming the path and what to install (the cli prints it, exit 2)."""


def scheme(path: PathLike) -> str | None:
    """``"gs"`` for ``gs://b/x``; None for local paths (and ``file://``)."""
    match = _SCHEME.match(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
    if match is None or match.group(1).lower() == "file":
        return None
    return match.group(1).lower()


def is_remote(path: PathLike) -> bool:
    return scheme(path) is not None


def local(path: PathLike) -> Path:
    """The local :class:`Path` of a local path or ``file://`` URL."""
    text = os.fspath(path)
    return Path(text[len("file://"):] if text.startswith("file://") else text)


def emulator_url() -> str | None:
    """``http://HOST:PORT`` of the GCS emulator named by ``STORAGE_EMULATOR_HOST`` (None: real GCS)."""
    host = os.environ.get(EMULATOR_ENV, "").strip().rstrip("/")
    if not host:
        return None
    return host if "://" in host else f"http://{host}"


_configured: list[str | None] = []


def configure_remote() -> None:
    """Make orbax (etils epath + tensorstore) read and write remote paths as this module does.

    - ``EPATH_USE_TF=false`` (unless set): epath's ``gs://`` backend is fsspec/gcsfs, not
      ``tf.io.gfile`` (a second client with its own credentials and endpoint settings).
    - With ``STORAGE_EMULATOR_HOST``: fsspec's ``gs``/``gcs`` protocols use gcsfs's JSON-API
      filesystem with anonymous access (its default first asks a gRPC control service the
      emulator lacks, 60 s per call), tensorstore's GCS driver is sent to the emulator
      (``TENSORSTORE_GCS_HTTP_URL``) and given a fixed token (``GOOGLE_AUTH_TOKEN_FOR_TESTING``).
    Idempotent; environment variables already set are left alone."""
    url = emulator_url()
    previous = _configured[-1] if _configured else None
    if _configured and previous == url:
        return
    _configured.append(url)
    os.environ.setdefault("EPATH_USE_TF", "false")
    _forget_epath_backend_choice()
    try:
        import fsspec
        import fsspec.config
    except ImportError:  # pragma: no cover - fsspec ships with orbax
        return
    for proto in ("gs", "gcs"):
        # No cached listings: tensorstore and other processes (multi-host) write behind gcsfs's back.
        fsspec.config.conf.setdefault(proto, {})["use_listings_cache"] = False
    if url is None:
        return
    if os.environ.get("TENSORSTORE_GCS_HTTP_URL") in (None, previous):  # not the user's own setting
        os.environ["TENSORSTORE_GCS_HTTP_URL"] = url
    os.environ.setdefault("GOOGLE_AUTH_TOKEN_FOR_TESTING", "emulator")
    try:
        from gcsfs.core import GCSFileSystem
    except ImportError:
        return  # _filesystem names the extra to install
    for proto in ("gs", "gcs"):
        fsspec.register_implementation(proto, GCSFileSystem, clobber=True)
        fsspec.config.conf[proto]["token"] = "anon"


def _forget_epath_backend_choice() -> None:
    """epath caches "is TensorFlow usable" (``gpath._is_tf_installed``) the first time any URL path
    is touched; if that happened before EPATH_USE_TF was set here, drop the cached answer."""
    try:
        from etils.epath import gpath
    except ImportError:  # pragma: no cover - etils ships with orbax
        return
    cached = getattr(gpath, "_is_tf_installed", None)
    if hasattr(cached, "cache_clear"):
        cached.cache_clear()


def _filesystem(path: PathLike) -> Any:
    """The fsspec filesystem of a remote path (``gcsfs`` talks to the emulator when one is set)."""
    configure_remote()
    proto = scheme(path)
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec ships with the core dependencies (orbax, TF)
        raise CloudPathError(f"{path}: remote paths need fsspec: pip install 'lever-jax[cloud]'") from None
    options: dict[str, Any] = {}
    if proto == "gs":
        try:
            # The JSON-API filesystem: gcsfs's default (ExtendedGcsFileSystem) first asks the
            # storage-control gRPC service for the bucket type, which emulators lack (60 s timeouts).
            from gcsfs.core import GCSFileSystem
        except ImportError:
            raise CloudPathError(f"{path}: gs:// paths need gcsfs: pip install 'lever-jax[cloud]'") from None
        if os.environ.get(EMULATOR_ENV):
            options["token"] = "anon"  # the emulator accepts no credentials
        return GCSFileSystem(**options)
    try:
        return fsspec.filesystem(proto, **options)
    except (ImportError, ValueError) as err:
        raise CloudPathError(f"{path}: no filesystem for {proto}:// ({err})") from None


def require(path: PathLike) -> None:
    """Fail now, in one line (:class:`CloudPathError`), if ``path`` is a URL whose filesystem is
    unavailable -- before a long job gets to its first write there. Local paths: nothing to check."""
    if is_remote(path):
        _filesystem(path)


def join(base: PathLike, *parts: str) -> str:
    """``base/part/...`` for local paths and URLs alike (URLs keep their ``scheme://``)."""
    if not is_remote(base):
        return os.fspath(local(base).joinpath(*parts))
    return "/".join([os.fspath(base).rstrip("/"), *(p.strip("/") for p in parts)])


def basename(path: PathLike) -> str:
    """The last component of a local path or URL (``gs://b/d/x.json`` -> ``x.json``)."""
    if not is_remote(path):
        return local(path).name
    return os.fspath(path).rstrip("/").rsplit("/", 1)[-1]


def parent(path: PathLike) -> str:
    """The directory holding ``path`` (URLs keep their ``scheme://``)."""
    if not is_remote(path):
        return os.fspath(local(path).parent)
    text = os.fspath(path).rstrip("/")
    head = text.rsplit("/", 1)[0]
    return head if head.count("/") >= 2 else text  # gs://bucket is its own parent


def sibling(path: PathLike, name: str) -> str:
    """The path named ``name`` in the directory of ``path``."""
    return join(parent(path), name)


def location(path: PathLike) -> Path | str:
    """A local path as a :class:`Path`, a URL as its string (``Path`` would fold ``gs://`` to ``gs:/``)."""
    return os.fspath(path) if is_remote(path) else local(path)


def version_key(path: PathLike) -> tuple[str, int, str]:
    """(path, size, version) changing whenever the file does: the local mtime, an object's
    generation (or etag). FileNotFoundError when there is no such file."""
    if not is_remote(path):
        st = os.stat(local(path))
        return os.fspath(path), st.st_size, str(st.st_mtime_ns)
    info = _filesystem(path).info(os.fspath(path))
    version = info.get("generation") or info.get("etag") or info.get("updated") or info.get("mtime") or ""
    return os.fspath(path), int(info.get("size") or 0), str(version)


def read_text(path: PathLike) -> str:
    return read_bytes(path).decode("utf-8")


def write_text_atomic(path: PathLike, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def exists(path: PathLike) -> bool:
    if not is_remote(path):
        return local(path).exists()
    return bool(_filesystem(path).exists(os.fspath(path)))


def isdir(path: PathLike) -> bool:
    if not is_remote(path):
        return local(path).is_dir()
    return bool(_filesystem(path).isdir(os.fspath(path)))


def makedirs(path: PathLike) -> None:
    """Create a directory and its parents (object stores have no directories: nothing to do)."""
    if not is_remote(path):
        local(path).mkdir(parents=True, exist_ok=True)


def listdir(path: PathLike) -> list[str]:
    """Full paths of the entries directly under ``path``, sorted."""
    return [name for name, _ in list_entries(path)]


def list_entries(path: PathLike) -> list[tuple[str, bool]]:
    """(full path, is a directory) of the entries directly under ``path``, sorted (one request
    for a remote listing: object stores report their "directories" as common prefixes)."""
    if not is_remote(path):
        return sorted((os.fspath(p), p.is_dir()) for p in local(path).iterdir())
    fs = _filesystem(path)
    prefix = f"{scheme(path)}://"
    own = os.fspath(path).rstrip("/").removeprefix(prefix)
    out = []
    for entry in fs.ls(os.fspath(path), detail=True):
        name = entry["name"].rstrip("/")
        if name.removeprefix(prefix) == own:
            continue  # some stores list the directory marker itself
        out.append((name if name.startswith(prefix) else prefix + name, entry.get("type") == "directory"))
    return sorted(out)


def glob(pattern: str) -> list[str]:
    """Paths matching a glob pattern, sorted."""
    if not is_remote(pattern):
        import glob as globmod

        return sorted(globmod.glob(os.fspath(local(pattern))))
    prefix = f"{scheme(pattern)}://"
    return sorted(prefix + p.removeprefix(prefix) for p in _filesystem(pattern).glob(pattern))


def remove_tree(path: PathLike) -> None:
    """Delete a file or a directory tree; a missing path is not an error."""
    if not is_remote(path):
        target = local(path)
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
        return
    fs = _filesystem(path)
    with contextlib.suppress(FileNotFoundError):
        fs.rm(os.fspath(path), recursive=True)


def open_binary(path: PathLike, mode: str = "rb") -> IO[bytes]:
    """Open for binary reading (or non-atomic writing, ``"wb"``); remote paths via fsspec.

    Remote reads use fsspec's read-ahead cache (one ranged GET per block, 5 MiB on gcsfs): every
    reader here is sequential (gzip, line by line), and gcsfs's default "adaptive" cache sends one
    GET per small read (2,546 GETs, ~18 s on the emulator, for the 1.7 MB bundled GSM8k pool)."""
    if not is_remote(path):
        return open(local(path), mode)  # noqa: SIM115 - returned to the caller
    if "r" in mode:
        return _filesystem(path).open(os.fspath(path), mode, cache_type="readahead")
    return _filesystem(path).open(os.fspath(path), mode)


def read_bytes(path: PathLike) -> bytes:
    with open_binary(path) as handle:
        return handle.read()


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    """Write ``data`` so that ``path`` holds either its old content or all of ``data``."""
    with staged(path) as tmp:
        Path(tmp).write_bytes(data)


@contextlib.contextmanager
def staged(path: PathLike) -> Iterator[str]:
    """Yield a local file name to write; on success it replaces ``path`` atomically.

    Local targets: a temporary file in the target's directory, renamed into place. Remote
    targets: a local temporary file uploaded in one request (an object appears whole or not at
    all). On an exception nothing is written and the temporary file is removed."""
    if not is_remote(path):
        target = local(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        try:
            yield tmp
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return
    fs = _filesystem(path)
    workdir = tempfile.mkdtemp(prefix="lever_jax_upload_")
    try:
        tmp = os.path.join(workdir, os.fspath(path).rstrip("/").rsplit("/", 1)[-1] or "object")  # keeps .gz
        yield tmp
        fs.put_file(tmp, os.fspath(path))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def copy(src: PathLike, dst: PathLike) -> None:
    """Copy one file between any two locations (atomically at the destination)."""
    with staged(dst) as tmp, open_binary(src) as reader, open(tmp, "wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)
