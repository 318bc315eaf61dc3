"""NumPy conformance of lumen's .npy/.npz reader and writer: arrays that numpy.save and
numpy.savez(_compressed) write (every bool, integer and float dtype, both byte orders, C and
Fortran order, 0-d, empty and 1-5-D) must come back from `lumen convert --keep-dtype` with the
same values and shape (in lumen's dtype for them), and the files lumen writes must load in NumPy
with the same values. Usage: python3 check_numpy.py LUMEN_BINARY"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

LUMEN = sys.argv[1]
# numpy dtype -> the dtype lumen reads it as (datasets/npy.h).
AS_LUMEN = {"b1": np.bool_, "u1": np.uint8, "i1": np.int32, "i2": np.int32, "u2": np.int32,
            "i4": np.int32, "u4": np.int64, "i8": np.int64, "u8": np.int64, "f2": np.float16,
            "f4": np.float32, "f8": np.float64}


def lumen(*args):
    subprocess.run([LUMEN, *args], check=True, capture_output=True, text=True)


def sample(code, shape, rng):
    kind, size = code[0], int(code[1])
    if kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if kind == "f":
        values = rng.standard_normal(shape) * 1000
        return values.astype(f"f{size}")
    info = np.iinfo(f"{kind}{size}")
    high = min(int(info.max), 2**62)
    return rng.integers(int(info.min), high, shape, dtype=np.int64 if kind == "i" else np.uint64,
                        endpoint=True).astype(f"{kind}{size}")


def main():
    rng = np.random.default_rng(0)
    cases = failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.safetensors")
        for code in AS_LUMEN:
            for order in "<>":
                for shape in [(), (0,), (7,), (3, 4), (2, 3, 4), (2, 1, 3, 2, 2)]:
                    for fortran in (False, True):
                        a = sample(code, shape, rng).astype(order + code if code[1] != "1"
                                                            else code)
                        if fortran:
                            a = np.asfortranarray(a)
                        path = os.path.join(tmp, "a.npy")
                        np.save(path, a)
                        lumen("convert", path, out, "--keep-dtype")
                        got = safetensors_io.load(out)["image"]
                        want = a.astype(AS_LUMEN[code])
                        cases += 1
                        if got.shape != want.shape or not np.array_equal(got, want):
                            failures += 1
                            print(f"FAIL npy {a.dtype.str} {shape} fortran={fortran}")
        arrays = {"image": rng.standard_normal((3, 5, 7)).astype(np.float32),
                  "label": rng.integers(0, 9, (5, 7)).astype(np.uint8),
                  "big_endian": np.arange(6, dtype=">i8").reshape(2, 3)}
        for save in (np.savez, np.savez_compressed):
            path = os.path.join(tmp, "a.npz")
            save(path, **arrays)
            lumen("convert", path, out, "--keep-dtype")
            got = safetensors_io.load(out)
            for name, a in arrays.items():
                cases += 1
                if not np.array_equal(got[name], a.astype(AS_LUMEN[a.dtype.str[1:]])):
                    failures += 1
                    print(f"FAIL {save.__name__} member {name}")
        # lumen writes, NumPy reads: .npy from safetensors, .npz of every tensor.
        source = os.path.join(tmp, "a.npz")
        np.savez(source, **arrays)
        lumen("convert", source, out, "--keep-dtype")
        written = safetensors_io.load(out)
        npz = os.path.join(tmp, "lumen.npz")
        lumen("convert", out, npz)
        with np.load(npz) as back:
            for name, a in written.items():
                cases += 1
                if not np.array_equal(back[name], a):
                    failures += 1
                    print(f"FAIL lumen npz member {name}")
        one = os.path.join(tmp, "one.safetensors")
        lumen("convert", os.path.join(tmp, "a.npy"), one, "--keep-dtype")
        npy = os.path.join(tmp, "lumen.npy")
        lumen("convert", one, npy)
        cases += 1
        if not np.array_equal(np.load(npy), safetensors_io.load(one)["image"]):
            failures += 1
            print("FAIL lumen npy")
    print(f"numpy conformance: {cases - failures} of {cases} cases match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
