"""nibabel conformance of lumen's NIfTI reader and writer. For every .nii/.nii.gz file shipped
in nibabel's own tests/data that nibabel can load, and for files written here covering each
datatype, both byte orders, scaling, NIfTI-1 and NIfTI-2, and the sform / qform / fallback
affine cases (with the header fixes nibabel applies on load), `lumen convert FILE
out.safetensors` must give exactly nibabel's img.get_fdata() (as float32) and img.affine, and
`--keep-dtype` the stored values. Then lumen writes NIfTI and nibabel reads it back: a NIfTI
converted to NIfTI keeps its affine bit for bit, and one written from an affine has it within
float32 rounding (the header stores float32). Usage: python3 check_nibabel.py LUMEN_BINARY"""
import glob
import gzip
import logging
import os
import subprocess
import sys
import tempfile
import warnings

import nibabel as nib
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

LUMEN = sys.argv[1]
logging.getLogger("nibabel").setLevel(logging.ERROR)  # its notes on the header fixes it makes
STORED_AS = {np.uint8: np.uint8, np.int8: np.int32, np.int16: np.int32, np.uint16: np.int32,
             np.int32: np.int32, np.uint32: np.int64, np.int64: np.int64, np.uint64: np.int64,
             np.float32: np.float32, np.float64: np.float64}
failures = []
cases = 0


