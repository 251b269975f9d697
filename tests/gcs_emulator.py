"""A local Google Cloud Storage emulator (PyPI ``gcp-storage-emulator``) for tests: no mock.

``emulator()`` starts it bound to 127.0.0.1 on a free port, in memory, with one bucket, and sets
``STORAGE_EMULATOR_HOST`` so that gcsfs (``lever_jax.data.paths``) talks to it; orbax's tensorstore
follows via ``lever_jax.data.paths.configure_remote``. The server is the package's own, with the
two real-GCS behaviours tensorstore needs added (tests/gcs_emulator_server.py)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def emulator(bucket: str = "lever-test") -> Iterator[str]:
    """Yield the emulator's URL with ``bucket`` created; skip the test if the package is absent."""
    pytest.importorskip("gcsfs")
    pytest.importorskip("gcp_storage_emulator")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    # The package's server with the generation headers and preconditions of real GCS that
    # tensorstore needs (tests/gcs_emulator_server.py).
    proc = subprocess.Popen([sys.executable, "-m", "tests.gcs_emulator_server", "start", "--host", "127.0.0.1",
                             "--port", str(port), "--in-memory", "--default-bucket", bucket, "--quiet"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    old = os.environ.get("STORAGE_EMULATOR_HOST")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/storage/v1/b/{bucket}", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the GCS emulator did not start") from None
                time.sleep(0.1)
        os.environ["STORAGE_EMULATOR_HOST"] = url
        yield url
    finally:
        if old is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = old
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
