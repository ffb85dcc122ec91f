"""NCCL's collective trace showing ranks that disagree (parsers/nccl_coll.py) -> a cause.

Ranks of one communicator that post different arguments for the same opCount (count,
datatype, op, root or the collective itself) leave it waiting forever: the collective
side, the rank in the minority the suspect, a hang.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.nccl_coll import read_coll_mismatches


@reader("nccl_coll_mismatch")
def coll_mismatch_clues(src: Source) -> Iterator[Clue]:
    """One cause per opCount the ranks disagree at: the first odd rank's line."""
    for mm in read_coll_mismatches(src.text):
        no, line = mm.odd[0]
        others = f" (and {len(mm.odd) - 1} more)" if len(mm.odd) > 1 else ""
        yield Clue(key="NCCL_COLL_MISMATCH", label="cause", text=line[:500], source=src.path,
                   line=no, host=src.host, side="collective", suspect=mm.writer, wedge=True,
                   strength=3,
                   why=f"at opCount {mm.op_count} of a {mm.nranks}-rank group this rank{others} "
                       f"posted other arguments than the rest ({mm.majority}): NCCL does not "
                       "check them; the collective never completes")
