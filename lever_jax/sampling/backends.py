"""Where completions come from: one interface, two backends.

- :class:`LlamaCppBackend`: any GGUF file, decoded in this process by llama.cpp (``xllamacpp``,
  extra ``sample``), ``parallel`` sequences at once (llama.cpp's slots with continuous batching).
- :class:`ServerBackend`: any OpenAI-compatible ``/v1/completions`` endpoint that returns token
  log-probs (vLLM, llama.cpp's ``llama-server``, a hosted API).

Both return :class:`Completion` (the text and one log-prob per generated token, from the model's
own distribution, not the tempered one). Every failure a user can cause (missing or corrupt model
file, wrong hash, a server that is down or gives no log-probs) is a one-line :class:`SamplingError`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from lever_jax.data.errors import UserError

GGUF_MAGIC = b"GGUF"


class SamplingError(UserError):
    """A user-fixable sampling problem (one line, exit 2)."""


class BlankCompletion(SamplingError):
    """A whitespace-only completion that kept no token (its stop string began in the first token):
    llama.cpp reports no log-probs for it, so its probability is unknown (the sampler redraws it)."""


@dataclasses.dataclass(frozen=True)
class Completion:
    """One decoded sequence: ``text`` (already cut at the stop) and its tokens' log-probs."""

    text: str
    tokens: tuple[str, ...]
    token_logprobs: tuple[float, ...]
    finish_reason: str | None = None

    def as_choice(self) -> dict[str, Any]:
        """The OpenAI completions layout (what ``lever_jax.data.importers.completions`` reads)."""
        return {"text": self.text, "finish_reason": self.finish_reason,
                "logprobs": {"tokens": list(self.tokens), "token_logprobs": list(self.token_logprobs)}}

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "tokens": list(self.tokens), "logprobs": list(self.token_logprobs),
                "finish_reason": self.finish_reason}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Completion":
        return cls(str(obj["text"]), tuple(obj["tokens"]), tuple(float(v) for v in obj["logprobs"]),
                   obj.get("finish_reason"))


@dataclasses.dataclass(frozen=True)
class Request:
    """One sequence to decode. ``temperature == 0`` is the greedy decode."""

    prompt: str
    stop: tuple[str, ...]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int


class Backend(Protocol):
    """What the sampler needs of a model runtime."""

    model_id: str      # identifies the weights (file digest / server model) in journal keys
    model_name: str    # short name for candidates' ``source``
    parallel: int      # sequences worth decoding at once

    def complete(self, request: Request) -> Completion: ...

    def complete_choices(self, request: Request, n: int) -> list[Completion | None]:
        """``n`` samples of one prompt in one request (the server prefills the prompt once); a
        blank choice without log-probs is None (the sampler redraws it alone)."""
        ...

    def close(self) -> None: ...


def _token_text(entry: Mapping[str, Any]) -> str:
    raw = entry.get("bytes")
    if isinstance(raw, list):  # llama.cpp: a token's exact bytes (its "token" may be a replacement char)
        return bytes(raw).decode("utf-8", errors="replace")
    return str(entry.get("token", ""))


def parse_choice(choice: Mapping[str, Any], where: str) -> Completion:
    """A completion from an OpenAI-style choice (completions or llama.cpp/chat ``content`` layout)."""
    text = choice.get("text")
    logprobs = choice.get("logprobs")
    if not isinstance(text, str):
        raise SamplingError(f"{where}: the reply has no completion text")
    if not isinstance(logprobs, Mapping):
        if not text.strip():
            raise BlankCompletion(f"{where}: a blank completion without token log-probs")
        raise SamplingError(f"{where}: the reply carries no token log-probs (the server must support "
                            "'logprobs' on /v1/completions)")
    if isinstance(logprobs.get("content"), list):
        entries = logprobs["content"]
        tokens = tuple(_token_text(e) for e in entries)
        values = [e.get("logprob") for e in entries]
    else:
        tokens = tuple(str(t) for t in logprobs.get("tokens") or ())
        values = list(logprobs.get("token_logprobs") or ())
    if len(values) != len(tokens) or any(v is None or not math.isfinite(float(v)) for v in values):
        raise SamplingError(f"{where}: token log-probs missing or not finite")
    return Completion(text, tokens, tuple(float(v) for v in values), choice.get("finish_reason"))


