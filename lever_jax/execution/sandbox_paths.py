"""What a sandboxed task sees of the host's files, and where (the layout of the mount view).

The view (``isolation.build_sandbox_view``) shows the system directories, the interpreter (its prefixes,
standard library, site directories and the site-packages their ``.pth`` files add), this package
and the sandbox's read-only inputs -- never
the directory lever-jax was started from, nor any other ``sys.path`` entry (a user's project on
``PYTHONPATH``). A shown path that lives in a world-writable directory (a checkout or venv under
/tmp) cannot be shown where it is, because each task's /tmp and /dev/shm are fresh, empty tmpfs: it
is shown under :data:`RELOCATED` instead. A path reached through a symlink is shown at its real
path only. :meth:`Layout.relocation` says how the task's interpreter must be re-pointed for both,
and :func:`relocate` does it (``sys.path``, prefixes, every module's ``__path__``, ``__file__``,
spec and loader), so that later imports and the package's own files resolve inside the view.
"""
from __future__ import annotations

import dataclasses
import os
import site
import sys
import sysconfig
import types
from typing import Any, Callable, Iterable

from lever_jax.execution import isolation
from lever_jax.execution.isolation import WRITABLE_DIRS, _outermost as outermost

RELOCATED = "/lever-sandbox"  # in the view: where paths from world-writable directories are shown


def inside(path: str, dirs: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``dirs`` or below one of them (whole components only)."""
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def hidden_dirs() -> list[str]:
    """Real paths of the world-writable directories (private, per task, in the view)."""
    return sorted({os.path.realpath(d) for d in WRITABLE_DIRS})


def package_dir() -> str:
    """This package's directory (``.../lever_jax``), spelled as it was imported."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpreter_paths() -> list[str]:
    """The interpreter's own directories, spelled as this process knows them: its prefixes, the
    standard library and the site directories (the user's site only when it is on ``sys.path``).
    Never "/" (showing it would show everything)."""
    paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    paths += [sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    paths += site.getsitepackages()
    user = site.getusersitepackages()
    if user in sys.path:
        paths.append(user)
    paths += pth_site_dirs(site.getsitepackages())
    return [p for p in dict.fromkeys(paths)
            if p and os.path.isabs(p) and os.path.isdir(p) and os.path.realpath(p) != "/"]


def pth_site_dirs(site_dirs: Iterable[str]) -> list[str]:
    """Other site-packages directories that the site directories' ``.pth`` files put on ``sys.path``
    (a venv layered on another environment's packages): part of the interpreter's installation.
    Only directories named site-packages / dist-packages count, so that a ``.pth`` naming a project
    checkout (a lenient editable install) shows nothing of that checkout."""
    found = []
    for site_dir in site_dirs:
        try:
            names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(site_dir, name), encoding="utf-8") as handle:
                    lines = handle.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                if not line.strip() or line.startswith(("#", "import ", "import\t")):
                    continue
                path = os.path.join(site_dir, line.rstrip())
                if os.path.basename(os.path.normpath(path)) in ("site-packages", "dist-packages") and os.path.isdir(path):
                    found.append(path)
    return found


def code_paths() -> list[str]:
    """What a task needs to run: the interpreter's directories and this package."""
    return [*interpreter_paths(), package_dir()]


@dataclasses.dataclass
class Layout:
    """``places``: host real path -> where the task finds it (outermost paths only).
    ``rest_visible``: the task sees the rest of the host where it is (no mount view: the fallback)."""

    places: dict[str, str]
    rest_visible: bool = False

    @classmethod
    def for_view(cls, paths: Iterable[str]) -> "Layout":
        """The mount view's layout: ``paths`` (interpreter, package, inputs) where they are, or
        under :data:`RELOCATED` when they live in a world-writable directory."""
        hidden = hidden_dirs()
        reals = outermost([os.path.realpath(p) for p in paths if p and os.path.exists(p)])
        return cls({r: RELOCATED + r if inside(r, hidden) else r for r in reals if r != "/"})

    def moved(self) -> dict[str, str]:
        """The places that differ from the host path (reported: ``Sandbox.task_path``)."""
        return {host: shown for host, shown in self.places.items() if host != shown}

    def place(self, path: str) -> str | None:
        """Where the task finds host ``path`` (any spelling), or None where it does not."""
        if not os.path.isabs(path):
            return None
        real = os.path.realpath(path)
        for host, shown in self.places.items():
            if inside(real, [host]):
                return shown + real[len(host):]
        return path if self.rest_visible and not inside(real, hidden_dirs()) else None

    def relocation(self, spellings: Iterable[str]) -> tuple[dict[str, str], list[str]]:
        """What :func:`relocate` needs: ``{spelling: place}`` for the spellings found elsewhere in
        the task's view, and the task's ``sys.path`` (entries it cannot see are dropped, so that a
        task can never plant modules in its /tmp under a name the import system will look up)."""
        mapping = {}
        for spelling in dict.fromkeys(spellings):
            shown = self.place(spelling)
            if shown is not None and shown != spelling:
                mapping[spelling] = shown
        path = [p for p in (self.place(entry) for entry in sys.path) if p is not None]
        return mapping, list(dict.fromkeys(path))


def spellings() -> list[str]:
    """The prefixes under which this interpreter's modules and paths are named."""
    return [*sys.path, *code_paths(), os.path.dirname(sys.executable)]


def relocate(mapping: dict[str, str], path: list[str]) -> None:
    """Re-point this interpreter: ``sys.path`` becomes ``path``; every string under a ``mapping``
    key (an old spelling) in the prefixes, ``sys.executable`` and the modules' ``__path__``,
    ``__file__``, spec and loader is moved to the key's value. Imports nothing."""
    sys.path[:] = path
    sys.path_importer_cache.clear()
    if not mapping:
        return
    move = _mover(mapping)
    for name in ("prefix", "exec_prefix", "base_prefix", "base_exec_prefix", "executable", "_base_executable"):
        if isinstance(getattr(sys, name, None), str):
            setattr(sys, name, move(getattr(sys, name)))
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType):
            _move_module(vars(module), move)


