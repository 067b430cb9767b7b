"""The llama.cpp server, started and stopped by the appliance on a CPU machine.

llama-cpp-python's server speaks the OpenAI chat-completions API and compiles a
request's JSON schema into a grammar, so the generator that talks to vLLM in
production talks to it unchanged. It listens on loopback only, on a free port, and is
stopped with the appliance (or when the process exits).
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from appliance.child_process import die_with_parent, free_port, how_it_ended, stop

log = logging.getLogger(__name__)


class ServerFailed(RuntimeError):
    """The llama.cpp server did not start or stopped unexpectedly."""


class LlamaCppServer:
    """One llama.cpp server process serving one GGUF model under ``alias``."""

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
        self.model_path = model_path
        self.alias = alias
        self._context_tokens = context_tokens
        self._threads = threads or max(1, os.cpu_count() or 1)
        self._start_timeout_s = start_timeout_s
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
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
        output = self._log_path.open("ab") if self._log_path else subprocess.DEVNULL
        log.info("starting the llama.cpp server for %s on port %d", self.model_path, self.port)
        self._process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + self._start_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                raise ServerFailed(
                    f"the llama.cpp server exited with status {code}{self._log_hint()}"
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise ServerFailed(f"the llama.cpp server did not start within {self._start_timeout_s} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        stop(process)

    def death(self) -> str | None:
        """How the server process ended, if it has: so that an error names the cause
        (a crash in the model runtime) rather than only a dropped connection."""
        process = self._process
        if process is None or process.poll() is None:
            return None
        return f"the llama.cpp server died ({how_it_ended(process.returncode)}){self._log_hint()}"

    def _log_hint(self) -> str:
        return f"; its log is {self._log_path}" if self._log_path else ""

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