def lumen(*args):
    result = subprocess.run([LUMEN, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())


def compare(name, path, tmp, img=None):
    """lumen's reading of `path` against nibabel's (`img`, or nib.load(path))."""
    global cases
    cases += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        img = img if img is not None else nib.load(path)
        want = np.asarray(img.get_fdata()).astype(np.float32)
        affine = img.affine
        raw = np.asanyarray(img.dataobj.get_unscaled()) if hasattr(img.dataobj, "get_unscaled") \
            else None
    out = os.path.join(tmp, "out.safetensors")
    try:
        lumen("convert", path, out)
        got = safetensors_io.load(out)
        if got["image"].shape != want.shape or not np.array_equal(got["image"], want,
                                                                  equal_nan=True):
            failures.append(f"{name}: image differs from get_fdata()")
        elif not np.array_equal(got["affine"], affine):
            failures.append(f"{name}: affine {got['affine'].tolist()} != {affine.tolist()}")
        if raw is not None:
            lumen("convert", path, out, "--keep-dtype")
            stored = safetensors_io.load(out)["image"]
            expected = raw.astype(STORED_AS[raw.dtype.type])
            if not np.array_equal(stored, expected, equal_nan=expected.dtype.kind == "f"):
                failures.append(f"{name}: --keep-dtype values differ from the stored ones")
    except RuntimeError as e:
        failures.append(f"{name}: lumen failed: {e}")


def write_raw(path, header, data, gz):
    """A single-file NIfTI from a nibabel header and data, byte for byte as given (nibabel's
    own saving would recompute the scaling)."""
    sizeof = header.sizeof_hdr
    header["vox_offset"] = sizeof + 4
    body = header.binaryblock + b"\0\0\0\0"
    dtype = header.get_data_dtype()
    body += np.asarray(data).astype(dtype).tobytes(order="F")
    with (gzip.open(path, "wb") if gz else open(path, "wb")) as f:
        f.write(body)


def rotation(ax, ay, az):
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def generated(tmp):
    rng = np.random.default_rng(1)
    dtypes = [np.uint8, np.int16, np.int32, np.float32, np.float64, np.int8, np.uint16,
              np.uint32, np.int64, np.uint64]
    A = np.eye(4)
    A[:3, :3] = rotation(0.3, -0.2, 1.1) * [0.8, 1.25, 2.5]
    A[:3, 3] = [-90.5, 110.25, -72.0]
    flip = np.diag([-1.0, 1.0, 1.0, 1.0]) @ A  # a left-handed affine: qfac -1
    index = 0
    for version, header_class in ((1, nib.Nifti1Header), (2, nib.Nifti2Header)):
        for dt in dtypes:
            for endian in "<>":
                for scaling in ((np.nan, np.nan), (1.0, 0.0), (2.5, -3.25), (0.0, 5.0)):
                    for xform in ("sform", "qform", "both", "none", "qform_flip", "fixes"):
                        shape = (5, 4, 3) if index % 3 else (4, 3, 2, 2)
                        index += 1
                        h = header_class(endianness=endian)
                        h.set_data_dtype(dt)
                        h.set_data_shape(shape)
                        h.set_zooms((0.8, 1.25, 2.5) + (2.0,) * (len(shape) - 3))
                        if xform in ("sform", "both"):
                            h.set_sform(A, code=1)
                        if xform in ("qform", "both"):
                            h.set_qform(A, code=2)
                        if xform == "qform_flip":
                            h.set_qform(flip, code=1)
                        if xform == "fixes":  # zero and negative pixdim, qfac 0, code 9
                            h.set_qform(A, code=1)
                            pixdim = h["pixdim"].copy()
                            pixdim[0], pixdim[1], pixdim[2] = 0, 0, -1.5
                            h["pixdim"] = pixdim
                            h["sform_code"] = 9
                        h["scl_slope"], h["scl_inter"] = scaling
                        if np.issubdtype(dt, np.integer):
                            info = np.iinfo(dt)
                            data = rng.integers(max(info.min, -1000), min(info.max, 1000), shape)
                        else:
                            data = rng.standard_normal(shape) * 100
                        name = f"v{version}_{np.dtype(dt).name}_{endian}_{scaling}_{xform}"
                        path = os.path.join(tmp, f"gen{index}.nii" + (".gz" if index % 2 else ""))
                        write_raw(path, h, data, path.endswith(".gz"))
                        compare(name, path, tmp)


def round_trips(tmp):
    global cases
    rng = np.random.default_rng(2)
    data = rng.standard_normal((6, 5, 4)).astype(np.float32)
    A = np.eye(4)
    A[:3, :3] = rotation(0.1, 0.2, -0.3) * [1.5, 0.75, 3.0]
    A[:3, 3] = [10.0, -20.0, 30.0]
    source = os.path.join(tmp, "source.nii.gz")
    img = nib.Nifti1Image(data, A)
    img.set_qform(A, code=1)
    nib.save(img, source)
    for out_name in ("copy.nii", "copy.nii.gz"):
        out = os.path.join(tmp, out_name)
        lumen("convert", source, out)
        back = nib.load(out)
        cases += 1
        if not np.array_equal(back.affine, nib.load(source).affine):
            failures.append(f"{out_name}: the affine changed in a NIfTI to NIfTI conversion")
        if not np.array_equal(back.get_fdata(), nib.load(source).get_fdata()):
            failures.append(f"{out_name}: the values changed in a NIfTI to NIfTI conversion")
        if back.header.get_qform_quaternion().tolist() != \
                nib.load(source).header.get_qform_quaternion().tolist():
            failures.append(f"{out_name}: the qform changed")
    # From safetensors (image + affine) to NIfTI: the affine within float32 rounding.
    st = os.path.join(tmp, "source.safetensors")
    lumen("convert", source, st)
    for dtype_flag in ([], ["--keep-dtype"]):
        out = os.path.join(tmp, "from_st.nii.gz")
        lumen("convert", st, out, *dtype_flag)
        back = nib.load(out)
        cases += 1
        if not np.allclose(back.affine, nib.load(source).affine, rtol=1e-6, atol=1e-5):
            failures.append("safetensors to NIfTI: affine differs beyond float32 rounding")
        if not np.array_equal(back.get_fdata().astype(np.float32), data):
            failures.append("safetensors to NIfTI: values differ")
    # Integer labels keep their values and the input geometry (a predicted mask).
    labels = rng.integers(0, 5, (6, 5, 4)).astype(np.uint8)
    mask = os.path.join(tmp, "mask.nii.gz")
    nib.save(nib.Nifti1Image(labels, A), mask)
    out = os.path.join(tmp, "mask_copy.nii.gz")
    lumen("convert", mask, out, "--keep-dtype")
    back = nib.load(out)
    cases += 1
    if back.get_data_dtype() != np.uint8 or not np.array_equal(np.asanyarray(back.dataobj),
                                                               labels):
        failures.append("mask: values or dtype changed")
    if not np.array_equal(back.affine, nib.load(mask).affine):
        failures.append("mask: affine changed")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(os.path.dirname(nib.__file__), "tests", "data")
        shipped = sorted(glob.glob(os.path.join(data_dir, "*.nii")) +
                         glob.glob(os.path.join(data_dir, "*.nii.gz")))
        loadable = 0
        for path in shipped:
            # A CIFTI-2 file (nib.load gives a Cifti2Image) is a NIfTI-2 file underneath.
            img = None
            for loader in (nib.load, nib.Nifti2Image.from_filename, nib.Nifti1Image.from_filename):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        candidate = loader(path)
                        candidate.get_fdata()
                    if isinstance(candidate, (nib.Nifti1Image, nib.Nifti2Image)):
                        img = candidate
                        break
                except Exception:
                    continue
            if img is None:
                continue
            loadable += 1
            compare("nibabel/tests/data/" + os.path.basename(path), path, tmp, img)
        print(f"nibabel's test files: {loadable} of {len(shipped)} load in nibabel as NIfTI")
        generated(tmp)
        round_trips(tmp)
    for failure in failures[:40]:
        print("FAIL", failure)
    print(f"nibabel conformance: {cases - len(failures)} of {cases} cases match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
