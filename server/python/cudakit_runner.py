# SPDX-License-Identifier: MIT
"""cudakit-server's Python runner: runs the original server's Python kernel types (torch, torch_cuda, triton,
multi_kernel) for the service, one process per job, inside the service's sandbox (server/src/run/sandbox.ts).

Only the standard library at import: torch and triton are imported when a job needs them, so the probe can say which
of them is missing instead of failing to start.

    python -I cudakit_runner.py --probe    one JSON line: the interpreter's and its libraries' versions, and whether
                                           CUDA is usable; exit 0 even when something is missing (the server decides)
    python -I cudakit_runner.py --serve    the job protocol (version 1): one JSON object a line on stdin (load, run,
                                           prepare, time, bye), one answer a line on stdout; cwd is the job's folder

Under --serve, whatever the submitted code prints goes to stderr, so it can never be read as a protocol line.
CUDAKIT_RUNNER_DEVICE=cpu runs jobs on the CPU and times them with perf_counter (for tests without a GPU).
"""
import ctypes
import importlib.util
import json
import math
import os
import platform
import posixpath
import re
import sys
import time
import traceback
from collections import namedtuple

PROTOCOL_VERSION = 1
MESSAGE_MAX_CHARS = 2000
TRACEBACK_MAX_CHARS = 4000
KERNEL_FILE = "kernel.py"
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int64", "int32", "int16",
               "int8", "uint8", "bool")
TORCH_KINDS = ("torch", "torch_cuda", "multi_kernel")

# The phase an answer's error belongs to, per command; an unknown command is a protocol error.
PHASE_OF = {"load": "load", "run": "run", "prepare": "prepare", "time": "time"}
# The kind of an unexpected exception, per phase: at load the kernel's module failed, later the kernel itself did.
DEFAULT_KIND = {"load": "import", "run": "raise", "prepare": "raise", "time": "raise", "protocol": "protocol"}


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


# --- errors the runner raises itself: each carries the kind the parent sees --------------------------------------


class RunnerError(Exception):
    kind = "raise"


class ProtocolError(RunnerError):
    kind = "protocol"


class EntryError(RunnerError):
    kind = "entry"


class MissingError(RunnerError):
    kind = "missing"


class OutputError(RunnerError):
    kind = "output"


def error_answer(e, msg_id, phase, cwd):
    """An `error` line for any exception: the message and traceback name only kernel.py, never a path of the host
    (the user sees both)."""
    kind = e.kind if isinstance(e, RunnerError) else DEFAULT_KIND[phase]
    message = scrub(str(e), cwd)[:MESSAGE_MAX_CHARS]
    return {"t": "error", "id": msg_id, "phase": phase, "kind": kind, "type": type(e).__name__, "message": message,
            "traceback": kernel_frames(e, cwd)}


def scrub(text, cwd):
    """The job folder's absolute path is the host's business: ./kernel.py is enough."""
    return text.replace(cwd, ".")


def kernel_frames(e, cwd):
    """Only the submitted code's frames, innermost last, as 'kernel.py:LINE in FUNC'; a syntax error has no frame of
    its own, so its line comes from the error."""
    kernel_paths = (KERNEL_FILE, os.path.join(cwd, KERNEL_FILE))
    # A runner error raised for a kernel's failure (a missing build tool) points at the kernel's line through its cause.
    tb = e.__traceback__ if e.__cause__ is None else e.__cause__.__traceback__
    frames = [frame for frame in traceback.extract_tb(tb) if frame.filename in kernel_paths]
    lines = [f"{KERNEL_FILE}:{frame.lineno} in {frame.name}" for frame in frames]
    if isinstance(e, SyntaxError) and e.filename in kernel_paths:
        lines.append(f"{KERNEL_FILE}:{e.lineno}")
    text = "\n".join(lines)
    # The innermost frames say most about the failure: keep those when cutting.
    return text[-TRACEBACK_MAX_CHARS:]


