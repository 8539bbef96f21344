# SPDX-License-Identifier: MIT
"""cudakit-server's Python runner: runs the original server's Python kernel types (torch, torch_cuda, triton,
multi_kernel) for the service, one process per job, inside the service's sandbox (server/src/run/sandbox.ts).

Only the standard library at import: torch and triton are imported when a job needs them, so the probe can say which
of them is missing instead of failing to start.

    python -I cudakit_runner.py --probe    one JSON line: the interpreter's and its libraries' versions, and whether
                                           CUDA is usable; exit 0 even when something is missing (the server decides)
"""
import json
import platform
import sys

PROTOCOL_VERSION = 1


def probe():
    """What this interpreter can serve: Python's version, torch's and triton's (None when not installed, with the
    reason), and whether torch sees a GPU."""
    facts = {
        "v": PROTOCOL_VERSION,
        "python": platform.python_version(),
        "torch": None,
        "triton": None,
        "cuda": False,
        "cudaVersion": None,
        "devices": 0,
        "missing": [],
    }
    try:
        import torch  # noqa: PLC0415 (imported here: the probe must run without it)

        facts["torch"] = torch.__version__
        facts["cudaVersion"] = torch.version.cuda
        facts["cuda"] = bool(torch.cuda.is_available())
        facts["devices"] = torch.cuda.device_count() if facts["cuda"] else 0
        if not facts["cuda"]:
            facts["missing"].append("a GPU torch can use (torch.cuda.is_available() is False)")
    except Exception as e:  # noqa: BLE001 (any failure to import is 'missing')
        facts["missing"].append(f"torch ({type(e).__name__}: {e})")
    try:
        import triton  # noqa: PLC0415

        facts["triton"] = triton.__version__
    except Exception:  # noqa: BLE001 (Triton is optional: its kernel type is refused without it)
        pass
    return facts


def main(argv):
    if argv[1:] == ["--probe"]:
        sys.stdout.write(json.dumps(probe()) + "\n")
        return 0
    sys.stderr.write("usage: cudakit_runner.py --probe\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
