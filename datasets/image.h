// 2-D images: PNG (1- to 16-bit grey, grey+alpha, RGB, RGBA, palette), JPEG (baseline and
// progressive), BMP and TGA read through stb_image; PNG written by lumen itself (8 or 16 bits
// per sample; stb_image_write has no 16-bit PNG), for masks and predictions.
#pragma once

#include <string>

#include "core/tensor.h"

namespace lumen::datasets {

// Reads an image as (H, W, C), C the file's channels: 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (a
// palette is expanded to RGB, or RGBA when it has transparency; 1-, 2- and 4-bit grey are
// scaled to 0..255 as by libpng). The stored values: uint8 for 8-bit data, int32 (0..65535)
// for 16-bit PNG. `bits` receives 8 or 16. The header's size is checked before decoding (at
// most 2^28 pixels). Throws lumen::Error "[image] <path>: <problem>" (stb_image's reason for a
// corrupt file).
Tensor read_image(const std::string& path, int* bits = nullptr);

// Writes (H, W) or (H, W, C) with C in 1..4 as a PNG (grey, grey+alpha, RGB, RGBA),
// atomically. uint8 is written with 8 bits per sample; int32 and int64 with 16 bits (values
// must lie in 0..65535, or 0..255 when `bits` is 8); `bits` 0 chooses by dtype. Throws [image]
// naming the file for another shape or dtype, a value out of range, or an I/O error.
void write_png(const std::string& path, const Tensor& image, int bits = 0);

}  // namespace lumen::datasets
