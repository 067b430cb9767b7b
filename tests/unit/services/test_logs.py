"""JSON log lines carry the request id the response carried."""

from __future__ import annotations

import json
import logging
import sys

from services.logs import JsonFormatter, logging_config
from services.security import RequestIdFilter, current_request_id


def test_a_json_line_has_the_request_id_and_the_error() -> None:
    token = current_request_id.set("req-42")
    try:
        record = logging.LogRecord("services", logging.ERROR, __file__, 1, "ask failed: %s",
                                   ("store down",), None)  # fmt: skip
        try:
            raise RuntimeError("lexical store unavailable")
        except RuntimeError:
            record.exc_info = sys.exc_info()
        assert RequestIdFilter().filter(record)
        line = json.loads(JsonFormatter().format(record))
    finally:
        current_request_id.reset(token)
    assert line["request_id"] == "req-42" and line["level"] == "error"
    assert line["message"] == "ask failed: store down" and line["time"].endswith("+00:00")
    assert "lexical store unavailable" in line["error"]


def test_the_configuration_names_the_json_formatter_for_uvicorn_too() -> None:
    config = logging_config("json")
    assert config["formatters"]["line"] == {"()": JsonFormatter}
    assert {"uvicorn.access", "uvicorn.error"} <= config["loggers"].keys()
    assert "format" in logging_config("text")["formatters"]["line"]
