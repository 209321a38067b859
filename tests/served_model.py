"""A real OpenAI-compatible server over the embedded GGUF, for tests and benchmarks: llama-cpp-python's own.

:func:`start` runs ``python -m llama_cpp.server`` (the ``server`` extra of llama-cpp-python) on
127.0.0.1, on a free port, over the GGUF that :func:`~programs.llm.model_files.ensure_local_model`
assembles into the user cache. It waits (bounded) until ``/v1/models`` answers, and
:meth:`ServedModel.stop` ends the process. The server's log (one line per request) is kept in a
file, so a test can count the requests that reached it.

On a CPU with AMX the server is started through :data:`AMX_LAUNCHER`, which loads the model with
llama.cpp's extra buffer types off (the crash of llama.cpp issue 20824, see
``programs/llm/llama_settings.py``); elsewhere the command is the plain one the docs give.

Run it by hand to get a server (it stays up until Ctrl-C)::

    python tests/served_model.py
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MODEL_ALIAS = "qwen2.5-coder-1.5b"  # the name the server answers to: --model openai/qwen2.5-coder-1.5b
N_CTX = 12288  # the embedded engine's default: room for the bundled ~8k-token schema
START_TIMEOUT_S = 180.0
AMX_LAUNCHER = (
    "import runpy, sys; from text2sql_dspy.programs.llm.llama_settings import model_params_override\n"
    "with model_params_override(use_extra_bufts=False):\n"
    "    runpy.run_module('llama_cpp.server', run_name='__main__')"
)


class ServedModelUnavailable(RuntimeError):
    """The server would not start (the message says why and quotes its log)."""


@dataclass
class ServedModel:
    """A running server. ``model`` is the ``--model`` string, ``api_base`` the ``TEXT2SQL_API_BASE``."""

    process: subprocess.Popen
    port: int
    log: Path

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        return f"openai/{MODEL_ALIAS}"

    def completions_served(self) -> int:
        """Chat completions the server has answered so far (from its access log)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return sum(1 for line in text.splitlines() if "POST /v1/chat/completions" in line and " 200" in line)

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM killer would: no goodbye to the clients."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_arguments(gguf: Path, port: int, *, n_ctx: int = N_CTX, n_threads: int | None = None) -> list[str]:
    """``llama_cpp.server``'s arguments: the GGUF, its alias, loopback only, every core (its default is half)."""
    threads = n_threads or os.cpu_count() or 1
    return ["--model", str(gguf), "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads)]


def start(*, n_ctx: int = N_CTX, timeout_s: float = START_TIMEOUT_S, log_dir: Path | None = None) -> ServedModel:
    """Start a server over the embedded GGUF and wait until it answers; :class:`ServedModelUnavailable` if it will
    not."""
    from text2sql_dspy.programs.llm.llama_settings import cpu_has_amx
    from text2sql_dspy.programs.llm.model_files import ensure_local_model

    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as exc:
        raise ServedModelUnavailable(
            f"llama-cpp-python's server extra is missing ({exc}): pip install -e '.[dev]'"
        ) from exc
    port = free_port()
    launch = ["-c", AMX_LAUNCHER] if cpu_has_amx() else ["-m", "llama_cpp.server"]
    command = [sys.executable, *launch, *server_arguments(ensure_local_model(), port, n_ctx=n_ctx)]
    folder = Path(log_dir or tempfile.mkdtemp(prefix="served-model-"))
    log = folder / f"server-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})  # the access log, line by line
    served = ServedModel(process, port, log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServedModelUnavailable(f"the server exited with {process.returncode}:\n{_tail(log)}")
        if _answers(served.api_base):
            return served
        time.sleep(0.5)
    served.stop()
    raise ServedModelUnavailable(f"the server did not answer within {timeout_s:.0f} s:\n{_tail(log)}")


def _answers(api_base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_base}/models", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


if __name__ == "__main__":
    server = start()
    print(f"serving {server.model} at {server.api_base} (log: {server.log}); Ctrl-C stops it")
    try:
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()
