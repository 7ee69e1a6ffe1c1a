"""Command line: ``python -m bench {run,list,table,plot,report,show,audit,sync,pretrain-encoder}``.

Exit codes: 0 success, 1 some grid cells failed, 2 usage error (bad names, ε, δ, options, data
files, an unusable tracking store), 3 an unexpected error (``DPBENCH_DEBUG=1`` shows its traceback),
4 ``run --deadline`` passed with cells not started (none failed), 130/143 interrupted by SIGINT/SIGTERM.
"""

from __future__ import annotations

import os
import sys
import warnings

# Only light modules at the top: `list`, `--help` and argument errors must not import torch, jax,
# pandas or matplotlib (each command imports what it needs).
from bench.core.errors import UsageError
from bench.cli.audit import command_audit, command_pretrain_encoder
from bench.cli.options import DEBUG_VARIABLE, build_parser
from bench.cli.results import (
    command_export,
    command_import,
    command_list,
    command_plot,
    command_report,
    command_runs,
    command_show,
    command_table,
)
from bench.cli.run import command_evaluate, command_run, command_sync

COMMANDS = {
    "run": command_run,
    "list": command_list,
    "table": command_table,
    "plot": command_plot,
    "report": command_report,
    "runs": command_runs,
    "show": command_show,
    "audit": command_audit,
    "sync": command_sync,
    "evaluate": command_evaluate,
    "export": command_export,
    "import": command_import,
    "pretrain-encoder": command_pretrain_encoder,
}


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as ``warning: <message>`` on one line, without the source line Python adds."""
    print(f"warning: {' '.join(str(message).split())}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the resume command repeats it
    warnings.filterwarnings("ignore", module="mlflow")
    warnings.showwarning = one_line_warning
    try:
        return COMMANDS[args.command](args)
    except UsageError as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, as a Unix filter does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as error:  # one line instead of a traceback; DPBENCH_DEBUG=1 shows it
        if os.environ.get(DEBUG_VARIABLE):
            raise
        text = " ".join(str(error).split())[:300]
        print(
            f"error: unexpected {type(error).__name__}: {text} (set {DEBUG_VARIABLE}=1 for the traceback)",
            file=sys.stderr,
        )
        return 3
