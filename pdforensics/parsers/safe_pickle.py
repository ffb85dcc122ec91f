"""Read a pickle that someone else made without running any of its code.

A pickle is a program: GLOBAL / STACK_GLOBAL name any importable callable and REDUCE, BUILD,
INST, OBJ, NEWOBJ call it, so ``pickle.load`` on a crafted file runs whatever it names.
`load_plain` runs no such opcode: the stream is first walked with ``pickletools.genops`` (a
pure parser) and refused when it holds any opcode that names or calls something; what is
left is unpickled by an Unpickler whose ``find_class`` refuses every class and whose
``persistent_load`` refuses every id (the two doors through which the C unpickler reaches
code). What comes out is built only of dict, list, tuple, set, frozenset, str, bytes,
bytearray, int, float, bool and None.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any, NoReturn

from pdforensics.errors import ParseError

#: opcodes that name a callable or call one (or hand an object to outside code)
REFUSED_OPCODES = frozenset({
    "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
    "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID", "NEXT_BUFFER", "READONLY_BUFFER",
})
MAX_BYTES = 256 * 1024 * 1024
MAX_OPS = 20_000_000


class _PlainUnpickler(pickle.Unpickler):
    """Refuses every class and every persistent id."""

    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"refused: the pickle names {module}.{name}")

    def persistent_load(self, pid: Any) -> NoReturn:
        raise pickle.UnpicklingError("refused: the pickle holds a persistent id")


def check_opcodes(data: bytes) -> None:
    """Raise ParseError naming the first opcode that could run code (or a broken stream)."""
    if len(data) > MAX_BYTES:
        raise ParseError(f"pickle of {len(data)} bytes is over the {MAX_BYTES} byte limit")
    try:
        for n, (op, arg, pos) in enumerate(pickletools.genops(io.BytesIO(data))):
            if op.name in REFUSED_OPCODES:
                what = f" {arg}" if isinstance(arg, str) else ""
                raise ParseError(f"refused: the pickle's opcode {op.name}{what} at byte {pos} "
                                 "could run code; only plain containers are read")
            if n > MAX_OPS:
                raise ParseError("pickle has too many opcodes")
    except ParseError:
        raise
    except Exception as exc:  # genops on a broken stream: ValueError, EOFError, ...
        raise ParseError(f"not a readable pickle: {type(exc).__name__}: {exc}") from None


def load_plain(data: bytes) -> Any:
    """The plain data in ``data`` (see the module docstring); ParseError when it is not a
    pickle, is cut short, or holds any opcode that names or calls code."""
    check_opcodes(data)
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except RecursionError:
        raise ParseError("pickle nested too deep") from None
    except Exception as exc:  # UnpicklingError, EOFError, ValueError, MemoryError, ...
        raise ParseError(f"not a readable pickle: {type(exc).__name__}: {exc}") from None


def looks_like_pickle(data: bytes) -> bool:
    """A protocol 2+ pickle starts with PROTO (0x80) and its protocol number."""
    return len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5
