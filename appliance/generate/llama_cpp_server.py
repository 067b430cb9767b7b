"""The llama.cpp server, started and stopped by the appliance on a CPU machine.

llama-cpp-python's server speaks the OpenAI chat-completions API and compiles a
request's JSON schema into a grammar, so the generator that talks to vLLM in
production talks to it unchanged. It listens on loopback only, on a free port, and is
stopped with the appliance (or when the process exits).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import httpx

from appliance.child_process import ChildServer, free_port

log = logging.getLogger(__name__)


class ServerFailed(RuntimeError):
    """The llama.cpp server did not start or stopped unexpectedly."""


class LlamaCppServer(ChildServer):
    """One llama.cpp server process serving one GGUF model under ``alias``."""

    description = "the llama.cpp server"
    failure = ServerFailed

    def __init__(
        self,
        model_path: Path,
        *,
        alias: str = "local",
        context_tokens: int = 4096,
        threads: int | None = None,
        start_timeout_s: float = 180.0,
        log_path: Path | None = None,
    ) -> None:
        if not model_path.is_file():
            raise ServerFailed(f"no model file at {model_path}")
        super().__init__(log_path)
        self.model_path = model_path
        self.alias = alias
        self._context_tokens = context_tokens
        self._threads = threads or max(1, os.cpu_count() or 1)
        self._start_timeout_s = start_timeout_s
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaCppServer:
        """Start the server and wait until it serves the model (loading takes seconds)."""
        if self._process is not None:
            return self
        try:
            import llama_cpp.server  # noqa: F401  (only to fail early with a remedy)
        except ImportError as error:
            raise ServerFailed(
                "the llama.cpp generator needs llama-cpp-python's server: "
                "pip install 'llama-cpp-python[server]==0.3.36' (or `make install-llm`)"
            ) from error
        self.port = free_port()
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self._context_tokens),
            "--n_threads", str(self._threads),
        ]  # fmt: skip
        log.info("starting the llama.cpp server for %s on port %d", self.model_path, self.port)
        log_file = self._log_path.open("ab") if self._log_path else nullcontext(subprocess.DEVNULL)
        with log_file as output:
            self._launch(command, output=output, ready=self._serves,
                         timeout_s=self._start_timeout_s)  # fmt: skip
        return self

    def _serves(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
