"""One native entry per call: a CPython function, written in LLVM IR, that takes a solver's arrays, runs its
generated code and fills the caller's output arrays, so an ordinary call crosses from Python into native code
once.

Through ctypes a call paid for each crossing and for numpy's slice assignments around it — more than the solve
itself on small robots (benchmarks/results/design_measurements.md). The entry here is built once per process
(it knows nothing about any robot) and bound to one solver's *plan of arguments*, an int64 array:

    [ws address, entry address, status index (−1: none), argument count, address of None, passive count,
     owner thread (0: any),
     then per argument: kind (NONE, IN, OUT, DEFAULT), workspace offset, ndim, dim0, dim1, default's address,
     then the workspace indices of the passive joints' x]

It reads each array through the buffer protocol (the stable C API; no numpy internals) and takes the quick
path only for what it can check completely: a call from the thread that owns the workspace (checked here, not in
Python, where ``threading.get_ident`` cost a tenth of an unchecked call), C-contiguous float64 arrays of exactly
the planned shapes, None where the plan says None, zero x at passive joints, and a status of 1 after the run. A
DEFAULT argument is an input that may be None: its default values (a floating base's identity pose, zero twist)
are then copied in from the array the plan points to, so Python need not fill in defaults at every call.
For anything else it returns False having changed nothing the caller keeps, and the caller takes the checked
Python path, which converts, raises the boundary's errors or asks the reference path. The entry holds the GIL
while it runs.
"""

from __future__ import annotations

import ctypes
import threading
from typing import NamedTuple

import numpy as np

from gtdyn.arguments.query import GIVEN, POSE, TWIST
from gtdyn.compiled import base_inputs, native

NONE, IN, OUT, DEFAULT = 0, 1, 2, 3  # what an argument must be: None, an input array, an output array, either of
# the first two (None: the default's values)
_HEAD, _PER_ARGUMENT = 7, 6
_BUFFER_IN = 0x3C  # PyBUF_C_CONTIGUOUS | PyBUF_FORMAT
_BUFFER_OUT = 0x3D  # the same, writable
_METH_FASTCALL = 0x80
_API = ("PyObject_GetBuffer", "PyBuffer_Release", "PyErr_Clear", "PyLong_FromSsize_t", "PyLong_AsVoidPtr",
        "PyThread_get_thread_ident")

