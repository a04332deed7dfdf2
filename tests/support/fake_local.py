"""What local model servers answer besides chat completions, as ``FakeLLM`` extra routes.

Each builder returns a ``routes`` dict for ``FakeLLM(routes=...)`` imitating one server's endpoints, with the
shapes the real servers send (checked against their sources and, for llama-cpp-python, the real server in
tests/local_model):

- tokenizers: ``llama_cpp_tokenizer()`` (``POST /tokenize`` → ``{"tokens"}``), ``vllm_tokenizer()``
  (``POST /tokenize`` → ``{"count", "max_model_len", "tokens"}``), ``llama_cpp_python_tokenizer()``
  (``POST /extras/tokenize/count`` → ``{"count"}``). A text counts one token per whitespace-separated word
  (``fake_token_count``), so a test knows what to expect.
"""

from __future__ import annotations

from typing import Any

from tests.support.fake_llm import RecordedRequest, Route


def fake_token_count(text: str) -> int:
    """The fake tokenizers' count: one token per whitespace-separated word."""
    return len(text.split())


def _field(req: RecordedRequest, name: str) -> str | None:
    body = req.body
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


def llama_cpp_tokenizer() -> dict[tuple[str, str], Route]:
    def tokenize(req: RecordedRequest) -> tuple[int, Any]:
        text = _field(req, "content")
        if text is None:
            return 400, {
                "error": {
                    "code": 400,
                    "message": '"content" must be provided',
                    "type": "invalid_request_error",
                }
            }
        return 200, {"tokens": list(range(fake_token_count(text)))}

    return {("POST", "/tokenize"): tokenize}


def vllm_tokenizer(max_model_len: int = 32768) -> dict[tuple[str, str], Route]:
    def tokenize(req: RecordedRequest) -> tuple[int, Any]:
        text = _field(req, "prompt")
        if text is None or _field(req, "model") is None:
            return 400, {
                "object": "error",
                "message": "1 validation error: prompt Field required",
                "code": 400,
            }
        n = fake_token_count(text)
        return 200, {"count": n, "max_model_len": max_model_len, "tokens": list(range(n)), "token_strs": None}

    return {("POST", "/tokenize"): tokenize}


def llama_cpp_python_tokenizer() -> dict[tuple[str, str], Route]:
    def count(req: RecordedRequest) -> tuple[int, Any]:
        text = _field(req, "input")
        if text is None:
            return 422, {"detail": [{"type": "missing", "loc": ["body", "input"], "msg": "Field required"}]}
        return 200, {"count": fake_token_count(text)}

    return {("POST", "/extras/tokenize/count"): count}


# --------------------------------------------------------------------------------------------------
# Model lists and context sizes


def ollama_server(
    models: dict[str, dict[str, Any]], running: dict[str, int] | None = None
) -> dict[tuple[str, str], Route]:
    """Ollama: ``/api/tags``, ``/api/show`` (``num_ctx`` → a ``parameters`` line, ``context_length`` → the
    ``model_info`` entry, ``vision`` → a capability) and ``/api/ps`` (``running``: name → its context size)."""

    def tags(req: RecordedRequest) -> tuple[int, Any]:
        return 200, {
            "models": [{"name": m, "model": m, "size": 1, "details": {"format": "gguf"}} for m in models]
        }

    def show(req: RecordedRequest) -> tuple[int, Any]:
        name = _field(req, "model") or ""
        if name not in models:
            return 404, {"error": f"model '{name}' not found"}
        spec = models[name]
        answer: dict[str, Any] = {
            "modelfile": "# fake",
            "parameters": "stop <end_of_turn>\n"
            + (f"num_ctx {spec['num_ctx']}\n" if "num_ctx" in spec else ""),
            "model_info": {
                "general.architecture": "gemma3",
                "gemma3.context_length": spec.get("context_length", 131072),
            },
            "capabilities": ["completion", "tools", *(["vision"] if spec.get("vision") else [])],
        }
        return 200, answer

    def ps(req: RecordedRequest) -> tuple[int, Any]:
        return 200, {
            "models": [{"name": n, "model": n, "context_length": c} for n, c in (running or {}).items()]
        }

    return {("GET", "/api/tags"): tags, ("POST", "/api/show"): show, ("GET", "/api/ps"): ps}


def lmstudio_server(models: list[dict[str, Any]]) -> dict[tuple[str, str], Route]:
    """LM Studio's ``/api/v0/models`` (each model: ``id``, ``type``, ``state``, ``max_context_length``,
    ``loaded_context_length``)."""
    return {("GET", "/api/v0/models"): lambda req: (200, {"object": "list", "data": models})}


def llama_server(
    model_id: str, n_ctx: int, n_ctx_train: int = 131072, vision: bool = False
) -> dict[tuple[str, str], Route]:
    """llama.cpp's ``llama-server`` with one model: ``/v1/models`` (``meta.n_ctx_train``) and ``/props``
    (``default_generation_settings.n_ctx``: what ``-c`` set)."""

    def models(req: RecordedRequest) -> tuple[int, Any]:
        meta = {
            "vocab_type": 2,
            "n_vocab": 262144,
            "n_ctx_train": n_ctx_train,
            "n_embd": 640,
            "n_params": 268098176,
        }
        return 200, {
            "models": [{"name": model_id, "model": model_id}],
            "object": "list",
            "data": [{"id": model_id, "object": "model", "created": 0, "owned_by": "llamacpp", "meta": meta}],
        }

    def props(req: RecordedRequest) -> tuple[int, Any]:
        return 200, {
            "default_generation_settings": {"n_ctx": n_ctx, "params": {}},
            "total_slots": 1,
            "model_path": f"/models/{model_id}.gguf",
            "modalities": {"vision": vision, "audio": False},
        }

    return {("GET", "/v1/models"): models, ("GET", "/props"): props}


