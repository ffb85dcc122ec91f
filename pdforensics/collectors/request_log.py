"""SGLang's POST /configure_logging: request logging on for `capture --request-log`, and back.

The body is SGLang's ConfigureLoggingReq (io_struct.py, 0.5.x): ``log_requests`` and
``log_requests_level``; fields left out keep their value. The call answers 200 with no body.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from pdforensics.collectors.base import DISCOVERY, Runs, Source, Target, register
from pdforensics.collectors.feeds import Feed, fetch
from pdforensics.collectors.http import HTTP_TIMEOUT_S, curl, url_for
from pdforensics.model import HostSpec

PATH = "/configure_logging"
#: the level turned on: metadata and sampling params (rid, bootstrap_room), never the prompt
LEVEL_ON = 1


def body_json(log_requests: bool, level: int | None) -> str:
    """A ConfigureLoggingReq body setting only what the capture changes."""
    doc: dict[str, object] = {"log_requests": log_requests}
    if level is not None:
        doc["log_requests_level"] = level
    return json.dumps(doc, separators=(",", ":"))


def curl_post(url: str, body: str, timeout_s: float) -> tuple[str, ...]:
    """One curl statement POSTing a JSON body (the curl -i form every endpoint is kept in)."""
    head = curl(url, timeout_s)
    return (*head[:-1], "-X", "POST", "-H", "Content-Type: application/json",
            "--data-binary", body, url)


def _builder(body: str) -> Callable[[HostSpec, Target], tuple[str, ...]]:
    def build(host: HostSpec, t: Target) -> tuple[str, ...]:
        assert t.service is not None
        return curl_post(url_for(Target(service=t.service, path=PATH)), body, HTTP_TIMEOUT_S)

    return build


def _source(name: str, description: str, body: str) -> Source:
    return register(Source(
        name=name, description=description, scope="endpoint", build=_builder(body),
        timeout_s=HTTP_TIMEOUT_S + 2, max_bytes=64 * 1024, priority=DISCOVERY,
        parser="http:parse_http_response", sample="http_health_response.txt",
        timeout_exits=(124, 137, 28), extension="http", feeds=Feed("service.fetches", fetch),
        runs=Runs.FOLLOW_UP))  # capture/request_log.py walks each server through the window


# top priority: the window's length is what the user asked for, and the restore is not late
REQUEST_LOG_ON = _source("request_log_on", "POST /configure_logging: request logging on for "
                         "--request-log SECONDS (opt-in)", body_json(True, LEVEL_ON))
REQUEST_LOG_RESTORE = _source("request_log_restore", "POST /configure_logging: request logging "
                              "put back as it was after --request-log", body_json(False, None))


def sending(source: Source, log_requests: bool, level: int | None) -> Source:
    """The switch-on or restore source sending this setting (the registered one is its shape);
    a level of None leaves the server's level as it is."""
    return dataclasses.replace(source, build=_builder(body_json(log_requests, level)))
