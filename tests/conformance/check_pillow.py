"""Pillow conformance of lumen's image reader and PNG writer. PNG (1-, 2-, 4-, 8- and 16-bit
grey, grey+alpha, RGB, RGBA, palette with and without transparency), BMP and TGA must read
exactly as Pillow decodes them (16-bit colour PNGs, which Pillow reduces to 8 bits, exactly as
the arrays they were written from), JPEG within one grey level on average; and the PNGs lumen
writes (8 and 16 bits, 1-4 channels) must read back in Pillow with the same values.
Usage: python3 check_pillow.py LUMEN_BINARY"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

LUMEN = sys.argv[1]
MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
failures = []
cases = 0


def lumen_read(path, tmp):
    out = os.path.join(tmp, "out.safetensors")
    result = subprocess.run([LUMEN, "convert", path, out, "--keep-dtype"], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())
    return safetensors_io.load(out)["image"]


def png(path, array, bits, color_type):
    """A PNG written here, for what Pillow cannot write (16-bit colour, 2- and 4-bit grey)."""
    h, w = array.shape[:2]
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    flat = array.reshape(h, w * channels).astype(np.uint64)
    raw = b""
    for row in flat:
        raw += b"\0"
        if bits == 16:
            raw += b"".join(struct.pack(">H", int(v)) for v in row)
        elif bits == 8:
            raw += bytes(int(v) for v in row)
        else:  # 1, 2, 4: packed from the most significant bit
            per = 8 // bits
            padded = list(row) + [0] * ((-len(row)) % per)
            raw += bytes(sum(int(v) << (8 - bits * (k + 1)) for k, v in
                             enumerate(padded[i:i + per])) for i in range(0, len(padded), per))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bits,
                                                                   color_type, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def check_exact(name, path, tmp, want):
    global cases
    cases += 1
    try:
        got = lumen_read(path, tmp)
    except RuntimeError as e:
        failures.append(f"{name}: lumen failed: {e}")
        return
    if want.ndim == 2:
        want = want[:, :, None]
    if got.shape != want.shape or not np.array_equal(got.astype(np.int64), want.astype(np.int64)):
        failures.append(f"{name}: {got.shape} {got.dtype} differs from {want.shape} {want.dtype}")


def check_pillow_read(name, path, tmp):
    """lumen against Pillow's decoding, in the channel layout lumen reports."""
    got_channels = lumen_read(path, tmp).shape[2]
    with Image.open(path) as img:
        want = np.asarray(img.convert(MODES[got_channels]))
    check_exact(name, path, tmp, want)


