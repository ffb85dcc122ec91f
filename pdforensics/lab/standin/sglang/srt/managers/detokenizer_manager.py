"""Stand-in of sglang's DetokenizerManager process."""

from __future__ import annotations

import time

from pdfx_lab_runtime import die_with_parent, set_title


class DetokenizerManager:
    def event_loop(self) -> None:
        while True:
            time.sleep(0.5)


def run_detokenizer_process() -> None:
    die_with_parent()
    set_title("sglang::detokenizer")
    DetokenizerManager().event_loop()