# --- timers: bound before any submitted code runs, so the code cannot replace what measures it -------------------

# record(slot) marks slot 0..2n-1 (or BASE) on torch's stream; wait(slot) blocks until it has passed; elapsed_ms(a, b).
Timer = namedtuple("Timer", "name reserve record wait elapsed_ms")
BASE = -1


def cpu_timer(now=time.perf_counter_ns):
    stamps = {}

    def record(slot):
        stamps[slot] = now()

    return Timer(
        name="perf-counter",
        reserve=lambda count: None,
        record=record,
        wait=lambda slot: None,
        elapsed_ms=lambda a, b: (stamps[b] - stamps[a]) / 1e6,
    )


def cuda_event_timer(stream_handle):
    """CUDA events through the driver (libcuda), recorded on torch's stream; the pool only grows, so events are
    created outside every timed batch but the first of its size."""
    libcuda = ctypes.CDLL("libcuda.so.1")
    names = ("cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime")
    create, record, synchronize, elapsed = (getattr(libcuda, name) for name in names)
    create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    record.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    synchronize.argtypes = [ctypes.c_void_p]
    elapsed.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p]
    stream = ctypes.c_void_p(stream_handle)

    def check(call, result):
        if result != 0:
            raise RuntimeError(f"{call} failed: CUresult {result}")

    def new_event():
        event = ctypes.c_void_p()
        check("cuEventCreate", create(ctypes.byref(event), 0))  # 0: CU_EVENT_DEFAULT, timing enabled
        return event

    base = new_event()
    pool = []

    def reserve(count):
        while len(pool) < count:
            pool.append(new_event())

    def event(slot):
        return base if slot == BASE else pool[slot]

    def elapsed_ms(a, b):
        ms = ctypes.c_float()
        check("cuEventElapsedTime", elapsed(ctypes.byref(ms), event(a), event(b)))
        return ms.value

    return Timer(
        name="cuda-events",
        reserve=reserve,
        record=lambda slot: check("cuEventRecord", record(event(slot), stream)),
        wait=lambda slot: check("cuEventSynchronize", synchronize(event(slot))),
        elapsed_ms=elapsed_ms,
    )


def torch_event_timer(torch):
    """The fallback when libcuda cannot be opened: torch's events, their methods taken now rather than looked up on
    the class later."""
    new_event = torch.cuda.Event
    record, synchronize, elapsed_time = new_event.record, new_event.synchronize, new_event.elapsed_time
    base = new_event(enable_timing=True)
    pool = []

    def reserve(count):
        while len(pool) < count:
            pool.append(new_event(enable_timing=True))

    def event(slot):
        return base if slot == BASE else pool[slot]

    return Timer(
        name="torch-events",
        reserve=reserve,
        record=lambda slot: record(event(slot)),
        wait=lambda slot: synchronize(event(slot)),
        elapsed_ms=lambda a, b: elapsed_time(event(a), event(b)),
    )


def bind_timer(torch, device):
    if device == "cpu":
        return cpu_timer()
    # The primary context must be current on this thread before the driver can create events in it.
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    try:
        return cuda_event_timer(torch.cuda.current_stream().cuda_stream)
    except (OSError, AttributeError, RuntimeError):
        return torch_event_timer(torch)


# --- the job: its kernel, its arguments, its prepared input sets --------------------------------------------------


