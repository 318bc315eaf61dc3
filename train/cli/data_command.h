// `lumen data CONFIG`: reads the data section of a training config as `lumen train` would and
// shows what the model will see: the layout's splits, classes and shapes, and a few examples
// after the transforms, optionally written as PNG or NIfTI files to open in a viewer.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace lumen::train::cli {

// lumen data CONFIG.json [--set key=value ...] [--split train|val|test] [--count N] [--out DIR]
// Examples of the train split get the training transforms (random ones seeded as the loader
// seeds epoch 0); other splits the evaluation ones. With --out, 2-D examples are written as
// <case>_image.png (each image min-max scaled to 0..255) and <case>_label.png, 3-D ones as
// <case>_image.nii.gz and <case>_label.nii.gz with the affine the transforms left (decathlon:
// the case's own affine moved with the patch, so it overlays the original in a viewer).
// Throws lumen::Error for bad arguments, configs or data.
int run_data_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace lumen::train::cli