def parse_choices(choices: Any, n: int, where: str) -> list[Completion | None]:
    """The ``n`` choices of one reply, in ``index`` order; a blank one without log-probs is None."""
    if not isinstance(choices, list) or len(choices) != n:
        got = len(choices) if isinstance(choices, list) else 0
        raise SamplingError(f"{where}: asked for n={n} choices, the reply has {got}")
    out: list[Completion | None] = []
    for choice in sorted(choices, key=lambda c: int(c.get("index", 0)) if isinstance(c, Mapping) else 0):
        try:
            out.append(parse_choice(choice, where))
        except BlankCompletion:
            out.append(None)
    return out


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def check_model_file(path: str | os.PathLike[str], expected_sha256: str | None = None) -> str:
    """The GGUF file's sha256 after checking it exists, is a GGUF file and (when given) has the
    expected digest; one-line :class:`SamplingError` otherwise."""
    p = Path(path)
    where = f"--model {path}"
    if not p.is_file():
        raise SamplingError(f"{where}: no such file")
    with open(p, "rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise SamplingError(f"{where}: not a GGUF model file (no GGUF header)")
    digest = file_sha256(p)
    if expected_sha256 and digest != expected_sha256.strip().lower():
        raise SamplingError(f"{where}: sha256 {digest} does not match --model-sha256 {expected_sha256}")
    return digest


class LlamaCppBackend:
    """A GGUF model decoded in-process by llama.cpp, ``parallel`` slots of ``ctx_size`` tokens each.

    llama.cpp's defaults ``top_k=40, min_p=0.05`` are switched off so that temperature and top-p
    alone shape the distribution, as in LEVER's (OpenAI) sampling."""

    def __init__(self, model_path: str | os.PathLike[str], *, sha256: str | None = None, threads: int | None = None,
                 parallel: int = 1, ctx_size: int = 4096, verbose: bool = False):
        digest = check_model_file(model_path, sha256)
        try:
            import xllamacpp
        except ImportError:
            raise SamplingError("--model needs the llama.cpp runtime: pip install 'lever-jax[sample]'") from None
        params = xllamacpp.CommonParams()
        params.model.path = str(model_path)
        params.n_parallel = parallel
        params.n_ctx = parallel * ctx_size
        params.cpuparams.n_threads = threads or os.cpu_count() or 1
        params.cpuparams_batch.n_threads = threads or os.cpu_count() or 1
        params.warmup = False
        if not verbose:
            params.verbosity = -1
        try:
            self._server = xllamacpp.Server(params)
        except Exception as err:  # noqa: BLE001 - llama.cpp reports load failures as exceptions
            raise SamplingError(f"--model {model_path}: llama.cpp could not load it ({err})") from None
        self.model_id = f"gguf-sha256:{digest}"
        self.model_name = Path(model_path).name.removesuffix(".gguf")
        self.parallel = parallel
        self.url = str(self._server.listening_address)

    def _choices(self, request: Request, n: int) -> list[Any]:
        body = {"prompt": request.prompt, "max_tokens": request.max_tokens, "temperature": request.temperature,
                "top_p": request.top_p, "top_k": 0, "min_p": 0.0, "seed": request.seed, "logprobs": 1,
                "stop": list(request.stop), "n": n, "cache_prompt": True}
        reply = self._server.handle_completions(body)
        if not isinstance(reply, Mapping) or "error" in reply or not reply.get("choices"):
            raise RuntimeError(f"llama.cpp returned an error: {json.dumps(reply)[:300]}")
        return reply["choices"]

    def complete(self, request: Request) -> Completion:
        return parse_choice(self._choices(request, 1)[0], "llama.cpp")

    def complete_choices(self, request: Request, n: int) -> list[Completion | None]:
        """One request with ``n`` choices: llama.cpp prefills the prompt once and copies its KV
        cache to the other slots (``parallel`` must be >= n for them to decode together)."""
        return parse_choices(self._choices(request, n), n, "llama.cpp")

    def close(self) -> None:
        self.__dict__.pop("_server", None)


class ServerBackend:
    """An OpenAI-compatible ``/v1/completions`` endpoint (``url`` with or without ``/v1``).

    ``extra`` is merged into every request body (e.g. ``{"top_k": -1}`` for vLLM, or llama.cpp's
    ``{"top_k": 0, "min_p": 0}`` to switch off its default truncation)."""

    def __init__(self, url: str, *, model: str | None = None, api_key: str | None = None, parallel: int = 1,
                 extra: Mapping[str, Any] | None = None, timeout_s: float = 600.0):
        base = url.rstrip("/")
        self._base = base if base.endswith("/v1") else base + "/v1"
        self._api_key = api_key
        self._extra = dict(extra or {})
        self._timeout = timeout_s
        self.parallel = parallel
        served = model or self._served_model()
        self._model = served
        self.model_name = served.rsplit("/", 1)[-1].removesuffix(".gguf")
        self.model_id = f"server-model:{served}"

    def _call(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self._base + path, data=data, method="GET" if body is None else "POST")
        req.add_header("Content-Type", "application/json")
        if self._api_key:
            req.add_header("Authorization", f"Bearer {self._api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", errors="replace")[:200]
            raise SamplingError(f"--server {self._base}{path}: HTTP {err.code} {detail}") from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", err)
            raise SamplingError(f"--server {self._base}: cannot reach the server ({reason})") from None
        except json.JSONDecodeError:
            raise SamplingError(f"--server {self._base}{path}: the reply is not JSON") from None

    def _served_model(self) -> str:
        reply = self._call("/models")
        models = reply.get("data") if isinstance(reply, Mapping) else None
        if not models:
            raise SamplingError(f"--server {self._base}: /models lists no model; pass --server-model")
        return str(models[0].get("id"))

    def _choices(self, request: Request, n: int) -> list[Any]:
        body = {"model": self._model, "prompt": request.prompt, "max_tokens": request.max_tokens,
                "temperature": request.temperature, "top_p": request.top_p, "seed": request.seed,
                "logprobs": 1, "stop": list(request.stop), "n": n, **self._extra}
        reply = self._call("/completions", body)
        choices = reply.get("choices") if isinstance(reply, Mapping) else None
        if not choices:
            raise SamplingError(f"--server {self._base}/completions: the reply has no choices")
        return choices

    def complete(self, request: Request) -> Completion:
        return parse_choice(self._choices(request, 1)[0], f"--server {self._base}/completions")

    def complete_choices(self, request: Request, n: int) -> list[Completion | None]:
        """One request with ``n`` choices (vLLM and llama.cpp's server share the prompt's prefill)."""
        return parse_choices(self._choices(request, n), n, f"--server {self._base}/completions")

    def close(self) -> None:
        pass


def stop_tuple(stop: Sequence[str] | str | None) -> tuple[str, ...]:
    """A prompt record's ``stop`` (a string, a list or absent) as a tuple."""
    if stop is None:
        return ()
    return (stop,) if isinstance(stop, str) else tuple(str(s) for s in stop)