_IR = r"""
%buffer = type { ptr, ptr, i64, i64, i32, i32, ptr, ptr, ptr, ptr, ptr }
declare i32 @PyObject_GetBuffer(ptr, ptr, i32)
declare void @PyBuffer_Release(ptr)
declare void @PyErr_Clear()
declare ptr @PyLong_FromSsize_t(i64)
declare ptr @PyLong_AsVoidPtr(ptr)
declare i64 @PyThread_get_thread_ident()
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

; 1 if the buffer is C float64 ("d") of exactly ndim dimensions d0 (and d1); ndim 0: of any shape, d0 doubles
; in all (an output the caller made, in the shape it returns)
define internal i1 @planned_shape(ptr %view, i64 %ndim, i64 %d0, i64 %d1) {
entry:
  %itemsize_at = getelementptr %buffer, ptr %view, i32 0, i32 3
  %itemsize = load i64, ptr %itemsize_at
  %format_at = getelementptr %buffer, ptr %view, i32 0, i32 6
  %format = load ptr, ptr %format_at
  %is_double = icmp eq i64 %itemsize, 8
  %has_format = icmp ne ptr %format, null
  %typed = and i1 %is_double, %has_format
  br i1 %typed, label %format_check, label %no
format_check:
  %f0 = load i8, ptr %format
  %f1_at = getelementptr i8, ptr %format, i64 1
  %f1 = load i8, ptr %f1_at
  %is_d = icmp eq i8 %f0, 100
  %ends = icmp eq i8 %f1, 0
  %d_alone = and i1 %is_d, %ends
  %any_shape = icmp eq i64 %ndim, 0
  br i1 %d_alone, label %shape_check, label %no
shape_check:
  br i1 %any_shape, label %whole, label %exact
whole:
  %len_at = getelementptr %buffer, ptr %view, i32 0, i32 2
  %len = load i64, ptr %len_at
  %bytes = mul i64 %d0, 8
  %same_len = icmp eq i64 %len, %bytes
  ret i1 %same_len
exact:
  %ndim_at = getelementptr %buffer, ptr %view, i32 0, i32 5
  %ndim32 = load i32, ptr %ndim_at
  %ndim_view = sext i32 %ndim32 to i64
  %shape_at = getelementptr %buffer, ptr %view, i32 0, i32 7
  %shape = load ptr, ptr %shape_at
  %same_ndim = icmp eq i64 %ndim_view, %ndim
  %has_shape = icmp ne ptr %shape, null
  %ok = and i1 %same_ndim, %has_shape
  br i1 %ok, label %look, label %no
look:
  %s0 = load i64, ptr %shape
  %d = icmp eq i64 %s0, %d0
  %two = icmp eq i64 %ndim, 2
  br i1 %two, label %second, label %done
second:
  %s1_at = getelementptr i64, ptr %shape, i64 1
  %s1 = load i64, ptr %s1_at
  %other = icmp eq i64 %s1, %d1
  %e = and i1 %d, %other
  br label %done
done:
  %result = phi i1 [ %d, %look ], [ %e, %second ]
  ret i1 %result
no:
  ret i1 false
}

; copy one argument between its buffer and the workspace: 1 if it was as planned; with %fill, a DEFAULT
; argument given None, its default's values (d0, or d0 × d1 doubles) into the workspace
define internal i1 @move(ptr %argument, ptr %plan, ptr %ws, i32 %flags, i1 %out, i1 %fill) {
entry:
  %view = alloca %buffer
  %offset_at = getelementptr i64, ptr %plan, i64 1
  %offset = load i64, ptr %offset_at
  %ndim_at = getelementptr i64, ptr %plan, i64 2
  %ndim = load i64, ptr %ndim_at
  %d0_at = getelementptr i64, ptr %plan, i64 3
  %d0 = load i64, ptr %d0_at
  %d1_at = getelementptr i64, ptr %plan, i64 4
  %d1 = load i64, ptr %d1_at
  br i1 %fill, label %default, label %given
default:
  %from_at = getelementptr i64, ptr %plan, i64 5
  %from_word = load i64, ptr %from_at
  %from = inttoptr i64 %from_word to ptr
  %two = icmp eq i64 %ndim, 2
  %columns = select i1 %two, i64 %d1, i64 1
  %count = mul i64 %d0, %columns
  %default_bytes = mul i64 %count, 8
  %default_slot = getelementptr double, ptr %ws, i64 %offset
  call void @llvm.memcpy.p0.p0.i64(ptr %default_slot, ptr %from, i64 %default_bytes, i1 false)
  ret i1 true
given:
  %failed = call i32 @PyObject_GetBuffer(ptr %argument, ptr %view, i32 %flags)
  %got = icmp eq i32 %failed, 0
  br i1 %got, label %check, label %refused
refused:
  call void @PyErr_Clear()
  ret i1 false
check:
  %fits = call i1 @planned_shape(ptr %view, i64 %ndim, i64 %d0, i64 %d1)
  br i1 %fits, label %copy, label %release
copy:
  %buf_at = getelementptr %buffer, ptr %view, i32 0, i32 0
  %buf = load ptr, ptr %buf_at
  %len_at = getelementptr %buffer, ptr %view, i32 0, i32 2
  %bytes = load i64, ptr %len_at
  %slot = getelementptr double, ptr %ws, i64 %offset
  br i1 %out, label %write, label %read
write:
  call void @llvm.memcpy.p0.p0.i64(ptr %buf, ptr %slot, i64 %bytes, i1 false)
  br label %release
read:
  call void @llvm.memcpy.p0.p0.i64(ptr %slot, ptr %buf, i64 %bytes, i1 false)
  br label %release
release:
  call void @PyBuffer_Release(ptr %view)
  ret i1 %fits
}

; every argument of one kind moved as planned (NONE arguments: None itself)
define internal i1 @move_all(ptr %args, ptr %head, ptr %ws, i64 %count, ptr %none, i64 %kind, i32 %flags, i1 %out) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %moved ]
  %more = icmp slt i64 %i, %count
  br i1 %more, label %body, label %all
body:
  %at = mul i64 %i, $PER_ARGUMENT
  %start = add i64 %at, $HEAD
  %plan = getelementptr i64, ptr %head, i64 %start
  %this_kind = load i64, ptr %plan
  %arg_at = getelementptr ptr, ptr %args, i64 %i
  %argument = load ptr, ptr %arg_at
  %next = add i64 %i, 1
  %is_none_kind = icmp eq i64 %this_kind, $NONE
  br i1 %is_none_kind, label %expect_none, label %array
expect_none:
  %is_none = icmp eq ptr %argument, %none
  br i1 %is_none, label %moved, label %wrong
array:
  %is_default_kind = icmp eq i64 %this_kind, $DEFAULT
  br i1 %is_default_kind, label %default_kind, label %plain
default_kind:
  %reading = icmp eq i64 %kind, $IN
  br i1 %reading, label %default_in, label %moved
default_in:
  %given_none = icmp eq ptr %argument, %none
  br label %move_it
plain:
  %mine = icmp eq i64 %this_kind, %kind
  br i1 %mine, label %move_it, label %moved
move_it:
  %fill = phi i1 [ %given_none, %default_in ], [ false, %plain ]
  %ok = call i1 @move(ptr %argument, ptr %plan, ptr %ws, i32 %flags, i1 %out, i1 %fill)
  br i1 %ok, label %moved, label %wrong
moved:
  br label %loop
all:
  ret i1 true
wrong:
  ret i1 false
}

define ptr @gtdyn_entry(ptr %self, ptr %args, i64 %nargs) {
entry:
  %head = call ptr @PyLong_AsVoidPtr(ptr %self)
  %ws_word = load i64, ptr %head
  %ws = inttoptr i64 %ws_word to ptr
  %run_at = getelementptr i64, ptr %head, i64 1
  %run_word = load i64, ptr %run_at
  %run = inttoptr i64 %run_word to ptr
  %status_at = getelementptr i64, ptr %head, i64 2
  %status = load i64, ptr %status_at
  %count_at = getelementptr i64, ptr %head, i64 3
  %count = load i64, ptr %count_at
  %none_at = getelementptr i64, ptr %head, i64 4
  %none_word = load i64, ptr %none_at
  %none = inttoptr i64 %none_word to ptr
  %passive_at = getelementptr i64, ptr %head, i64 5
  %passives = load i64, ptr %passive_at
  %owner_at = getelementptr i64, ptr %head, i64 6
  %owner = load i64, ptr %owner_at
  %any_thread = icmp eq i64 %owner, 0
  br i1 %any_thread, label %count_check, label %thread_check
thread_check:
  %me = call i64 @PyThread_get_thread_ident()
  %mine = icmp eq i64 %me, %owner
  br i1 %mine, label %count_check, label %quit
count_check:
  %right_count = icmp eq i64 %nargs, %count
  br i1 %right_count, label %inputs, label %quit
inputs:
  %read = call i1 @move_all(ptr %args, ptr %head, ptr %ws, i64 %count, ptr %none, i64 $IN, i32 $BUFFER_IN, i1 false)
  br i1 %read, label %passive_start, label %quit
passive_start:
  %list_at = mul i64 %count, $PER_ARGUMENT
  %list = add i64 %list_at, $HEAD
  br label %passive
passive:
  %j = phi i64 [ 0, %passive_start ], [ %j_next, %passive_zero ]
  %more = icmp slt i64 %j, %passives
  br i1 %more, label %passive_body, label %solve
passive_body:
  %index_at = add i64 %list, %j
  %index_ptr = getelementptr i64, ptr %head, i64 %index_at
  %index = load i64, ptr %index_ptr
  %x_ptr = getelementptr double, ptr %ws, i64 %index
  %x = load double, ptr %x_ptr
  %j_next = add i64 %j, 1
  %zero = fcmp oeq double %x, 0.0
  br i1 %zero, label %passive_zero, label %quit
passive_zero:
  br label %passive
solve:
  call void %run(ptr %ws)
  %checked = icmp sge i64 %status, 0
  br i1 %checked, label %certified, label %outputs
certified:
  %word_ptr = getelementptr double, ptr %ws, i64 %status
  %word = load double, ptr %word_ptr
  %one = fcmp oeq double %word, 1.0
  br i1 %one, label %outputs, label %quit
outputs:
  %written = call i1 @move_all(ptr %args, ptr %head, ptr %ws, i64 %count, ptr %none, i64 $OUT, i32 $BUFFER_OUT, i1 true)
  br i1 %written, label %done, label %quit
done:
  %yes = call ptr @PyLong_FromSsize_t(i64 1)
  ret ptr %yes
quit:
  %no = call ptr @PyLong_FromSsize_t(i64 0)
  ret ptr %no
}
"""