class Job:
    """What one process serves: at most one kernel, loaded once."""

    def __init__(self, torch, device, timer, cwd):
        self.torch = torch
        self.device = device
        self.timer = timer
        self.cwd = cwd
        # An older torch has no float8 types: a tensor of one is then refused by name (torch_dtype).
        self.dtypes = {name: getattr(torch, name) for name in DTYPE_NAMES if hasattr(torch, name)}
        self.dtype_names = {dtype: name for name, dtype in self.dtypes.items()}
        self.load_tried = False
        self.kind = None
        self.args = None
        self.launch = None  # launch(call) -> the kernel's return value
        self.calls = []  # prepared calls, used in rotation by `time`
        self.next_call = 0
        self.flush_buffer = None

    def synchronize(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()


def check_message(msg):
    if not isinstance(msg, dict):
        raise ProtocolError("a message must be a JSON object")
    if msg.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {msg.get('v')!r} is not {PROTOCOL_VERSION}")
    if msg.get("t") not in PHASE_OF and msg.get("t") != "bye":
        raise ProtocolError(f"unknown message type {msg.get('t')!r}")
    msg_id = msg.get("id")
    if msg.get("t") != "bye" and (not isinstance(msg_id, int) or isinstance(msg_id, bool)):
        raise ProtocolError(f"message {msg['t']!r} needs an integer id")


def relative_path(path, what):
    """A path the parent gave, inside the job's folder: the runner reads and writes nothing else."""
    if not isinstance(path, str) or path == "" or "\0" in path:
        raise ProtocolError(f"{what}: expected a relative path, got {path!r}")
    if posixpath.isabs(path) or os.path.isabs(path):
        raise ProtocolError(f"{what}: an absolute path is refused, paths are relative to the job folder")
    if ".." in path.replace("\\", "/").split("/"):
        raise ProtocolError(f"{what}: {path!r} leaves the job folder ('..')")
    return path


def check_args(args):
    if not isinstance(args, list):
        raise ProtocolError("load: args must be a list")
    for arg in args:
        if not isinstance(arg, dict) or not isinstance(arg.get("name"), str):
            raise ProtocolError(f"load: bad argument {arg!r}")
        if arg.get("role", "input") not in ("input", "output", "inout"):
            raise ProtocolError(f"load: argument {arg['name']}: unknown role {arg.get('role')!r}")
        if arg.get("kind") == "tensor":
            shape = arg.get("shape")
            if "role" not in arg:
                raise ProtocolError(f"load: tensor {arg['name']} has no role")
            if arg.get("dtype") not in DTYPE_NAMES:
                raise ProtocolError(f"load: argument {arg['name']}: unknown dtype {arg.get('dtype')!r}")
            if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
                raise ProtocolError(f"load: argument {arg['name']}: bad shape {shape!r}")
        elif arg.get("kind") == "scalar":
            scalar_value(arg)
        else:
            raise ProtocolError(f"load: argument {arg['name']}: unknown kind {arg.get('kind')!r}")
    return args


def torch_dtype(job, name):
    dtype = job.dtypes.get(name)
    if dtype is None:
        raise MissingError(f"this torch ({job.torch.__version__}) has no {name}")
    return dtype


def read_tensor(job, arg, path):
    """Raw little-endian C-order bytes of exactly dtype x shape, as the parent wrote them."""
    torch = job.torch
    dtype = torch_dtype(job, arg["dtype"])
    try:
        with open(relative_path(path, f"file of {arg['name']}"), "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProtocolError(f"file of {arg['name']}: cannot read {path!r} ({e.strerror})") from None
    numel = math.prod(arg["shape"])
    expected_bytes = numel * torch.empty((), dtype=dtype).element_size()
    if len(data) != expected_bytes:
        needs = f"{arg['dtype']}{arg['shape']} needs {expected_bytes}"
        raise ProtocolError(f"file of {arg['name']}: {path!r} has {len(data)} bytes, {needs}")
    if numel == 0:  # frombuffer refuses an empty buffer
        return torch.empty(arg["shape"], dtype=dtype, device=job.device)
    return torch.frombuffer(bytearray(data), dtype=dtype).reshape(arg["shape"]).to(job.device)


def scalar_value(arg):
    convert = {"int": int, "float": float, "bool": bool, "str": str}.get(arg.get("dtype"))
    if convert is None:
        raise ProtocolError(f"scalar {arg['name']}: unknown dtype {arg.get('dtype')!r}")
    try:
        return convert(arg.get("value"))
    except (TypeError, ValueError):
        raise ProtocolError(f"scalar {arg['name']}: {arg.get('value')!r} is not a {arg['dtype']}") from None


Call = namedtuple("Call", "args meta tensors")  # positional values, triton constexprs, every tensor argument by name


def make_call(job, files):
    """One call's arguments from a files map (name -> path): inputs must have a file, outputs may."""
    if not isinstance(files, dict):
        raise ProtocolError("files must be an object mapping tensor names to paths")
    tensor_names = {a["name"] for a in job.args if a["kind"] == "tensor"}
    unknown = sorted(set(files) - tensor_names)
    if unknown:
        raise ProtocolError(f"files names {unknown}, which are not tensor arguments")
    positional, meta, tensors = [], {}, {}
    for arg in job.args:
        role = arg.get("role")
        if arg["kind"] == "tensor":
            if arg["name"] in files:
                value = read_tensor(job, arg, files[arg["name"]])
            elif role in ("input", "inout"):
                raise ProtocolError(f"files has no file for the {role} tensor {arg['name']}")
            else:
                value = job.torch.empty(arg["shape"], dtype=torch_dtype(job, arg["dtype"]), device=job.device)
            tensors[arg["name"]] = value
        else:
            value = scalar_value(arg)
        if arg.get("meta"):
            if job.kind == "triton":
                meta[arg["name"]] = value
        elif job.kind == "triton" or role in ("input", "inout"):
            positional.append(value)
    return Call(positional, meta, tensors)


# --- load: import kernel.py, find what to call --------------------------------------------------------------------

# Build-tool failures name the tool on one line; a compiler's own diagnostics (the kernel's fault) do not.
MISSING_TOOL_LINE = re.compile(r"\b(ninja|nvcc|[cg]\+\+)\b[^\n]*?(command not found|not found|No such file)")
TOOLS = (("CUDA_HOME", "the CUDA toolkit (CUDA_HOME)"), ("ninja", "ninja"), ("nvcc", "nvcc"), ("g++", "g++"),
         ("c++", "a C++ compiler (c++)"))
TRITON_MISSING = "Triton is not installed in the service's Python"


def missing_tool(e):
    """The build tool a torch C++/CUDA extension needed and did not find, or None when the failure is the kernel's."""
    if not isinstance(e, (RuntimeError, OSError)):
        return None
    text = str(e)
    if text.startswith("Error building extension"):
        # The tools ran: only a shell's 'not found' for one of them is the service's fault.
        found = MISSING_TOOL_LINE.search(text)
        return found and found.group(1)
    lowered = text.lower()
    return next((name for token, name in TOOLS if token.lower() in lowered), None)


def import_kernel(source):
    """kernel.py, imported by its relative name so that tracebacks and syntax errors say kernel.py:LINE."""
    with open(KERNEL_FILE, "w", encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("kernel", KERNEL_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernel"] = module
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "triton":
            raise MissingError(TRITON_MISSING) from e
        raise
    except Exception as e:
        tool = missing_tool(e)
        if tool is not None:
            raise MissingError(f"{tool} is not available to build the kernel's extension: {e}") from e
        raise
    return module


def torch_entry(job, module, metadata):
    """(callable, name) for torch and torch_cuda: a function by name, else a class instance on the device."""
    function_name = metadata.get("function_name")
    if function_name:
        fn = getattr(module, function_name, None)
        if not callable(fn):
            raise EntryError(f"function_name {function_name!r} is not a function of the source")
        return fn, function_name
    class_name = metadata.get("class_name")
    candidates = [class_name] if class_name else ["Model", "ModelNew"]
    cls_name = next((n for n in candidates if isinstance(getattr(module, n, None), type)), None)
    if cls_name is None:
        if class_name:
            raise EntryError(f"class_name {class_name!r} is not a class of the source")
        raise EntryError("no function_name given and no class Model or ModelNew in the source")
    get_init_inputs = getattr(module, "get_init_inputs", None)
    init = list(get_init_inputs()) if callable(get_init_inputs) else []
    instance = getattr(module, cls_name)(*init)
    if isinstance(instance, job.torch.nn.Module):
        instance = instance.to(job.device).eval()
    method_name = metadata.get("method_name")
    fn = getattr(instance, method_name, None) if method_name else instance
    if not callable(fn):
        raise EntryError(f"{cls_name} has no method {method_name!r}" if method_name else
                         f"{cls_name} instances cannot be called: name the method in metadata.method_name")
    default_method = "forward" if isinstance(instance, job.torch.nn.Module) else "__call__"
    return fn, f"{cls_name}.{method_name or default_method}"


def import_triton():
    try:
        import triton  # noqa: PLC0415 (only triton jobs need it)
    except ImportError:
        raise MissingError(TRITON_MISSING) from None
    return triton


def triton_entry(triton, module, metadata, launch):
    kernel_type = getattr(triton.runtime.jit, "KernelInterface", triton.runtime.jit.JITFunction)
    kernels = {n: v for n, v in vars(module).items() if isinstance(v, kernel_type) and hasattr(v, "run")}
    kernel_name = metadata.get("kernel_name")
    if kernel_name:
        if kernel_name not in kernels:
            raise EntryError(f"kernel_name {kernel_name!r} is not a @triton.jit function of the source")
    elif len(kernels) != 1:
        named = ", ".join(sorted(kernels)) or "none"
        raise EntryError(f"no kernel_name given and the source has not exactly one @triton.jit function ({named})")
    else:
        kernel_name = next(iter(kernels))
    grid = (launch or {}).get("grid")
    if not isinstance(grid, dict):
        raise EntryError("a triton kernel needs launch.grid")
    options = {k: launch[k] for k in ("num_warps", "num_stages") if launch.get(k) is not None}
    return kernels[kernel_name][tuple(int(grid.get(axis, 1)) for axis in "xyz")], options, kernel_name


def load(job, msg):
    if job.load_tried:
        raise ProtocolError("this runner has loaded a kernel already: one load per process")
    job.load_tried = True
    kernel = msg.get("kernel")
    if not isinstance(kernel, dict) or kernel.get("type") not in (*TORCH_KINDS, "triton"):
        raise ProtocolError(f"load: unknown kernel {kernel!r:.200}")
    if not isinstance(kernel.get("source"), str):
        raise ProtocolError("load: kernel.source must be a string")
    args = check_args(msg.get("args"))
    metadata = kernel.get("metadata") or {}
    began = time.perf_counter_ns()
    # Before the source, which imports triton too: its absence is the service's, not the kernel's.
    triton = import_triton() if kernel["type"] == "triton" else None
    module = import_kernel(kernel["source"])
    options = {}
    if triton is not None:
        fn, options, entry = triton_entry(triton, module, metadata, kernel.get("launch"))
    elif kernel["type"] == "multi_kernel":
        entry = metadata.get("entry_point")
        fn = getattr(module, entry, None) if entry else None
        if not callable(fn):
            raise EntryError(f"multi_kernel needs metadata.entry_point naming a function of the source, got {entry!r}")
    else:
        fn, entry = torch_entry(job, module, metadata)
    job.launch = lambda call: fn(*call.args, **options, **call.meta)  # meta is empty but for triton
    job.kind, job.args = kernel["type"], args
    return {"t": "loaded", "ms": (time.perf_counter_ns() - began) / 1e6, "entry": entry}


# --- run: one call for correctness, its outputs to files ----------------------------------------------------------


def outputs_of(job, call, result):
    """The tensors to judge: the kernel's return value, else (and always for triton) its output arguments."""
    torch = job.torch
    if job.kind != "triton":
        if isinstance(result, torch.Tensor):
            return [result]
        if isinstance(result, (tuple, list)):
            return [output_tensor(torch, value, i) for i, value in enumerate(result)]
        if result is not None:
            raise OutputError(f"the kernel returned a {type(result).__name__}, not a tensor or a tuple of tensors")
    written = [call.tensors[a["name"]] for a in job.args if a["kind"] == "tensor" and a["role"] in ("output", "inout")]
    if not written:
        raise OutputError("the kernel returned nothing")
    return written


def output_tensor(torch, value, i):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, bool):
        return torch.tensor(value, dtype=torch.bool)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    raise OutputError(f"output {i} is a {type(value).__name__}, not a tensor or a number")


def write_tensor(job, tensor, path):
    """Contiguous CPU bytes, copied from the tensor's memory (no numpy: bfloat16 has no numpy dtype)."""
    name = job.dtype_names.get(tensor.dtype)
    if name is None:
        raise OutputError(f"an output has dtype {tensor.dtype}, which the service does not compare")
    host = tensor.detach().contiguous().cpu()
    byte_count = host.numel() * host.element_size()
    with open(path, "wb") as f:
        if byte_count:
            f.write((ctypes.c_char * byte_count).from_address(host.data_ptr()))
    return {"file": path, "dtype": name, "shape": list(host.shape)}


def run(job, msg):
    if job.launch is None:
        raise ProtocolError("run before a successful load")
    out = relative_path(msg.get("out"), "out")
    call = make_call(job, msg.get("files"))
    began = time.perf_counter_ns()
    with job.torch.no_grad():
        result = job.launch(call)
    job.synchronize()
    ms = (time.perf_counter_ns() - began) / 1e6
    os.makedirs(out, exist_ok=True)
    outputs = [write_tensor(job, t, f"{out}/o{i}.bin") for i, t in enumerate(outputs_of(job, call, result))]
    inputs_after = {
        a["name"]: write_tensor(job, call.tensors[a["name"]], f"{out}/in-{a['name']}.bin")["file"]
        for a in job.args
        if a["kind"] == "tensor" and a.get("role") == "input"
    }
    return {"t": "ran", "outputs": outputs, "inputsAfter": inputs_after, "ms": ms}


# --- prepare and time: input sets on the device, then batches of timed calls ---------------------------------------


def prepare(job, msg):
    if job.launch is None:
        raise ProtocolError("prepare before a successful load")
    sets, flush_bytes = msg.get("sets"), msg.get("flushBytes", 0)
    if not isinstance(sets, list) or not sets:
        raise ProtocolError("prepare: sets must be a non-empty list")
    if not isinstance(flush_bytes, int) or flush_bytes < 0:
        raise ProtocolError("prepare: flushBytes must be a non-negative integer")
    # Earlier sets go first, so their device memory is free for the new ones.
    job.calls, job.flush_buffer, job.next_call = [], None, 0
    job.calls = [make_call(job, files) for files in sets]
    if flush_bytes > 0:
        job.flush_buffer = job.torch.empty(flush_bytes, dtype=job.torch.uint8, device=job.device)
    job.synchronize()
    return {"t": "prepared", "sets": len(job.calls)}


def count_field(msg, name):
    value = msg.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProtocolError(f"time: {name} must be a non-negative integer")
    return value


def time_batch(job, msg, now=time.perf_counter_ns):
    """Warm-ups, then `samples` calls between two marks each; every interval is reported from one base mark, so the
    parent computes all statistics. Warm-ups use the sets the samples will use, without advancing the rotation."""
    if not job.calls:
        raise ProtocolError("time before prepare")
    samples, warmup = count_field(msg, "samples"), count_field(msg, "warmup")
    flush = job.flush_buffer if msg.get("flush") and job.device == "cuda" else None
    timer, calls, launch, first = job.timer, job.calls, job.launch, job.next_call
    timer.reserve(2 * samples)
    began = now()
    timer.record(BASE)
    with job.torch.no_grad():
        for w in range(warmup):
            if flush is not None:
                flush.zero_()
            launch(calls[(first + w) % len(calls)])
        for i in range(samples):
            call = calls[(first + i) % len(calls)]
            if flush is not None:
                flush.zero_()
            timer.record(2 * i)
            launch(call)
            timer.record(2 * i + 1)
    timer.wait(2 * samples - 1 if samples else BASE)
    wall_ms = (now() - began) / 1e6
    job.next_call = (first + samples) % len(calls)
    return {
        "t": "timed",
        "startsMs": [timer.elapsed_ms(BASE, 2 * i) for i in range(samples)],
        "endsMs": [timer.elapsed_ms(BASE, 2 * i + 1) for i in range(samples)],
        "wallMs": wall_ms,
    }


HANDLERS = {"load": load, "run": run, "prepare": prepare, "time": time_batch}


# --- serving -------------------------------------------------------------------------------------------------------


def take_stdio():
    """The protocol's own copies of stdin and stdout; fd 1 then points at stderr and fd 0 at /dev/null, so neither
    the kernel nor a compiler it starts can write a protocol line or swallow one."""
    answers = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    commands = os.fdopen(os.dup(0), "r", encoding="utf-8")
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        pass  # no /dev/null in this sandbox: stdin stays shared, which only matters to code that reads it
    return commands, answers


def answer_one(job, line, send):
    """One command line → at most one answer; False when the parent said bye."""
    msg_id, phase = None, "protocol"
    try:
        try:
            msg = json.loads(line)
        except ValueError as e:
            raise ProtocolError(f"not JSON: {e}") from None
        if isinstance(msg, dict):
            msg_id = msg.get("id") if isinstance(msg.get("id"), int) else None
        check_message(msg)
        if msg["t"] == "bye":
            return False
        phase = PHASE_OF[msg["t"]]
        answer = HANDLERS[msg["t"]](job, msg)
        send({"t": answer["t"], "id": msg_id, **answer})
    except (Exception, SystemExit) as e:  # noqa: BLE001 (a kernel's sys.exit() is its failure, not the runner's end)
        send(error_answer(e, msg_id, phase, job.cwd))
    return True


def serve():
    commands, answers = take_stdio()
    sys.dont_write_bytecode = True  # the job folder holds what the parent wrote and what the runner answered, no more

    def send(message):
        answers.write(json.dumps({"v": PROTOCOL_VERSION, **message}, separators=(",", ":")) + "\n")

    device = os.environ.get("CUDAKIT_RUNNER_DEVICE", "cuda")
    cwd = os.getcwd()
    try:
        if device not in ("cuda", "cpu"):
            raise ProtocolError(f"CUDAKIT_RUNNER_DEVICE is {device!r}, not cuda or cpu")
        import torch  # noqa: PLC0415 (the probe runs without torch; serving needs it)

        if device == "cuda" and not torch.cuda.is_available():
            raise MissingError("torch cannot use a GPU here (torch.cuda.is_available() is False)")
        timer = bind_timer(torch, device)
    except Exception as e:  # noqa: BLE001 (no ready line: the parent reads why, then the exit status)
        send(error_answer(e, None, "protocol", cwd) | ({} if isinstance(e, RunnerError) else {"kind": "missing"}))
        return 1
    job = Job(torch, device, timer, cwd)
    send({"t": "ready", "pid": os.getpid(), "python": platform.python_version(), "torch": torch.__version__,
          "device": device, "timer": timer.name})
    for line in commands:
        if line.strip() and not answer_one(job, line, send):
            break
    return 0


def main(argv):
    if argv[1:] == ["--probe"]:
        sys.stdout.write(json.dumps(probe()) + "\n")
        return 0
    if argv[1:] == ["--serve"]:
        return serve()
    sys.stderr.write("usage: cudakit_runner.py --probe | --serve\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
