"""Model servers teams run, on loopback, speaking each one's documented count endpoints.

:class:`ModelServer` answers as vLLM (``POST /tokenize`` in its chat and prompt forms,
``POST /detokenize``), the llama.cpp server (``POST /apply-template``, ``POST /tokenize``
``{content}``), llama-cpp-python (``POST /extras/tokenize`` and ``/extras/tokenize/count``
``{input, model}``, the BOS added to every text as it adds it) or a server with none of them
(Ollama, LiteLLM's proxy), and ``POST /v1/chat/completions`` with a short answer. Its tokenizer
splits on whitespace (each word one token, an id per distinct word, so ``/detokenize`` gives
the text back); its chat template is ``chatml`` (every message, the tools in the system turn) or
``gemma`` (as llama-cpp-python's ``gemma`` chat format: the user and model turns only, the
system message and the tools dropped). Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Dialect = Literal["vllm", "llama.cpp", "llama-cpp-python", "none"]
Template = Literal["chatml", "gemma"]
BOS = "<bos>"


def words(text: str) -> list[str]:
    return text.split()


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
           template: Template) -> str:
    """The prompt ``template`` makes of a chat request, as a model server's template would."""
    if template == "gemma":
        turns = [f"<start_of_turn>{'model' if m['role'] == 'assistant' else 'user'}\n"
                 f"{(m.get('content') or '').strip()}<end_of_turn>\n"
                 for m in messages if m["role"] in ("user", "assistant")]
        return BOS + "".join(turns) + "<start_of_turn>model\n"
    out = []
    if tools:
        out.append("<|im_start|>system\n# Tools\n" + "\n".join(
            json.dumps(t["function"]) for t in tools) + "<|im_end|>\n")
    for m in messages:
        body = m.get("content") or ""
        for call in m.get("tool_calls") or ():
            body += f"\n<tool_call>{call['function']['name']} {call['function']['arguments']}"
        out.append(f"<|im_start|>{m['role']}\n{body}<|im_end|>\n")
    return "".join(out) + "<|im_start|>assistant\n"


class ModelServer:
    def __init__(self, dialect: Dialect, *, template: Template = "chatml",
                 model: str = "served-model") -> None:
        self.dialect, self.template, self.model = dialect, template, model
        self.requests: list[tuple[str, Any]] = []  # (path, body)
        self._vocab: dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.base_url = self.url + "/v1"
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                         daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def to(self, path: str) -> list[Any]:
        """The bodies of the requests to ``path``."""
        return [body for p, body in self.requests if p == path]

    def count(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
        """What the server counts of a chat request: its templated prompt's tokens."""
        return len(words(render(messages, tools, self.template)))

    def _ids(self, text: str) -> list[int]:
        with self._lock:
            return [self._vocab.setdefault(w, len(self._vocab)) for w in words(text)]

    def _text(self, ids: list[int]) -> str:
        with self._lock:
            by_id = {i: w for w, i in self._vocab.items()}
        return " ".join(by_id[i] for i in ids)

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        if path == "/v1/chat/completions":
            return 200, {"id": "c1", "object": "chat.completion", "created": 0,
                         "model": self.model, "choices": [{
                             "index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 1,
                                   "total_tokens": 4}}
        handler = _DIALECTS.get(self.dialect, {}).get(path)
        if handler is None:
            return 404, {"detail": "Not Found"}
        return handler(self, body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw) if raw else None
                server.requests.append((self.path, body))
                status, out = server.answer(self.path, body)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


def _vllm_tokenize(server: ModelServer, body: dict[str, Any]) -> tuple[int, Any]:
    if body.get("model") != server.model:
        return 404, {"object": "error", "message": f"The model `{body.get('model')}` does "
                     "not exist.", "type": "NotFoundError", "code": 404}
    if "messages" in body:
        text = render(body["messages"], body.get("tools"), server.template)
    else:
        text = (BOS + " " if body.get("add_special_tokens", True) else "") + body["prompt"]
    ids = server._ids(text)
    return 200, {"count": len(ids), "max_model_len": 32_768, "tokens": ids}


def _vllm_detokenize(server: ModelServer, body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"prompt": server._text(body["tokens"])}


def _llama_apply_template(server: ModelServer, body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"prompt": render(body["messages"], body.get("tools"), server.template)}


def _llama_tokenize(server: ModelServer, body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"tokens": server._ids(body.get("content", ""))}


def _extras_tokens(server: ModelServer, body: dict[str, Any]) -> list[int]:
    return server._ids(BOS + " " + body["input"])  # llama-cpp-python adds the BOS


_DIALECTS: dict[str, dict[str, Any]] = {
    "vllm": {"/tokenize": _vllm_tokenize, "/detokenize": _vllm_detokenize},
    "llama.cpp": {"/apply-template": _llama_apply_template, "/tokenize": _llama_tokenize},
    "llama-cpp-python": {
        "/extras/tokenize": lambda s, b: (200, {"tokens": _extras_tokens(s, b)}),
        "/extras/tokenize/count": lambda s, b: (200, {"count": len(_extras_tokens(s, b))}),
    },
}