def _ir() -> str:
    """``_IR`` with the plan's layout and the buffer flags written in."""
    text = _IR
    for name, value in (("$PER_ARGUMENT", _PER_ARGUMENT), ("$HEAD", _HEAD), ("$BUFFER_IN", _BUFFER_IN),
                        ("$BUFFER_OUT", _BUFFER_OUT), ("$NONE", NONE), ("$IN", IN), ("$OUT", OUT),
                        ("$DEFAULT", DEFAULT)):
        text = text.replace(name, str(value))
    return text


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_lock = threading.Lock()
_built: dict = {}


def _method() -> _MethodDef:
    """The entry's method definition, its code compiled on first use (kept for the process's life)."""
    with _lock:
        if not _built:
            binding = native.llvm()
            for name in _API:
                binding.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
            module = binding.parse_assembly(_ir())
            module.verify()
            engine = binding.create_mcjit_compiler(module, native.target_machine())
            engine.finalize_object()
            _built["engine"] = engine
            _built["method"] = _MethodDef(b"gtdyn_entry", engine.get_function_address("gtdyn_entry"),
                                          _METH_FASTCALL, None)
            new = ctypes.pythonapi.PyCFunction_NewEx
            new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
            _built["new"] = new
    return _built["method"]


class Argument:
    """One argument of a call as the plan has it: ``NONE``, an ``IN``/``OUT`` array of ``shape`` at workspace
    ``offset``, or a ``DEFAULT`` input whose None means ``default`` (a read-only float64 array of that shape, kept
    alive by its owner: the entry reads it at every such call). An output of ``any_shape`` need only hold as many
    doubles as ``shape``: the caller makes it, in the shape it returns, so none is reshaped at every call."""

    def __init__(self, kind: int, offset: int = 0, shape: tuple[int, ...] = (), default: np.ndarray | None = None,
                 any_shape: bool = False):
        if kind != NONE and not any_shape and not 1 <= len(shape) <= 2:
            raise ValueError("entry: an array argument has one or two dimensions")
        if any_shape and kind != OUT:
            raise ValueError("entry: only an output may take any shape")
        if (kind == DEFAULT) != (default is not None) or default is not None and not (
                default.dtype == np.float64 and default.shape == shape and default.flags.c_contiguous
                and not default.flags.writeable):
            raise ValueError("entry: a DEFAULT argument, and only it, has a read-only C float64 default of its shape")
        self.kind, self.offset, self.shape, self.default, self.any_shape = kind, offset, shape, default, any_shape

    def words(self) -> list[int]:
        address = 0 if self.default is None else self.default.ctypes.data
        if self.any_shape:  # ndim 0: the count of doubles alone is checked
            return [self.kind, self.offset, 0, int(np.prod(self.shape, dtype=np.int64)), 0, address]
        dims = list(self.shape) + [0] * (2 - len(self.shape))
        return [self.kind, self.offset, len(self.shape), *dims, address]