def _mover(mapping: dict[str, str]) -> Callable[[Any], Any]:
    items = sorted(mapping.items(), key=lambda item: -len(item[0]))

    def move(value: Any) -> Any:
        if isinstance(value, str):
            for old, new in items:
                if value == old or value.startswith(old + "/"):
                    return new + value[len(old):]
        return value

    return move


def _move_list(paths: Any, move: Callable[[Any], Any]) -> None:
    if isinstance(paths, list):
        paths[:] = [move(p) for p in paths]


def _move_module(namespace: dict[str, Any], move: Callable[[Any], Any]) -> None:
    for key in ("__file__", "__cached__"):
        if isinstance(namespace.get(key), str):
            namespace[key] = move(namespace[key])
    search = namespace.get("__path__")
    _move_list(search, move)
    _move_list(getattr(search, "_path", None), move)  # a namespace package's _NamespacePath
    spec = namespace.get("__spec__")
    try:
        if spec is not None:
            spec.origin = move(spec.origin)
            if spec.submodule_search_locations is not search:
                _move_list(spec.submodule_search_locations, move)
            if isinstance(spec.cached, str):
                spec.cached = move(spec.cached)
        loader = namespace.get("__loader__")
        if isinstance(getattr(loader, "__dict__", None), dict) and isinstance(vars(loader).get("path"), str):
            loader.path = move(loader.path)
    except (AttributeError, TypeError):  # a non-standard spec or loader: nothing of ours to move
        pass


def move_kept(kept: list[str], covered: list[str], code_dir: str) -> dict[str, str]:
    """Without a mount view: move the paths :func:`isolation.private_tmp` kept in the private,
    world-writable directories (a checkout or venv under /tmp, inputs) into ``code_dir`` (our own
    directory there, 0711) and re-point this interpreter -- and so every zygote and task -- to
    them, so that a task's /tmp holds nothing of them. Returns {kept path: where it is now}; all
    or nothing (empty where a bind fails: they stay where they are)."""
    places: dict[str, str] = {}
    for path in kept:
        if not isolation.bind_into(code_dir, path):
            for done in places.values():
                isolation.umount(done)
            return {}
        places[path] = code_dir + path
    relocate(*Layout(places, rest_visible=True).relocation(spellings()))
    for path in kept:
        while isolation.umount(path):
            pass
    # the directories private_tmp made to hold them, empty now: removed (a bind still there is
    # read-only: nothing in it can be deleted)
    for path in kept:
        for covering in (d for d in covered if path.startswith(d.rstrip("/") + "/")):
            isolation.remove_tree(os.path.join(covering, path[len(covering):].lstrip("/").split("/")[0]))
    return places
