"""The direct CUDA launch's parameter buffer (backends/cuda.py, ParamSlots): what
``cuLaunchKernel`` will read for each kind of argument. Plain numpy, so it runs without a GPU;
the GPU runs of the test suite check the launches themselves."""
import ctypes

import numpy as np

from lazycv.backends.cuda import ParamSlots


class FakeArray:
    """An array argument whose numba-cuda parameters were worked out already."""

    def __init__(self, params):
        self._lazycv_params = params


def read_slot(slots, i, ctype):
    address = ctypes.c_uint64.from_address(slots.pointers + 8 * i).value
    return ctype.from_address(address).value


def test_every_kind_lands_in_its_slot_and_a_pointer_leads_to_it():
    arr = (0, 0, 12, 1, 0x7F00DEADBEEF, 3, 4, 4, 1)          # meminfo .. strides of a 3x4 u8 array
    slots = ParamSlots([None, "i", "f32", "f64", "i"], [len(arr), 1, 1, 1, 1])
    slots.write([FakeArray(arr), -5, np.float32(0.1), 0.25, 2 ** 40])
    n = len(arr)
    assert [read_slot(slots, i, ctypes.c_int64) for i in range(n)] == list(arr)
    assert read_slot(slots, n, ctypes.c_int64) == -5
    assert read_slot(slots, n, ctypes.c_int32) == -5             # an int32 parameter reads the low half
    assert read_slot(slots, n + 1, ctypes.c_float) == np.float32(0.1)
    assert read_slot(slots, n + 2, ctypes.c_double) == 0.25
    assert read_slot(slots, n + 3, ctypes.c_int64) == 2 ** 40


def test_a_later_launch_overwrites_every_slot():
    slots = ParamSlots(["f32", "i"], [1, 1])
    slots.write([np.float32(-1.5), 7])
    slots.write([np.float32(2.0), 9])
    assert read_slot(slots, 0, ctypes.c_float) == 2.0
    assert read_slot(slots, 1, ctypes.c_int64) == 9


def test_values_struct_will_not_pack_go_through_numpy_as_before():
    """The fast packer (one struct.pack_into) hands values it cannot take to numpy's
    conversions: a float32 parameter past float32's range is inf, a float for an integer
    parameter is truncated — what the numpy path always gave."""
    slots = ParamSlots(["f32", "i", "f64"], [1, 1, 1])
    slots.write([1e39, 3, 0.5])
    assert read_slot(slots, 0, ctypes.c_float) == np.inf
    assert read_slot(slots, 1, ctypes.c_int64) == 3
    slots.write([np.float32(1.25), 7.9, -2.0])
    assert read_slot(slots, 0, ctypes.c_float) == 1.25
    assert read_slot(slots, 1, ctypes.c_int64) == 7
    assert read_slot(slots, 2, ctypes.c_double) == -2.0


def test_the_fast_packer_writes_what_the_numpy_path_writes(rng):
    kinds = [None, "i", "i", "f64", "f32", None, "f32", "i"]
    widths = [9, 1, 1, 1, 1, 7, 1, 1]
    for _ in range(50):
        args = [FakeArray(tuple(int(v) for v in rng.integers(-2 ** 40, 2 ** 40, 9))),
                int(rng.integers(-2 ** 31, 2 ** 31)), int(rng.integers(0, 2 ** 62)),
                float(rng.normal() * 1e6), np.float32(rng.normal()),
                FakeArray(tuple(int(v) for v in rng.integers(0, 2 ** 47, 7))),
                float(np.float32(rng.normal() * 1e30)), -1]
        fast, slow = ParamSlots(kinds, widths), ParamSlots(kinds, widths)
        fast.write(args)
        slow._write_slowly(args)
        assert fast.ints.tobytes() == slow.ints.tobytes()