def main():
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as tmp:
        h, w = 13, 17
        # Pillow-written 8-bit PNGs in each mode.
        for mode, channels in (("L", 1), ("LA", 2), ("RGB", 3), ("RGBA", 4)):
            a = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
            img = Image.fromarray(a[:, :, 0] if channels == 1 else a, mode)
            path = os.path.join(tmp, f"{mode}.png")
            img.save(path)
            check_exact(f"png {mode}", path, tmp, a)
        # Palette, without and with transparency (expanded to RGB and RGBA).
        p = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).quantize(16)
        for transparency in (None, 3):
            path = os.path.join(tmp, f"palette{transparency}.png")
            if transparency is None:
                p.save(path)
            else:
                p.save(path, transparency=transparency)
            check_pillow_read(f"png palette transparency={transparency}", path, tmp)
        # 1-bit (Pillow mode "1") and 2-, 4-bit grey (written here), scaled to 0..255.
        one = Image.fromarray(rng.integers(0, 2, (h, w), dtype=np.uint8) * 255).convert("1")
        path = os.path.join(tmp, "one.png")
        one.save(path)
        check_pillow_read("png 1-bit", path, tmp)
        for bits in (2, 4):
            a = rng.integers(0, 2 ** bits, (h, w), dtype=np.uint8)
            path = os.path.join(tmp, f"grey{bits}.png")
            png(path, a, bits, 0)
            check_exact(f"png {bits}-bit grey", path, tmp, a * (255 // (2 ** bits - 1)))
            check_pillow_read(f"png {bits}-bit grey (Pillow)", path, tmp)
        # 16 bits: grey (Pillow reads it exactly) and the colour types (against the arrays).
        a = rng.integers(0, 65536, (h, w), dtype=np.uint16)
        path = os.path.join(tmp, "grey16.png")
        png(path, a, 16, 0)
        check_exact("png 16-bit grey", path, tmp, a)
        with Image.open(path) as img:
            check_exact("png 16-bit grey (Pillow)", path, tmp, np.asarray(img).astype(np.int64))
        for color_type, channels in ((4, 2), (2, 3), (6, 4)):
            a = rng.integers(0, 65536, (h, w, channels), dtype=np.uint16)
            path = os.path.join(tmp, f"c{color_type}_16.png")
            png(path, a, 16, color_type)
            check_exact(f"png 16-bit colour type {color_type}", path, tmp, a)
        # BMP and TGA written by Pillow.
        for ext in ("bmp", "tga"):
            for mode, channels in (("L", 1), ("RGB", 3), ("RGBA", 4)):
                if ext == "bmp" and mode == "RGBA":
                    continue
                a = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
                path = os.path.join(tmp, f"{mode}.{ext}")
                Image.fromarray(a[:, :, 0] if channels == 1 else a, mode).save(path)
                check_pillow_read(f"{ext} {mode}", path, tmp)
        # JPEG: baseline and progressive, grey and colour, 4:2:0 and 4:4:4.
        global cases
        yy, xx = np.mgrid[0:64, 0:80]
        smooth = np.stack([(xx * 3) % 256, (yy * 4) % 256, ((xx + yy) * 2) % 256], -1)
        for mode in ("L", "RGB"):
            for options in ({}, {"progressive": True}, {"subsampling": 0}):
                a = smooth.astype(np.uint8)
                img = Image.fromarray(a[:, :, 0] if mode == "L" else a, mode)
                path = os.path.join(tmp, "a.jpg")
                img.save(path, quality=92, **options)
                got = lumen_read(path, tmp)
                with Image.open(path) as decoded:
                    want = np.asarray(decoded.convert(MODES[got.shape[2]]))
                if want.ndim == 2:
                    want = want[:, :, None]
                cases += 1
                error = np.abs(got.astype(np.float64) - want).mean()
                if got.shape != want.shape or error > 1.0:
                    failures.append(f"jpeg {mode} {options}: mean difference {error:.3f} "
                                    f"grey levels (allowed 1)")
        # lumen writes PNG, Pillow reads: 8 bits in 1-4 channels, 16-bit grey exactly, 16-bit
        # colour as Pillow reduces it (the high byte).
        for bits, dtype in ((8, np.uint8), (16, np.int32)):
            for channels in (1, 2, 3, 4):
                top = 255 if bits == 8 else 65535
                a = rng.integers(0, top + 1, (h, w, channels)).astype(dtype)
                source = os.path.join(tmp, "source.npy")
                np.save(source, a if channels > 1 else a[:, :, 0])
                st = os.path.join(tmp, "source.safetensors")
                subprocess.run([LUMEN, "convert", source, st, "--keep-dtype"], check=True,
                               capture_output=True)
                out = os.path.join(tmp, f"lumen{bits}_{channels}.png")
                subprocess.run([LUMEN, "convert", st, out], check=True, capture_output=True)
                cases += 1
                with Image.open(out) as img:
                    back = np.asarray(img).astype(np.int64)
                want = a.astype(np.int64)
                if bits == 16 and channels > 1:
                    want = want >> 8
                    if channels == 2:  # Pillow gives 16-bit grey+alpha as 8-bit RGBA
                        want = want[:, :, [0, 0, 0, 1]]
                if channels == 1:
                    want = want[:, :, 0]
                if back.shape != want.shape or not np.array_equal(back, want):
                    failures.append(f"lumen png {bits}-bit {channels} channels: Pillow reads "
                                    f"{back.shape} different values")
    for failure in failures:
        print("FAIL", failure)
    print(f"pillow conformance: {cases - len(failures)} of {cases} cases match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
