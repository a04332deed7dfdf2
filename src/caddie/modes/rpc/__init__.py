"""RPC mode (``--mode rpc``): Pi 0.84.4's JSONL protocol on stdin/stdout (see docs/rpc.md).

Each input line is ``{"id"?, "type": <command>, ...}``; each command gets one
``{"id"?, "type": "response", "command", "success", "data"? | "error"?}`` once it has done its work (a
``prompt`` once it was accepted: Pi's preflight). Session events stream as they happen. Extension dialogs
use the UI sub-protocol: ``{"type": "extension_ui_request", "id", "method", ...}`` answered by
``{"type": "extension_ui_response", "id", "value" | "confirmed" | "cancelled"}``.

Lines are split on LF only (never on U+2028/U+2029); a trailing CR is dropped. A line longer than the
reader's limit is answered with a ``parse`` error and skipped; the server keeps serving.

End of input (EOF) ends the process, as in Pi: open dialogs are answered "cancelled", running work (a
prompt's run, a compaction, a shell command) is aborted, commands still in flight answer with what really
happened (an aborted compaction fails with "Compaction cancelled"; a prompt not yet started is refused), the
session shuts down (``session_shutdown``) and the process exits 0. Work that does not stop within a bounded
grace is abandoned.
"""

from caddie.modes.rpc.server import RpcServer
from caddie.modes.rpc.transport import EOF_GRACE_S, MAX_LINE_BYTES, LineTooLong, _lines, run_rpc
from caddie.modes.rpc.ui import RpcUI, Write
from caddie.modes.rpc.wire import model_json, rpc_event, tree_json

__all__ = [
    "EOF_GRACE_S",
    "MAX_LINE_BYTES",
    "LineTooLong",
    "RpcServer",
    "RpcUI",
    "Write",
    "_lines",
    "model_json",
    "rpc_event",
    "run_rpc",
    "tree_json",
]
