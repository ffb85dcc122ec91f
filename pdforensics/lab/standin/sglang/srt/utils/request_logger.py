"""Stand-in of sglang's RequestLogger (utils/request_logger.py): ``Receive: obj=...`` and
``Finish: obj=... out=...`` lines in SGLang's text format, switched by /configure_logging."""

from __future__ import annotations

from pdfx_lab_runtime import log


class RequestLogger:
    def __init__(self, log_requests: bool, log_requests_level: int):
        self.log_requests = log_requests
        self.log_requests_level = log_requests_level

    def configure(self, log_requests: bool | None = None,
                  log_requests_level: int | None = None) -> None:
        if log_requests is not None:
            self.log_requests = log_requests
        if log_requests_level is not None:
            self.log_requests_level = log_requests_level

    @staticmethod
    def _obj(rid: str, room: int, host: str, port: int) -> str:
        # level 1 skips text/input_ids/...; the fields PD requests carry are kept
        return (f"GenerateReqInput(sampling_params={{'max_new_tokens': 16, 'temperature': 0.0}}, "
                f"rid='{rid}', return_logprob=False, logprob_start_len=-1, top_logprobs_num=0, "
                f"stream=False, log_metrics=True, return_hidden_states=False, modalities=[], "
                f"lora_id=None, custom_logit_processor=None, bootstrap_host='{host}', "
                f"bootstrap_port={port}, bootstrap_room={room}, data_parallel_rank=None)")

    def log_received_request(self, rid: str, room: int, host: str, port: int) -> None:
        if self.log_requests:
            log("", f"Receive: obj={self._obj(rid, room, host, port)}")

    def log_finished_request(self, rid: str, room: int, host: str, port: int,
                             abort: str | None = None, completion_tokens: int = 16) -> None:
        if not self.log_requests:
            return
        reason = (f"{{'type': 'abort', 'message': '{abort}', 'status_code': 500, 'err_type': None}}"
                  if abort else f"{{'type': 'length', 'length': {completion_tokens}}}")
        out = (f"{{'meta_info': {{'id': '{rid}', 'finish_reason': {reason}, 'prompt_tokens': 7, "
               f"'weight_version': 'default', 'total_retractions': 0, "
               f"'completion_tokens': {0 if abort else completion_tokens}, 'cached_tokens': 0, "
               f"'e2e_latency': 0.0853}}}}")
        log("", f"Finish: obj={self._obj(rid, room, host, port)}, out={out}")