def call_plan(n: int, floating: bool, inverse: bool, outputs: list) -> list[Argument]:
    """The arguments of a solver's call as ``CompiledSolver.__call__`` passes them: q, q̇, x, then base_pose,
    base_twist, base_accel, base_wrench (None on a fixed base, and for the one of the last two the problem does not
    give), then ``outputs`` ((workspace offset, shape) each). Workspace offsets as ``gtdyn.compiled.base_inputs``
    lays the base out after q, q̇ and x; a floating base's inputs not given take ``base_inputs.DEFAULTS``."""
    arguments = [Argument(IN, k * n, (n,)) for k in range(3)]
    given = "base_accel" if inverse else "base_wrench"
    for name, offset, shape in (("base_pose", POSE, (4, 4)), ("base_twist", TWIST, (6,)),
                                ("base_accel", GIVEN, (6,)), ("base_wrench", GIVEN, (6,))):
        wanted = floating and name in ("base_pose", "base_twist", given)
        arguments.append(Argument(DEFAULT, 3 * n + offset, shape, base_inputs.DEFAULTS[name]) if wanted
                         else Argument(NONE))
    return arguments + [Argument(OUT, offset, shape) for offset, shape in outputs]


class Entry(NamedTuple):
    """A bound entry: ``call(*arrays)`` → True when it ran the plan's code on the workspace with the arrays as
    planned (outputs written), False when the caller must take its checked path; ``plan`` is what it reads, kept
    alive here with ``workspace`` and the ``defaults`` it points to."""

    call: object
    plan: np.ndarray
    workspace: np.ndarray
    defaults: tuple = ()


def bind(ws: np.ndarray, run_address: int, status: int | None, arguments: list[Argument], passive=(),
         owner: int | None = None) -> Entry:
    """The entry bound to one workspace, one generated function (its address) and one plan of ``arguments``;
    ``status``: the workspace index that must read 1 after the run (None: no check); ``passive``: workspace
    indices that must be zero (the passive joints' x); ``owner``: the thread (``threading.get_ident()``) whose
    calls it takes (None: any thread's)."""
    method = _method()
    thread = 0 if owner is None else owner - (1 << 64) * (owner >= 1 << 63)  # an unsigned long, as i64 bits
    plan = np.array([ws.ctypes.data, run_address, -1 if status is None else status, len(arguments), id(None),
                     len(passive), thread] + [w for a in arguments for w in a.words()] + list(passive), dtype=np.int64)
    return Entry(_built["new"](ctypes.addressof(method), plan.ctypes.data, None), plan, ws,
                 tuple(a.default for a in arguments if a.default is not None))