def vllm_server(models: dict[str, int]) -> dict[tuple[str, str], Route]:
    """vLLM's ``/v1/models``: each id with its ``max_model_len``."""

    def listing(req: RecordedRequest) -> tuple[int, Any]:
        data = [
            {"id": m, "object": "model", "owned_by": "vllm", "root": m, "parent": None, "max_model_len": n}
            for m, n in models.items()
        ]
        return 200, {"object": "list", "data": data}

    return {("GET", "/v1/models"): listing}


# --------------------------------------------------------------------------------------------------
# The llama.cpp router and Hugging Face


class FakeRouter:
    """A llama.cpp router: models with states, ``/models/load`` (``loading`` for ``load_polls`` listings, then
    ``loaded``; a model in ``fail`` ends ``unloaded`` with ``failed``), ``/models/unload``, ``/models`` POST
    (a download: ``downloading`` with progress for ``download_polls`` listings, then ``unloaded``), ``/props``
    (``models_autoload``). ``calls`` records (method, path, model) of the POSTs."""

    def __init__(
        self,
        models: dict[str, str],
        *,
        n_ctx: int = 8192,
        autoload: bool = False,
        presets: tuple[str, ...] = (),
        fail: tuple[str, ...] = (),
        load_polls: int = 2,
        download_polls: int = 2,
    ) -> None:
        self.states = dict(models)
        self.n_ctx = n_ctx
        self.autoload = autoload
        self.presets = set(presets)
        self.fail = set(fail)
        self.load_polls = load_polls
        self.download_polls = download_polls
        self.pending: dict[str, int] = {}
        self.failed: set[str] = set()
        self.calls: list[tuple[str, str, str]] = []

    def _entry(self, model: str) -> dict[str, Any]:
        state = self.states[model]
        status: dict[str, Any] = {"value": state, "args": ["llama-server", "--ctx-size", str(self.n_ctx)]}
        if model in self.failed:
            status.update(failed=True, exit_code=1)
        if state == "downloading":
            left = self.pending.get(model, 0)
            done = (self.download_polls - left) * 100
            status["progress"] = {f"{model}.gguf": {"done": done, "total": self.download_polls * 100}}
        entry: dict[str, Any] = {"id": model, "object": "model", "owned_by": "llamacpp", "status": status}
        entry["source"] = "preset" if model in self.presets else "cache"
        if state in ("loaded", "sleeping"):
            entry["meta"] = {"n_ctx": self.n_ctx, "n_ctx_train": 131072}
        return entry

    def _advance(self) -> None:
        for model, left in list(self.pending.items()):
            if left > 0:
                self.pending[model] = left - 1
                continue
            del self.pending[model]
            if self.states[model] == "loading":
                if model in self.fail:
                    self.states[model] = "unloaded"
                    self.failed.add(model)
                else:
                    self.states[model] = "loaded"
            elif self.states[model] == "downloading":
                self.states[model] = "unloaded"

    def list_models(self, req: RecordedRequest) -> tuple[int, Any]:
        self._advance()
        return 200, {"object": "list", "data": [self._entry(m) for m in sorted(self.states)]}

    def _post(self, req: RecordedRequest, kind: str) -> tuple[int, Any]:
        model = _field(req, "model") or ""
        self.calls.append(("POST", kind, model))
        if kind == "download":
            self.states[model] = "downloading"
            self.pending[model] = self.download_polls
            return 200, {"success": True}
        if model not in self.states:
            return 404, {
                "error": {"code": 404, "message": f"model {model} not found", "type": "not_found_error"}
            }
        if kind == "load":
            self.failed.discard(model)
            self.states[model] = "loading"
            self.pending[model] = self.load_polls
        else:
            self.states[model] = "unloaded"
        return 200, {"success": True}

    def routes(self) -> dict[tuple[str, str], Route]:
        return {
            ("GET", "/models"): self.list_models,
            ("GET", "/v1/models"): self.list_models,
            ("GET", "/props"): lambda req: (200, {"models_autoload": self.autoload, "role": "router"}),
            ("POST", "/models/load"): lambda req: self._post(req, "load"),
            ("POST", "/models/unload"): lambda req: self._post(req, "unload"),
            ("POST", "/models"): lambda req: self._post(req, "download"),
        }


def hugging_face(repos: dict[str, dict[str, Any]]) -> dict[tuple[str, str], Route]:
    """Hugging Face's model API: ``/api/models`` search (every repository whose id contains the query) and
    ``/api/models/<owner>/<name>`` details (``repos``: id → ``{"downloads", "gated", "files": {name: size}}``)."""

    def search(req: RecordedRequest) -> tuple[int, Any]:
        from urllib.parse import parse_qs, urlsplit

        query = parse_qs(urlsplit(req.path).query).get("search", [""])[0].lower()
        found = [
            {"id": r, "downloads": spec.get("downloads", 0)}
            for r, spec in repos.items()
            if query in r.lower()
        ]
        return 200, sorted(found, key=lambda m: -m["downloads"])

    routes: dict[tuple[str, str], Route] = {("GET", "/api/models"): search}
    for repo, spec in repos.items():

        def details(req: RecordedRequest, repo: str = repo, spec: dict[str, Any] = spec) -> tuple[int, Any]:
            siblings = [{"rfilename": name, "size": size} for name, size in spec.get("files", {}).items()]
            return 200, {"id": repo, "gated": spec.get("gated", False), "siblings": siblings}

        routes[("GET", f"/api/models/{repo}")] = details
    return routes
