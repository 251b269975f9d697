"""Run the PyPI ``gcp-storage-emulator`` with two behaviours of real GCS it lacks and tensorstore
(orbax's array writer) relies on; everything else is the package's own server, unchanged.

1. Media downloads carry ``x-goog-generation`` / ``x-goog-metageneration`` headers (real GCS sends
   them on every object GET). Without them tensorstore reads generation 0 and its next conditional
   write fails with "Malformed StorageGeneration" (OCDBT rewrites its manifest that way).
2. Uploads honour the ``ifGenerationMatch`` precondition (``0``: only if absent), answering 412 as
   GCS does, so a conditional write is tested as conditional.

Usage: ``python -m tests.gcs_emulator_server start --host ... --port ...`` (the package's CLI flags).
"""
from __future__ import annotations

import sys
from http import HTTPStatus
from typing import Any, Callable

from gcp_storage_emulator import server
from gcp_storage_emulator.__main__ import main
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects


def _current_generation(request: Any, storage: Any, name: str) -> str | None:
    try:
        return str(storage.get_file_obj(request.params["bucket_name"], name)["generation"])
    except NotFound:
        return None


def _with_generation_headers(download: Callable[..., Any]) -> Callable[..., Any]:
    def handler(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        result = download(request, response, storage, *args, **kwargs)
        try:
            obj = storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])
        except NotFound:
            return result
        response["x-goog-generation"] = str(obj["generation"])
        response["x-goog-metageneration"] = str(obj.get("metageneration", "1"))
        return result

    return handler


def _with_preconditions(insert: Callable[..., Any]) -> Callable[..., Any]:
    def handler(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = (request.query.get("ifGenerationMatch") or [None])[0]
        name = (request.query.get("name") or [None])[0]
        if wanted is not None and name is not None:
            have = _current_generation(request, storage, name)
            if (wanted == "0" and have is not None) or (wanted != "0" and have != wanted):
                response.status = HTTPStatus.PRECONDITION_FAILED
                response.json({"error": {"code": 412, "message": "Precondition Failed"}})
                return None
        return insert(request, response, storage, *args, **kwargs)

    return handler


def patch() -> None:
    download, insert = _with_generation_headers(objects.download), _with_preconditions(objects.insert)
    for _, methods in server.HANDLERS:
        for method, fn in list(methods.items()):
            if fn is objects.download:
                methods[method] = download
            elif fn is objects.insert:
                methods[method] = insert
    objects.insert = insert  # the server also looks it up by name for bare POST uploads
    objects.download = download  # and objects.get serves ?alt=media through it


if __name__ == "__main__":
    patch()
    main(sys.argv[1:])
