// `lumen eval` and `lumen predict`: a trained run's model on a split (metrics over the split and
// per case) or on new files (predictions in the inputs' formats).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace lumen::train::cli {

// lumen eval RUN_DIR|CHECKPOINT [--split test|train] [--device cpu|cuda] [--threads N]
// Evaluates the latest checkpoint of a run (or the given checkpoint file) with the config
// stored in it: prints the loss and the task's metrics, and writes beside the run's
// summary.json eval_<split>.json (the metrics, and the confusion matrix of a classifier) and
// eval_<split>.csv (one row per case: its name and metrics).
int run_eval_command(const std::vector<std::string>& args, std::ostream& out);

// lumen predict RUN_DIR|CHECKPOINT INPUT... --out DIR [--device cpu|cuda] [--threads N]
// Runs the model (the run's best checkpoint, else its latest) on each input file, read and
// preprocessed as the run's data layout reads its cases, and writes the prediction in the
// input's format: segmentation -> DIR/<stem>.png (class ids, the image's size) or
// DIR/<stem>.nii.gz (class ids with the volume's affine, in the preprocessed grid when
// data.orientation or data.spacing resample it); enhancement -> DIR/<stem>.png (8-bit) or
// .nii.gz (float32); classification -> DIR/predictions.csv (input, predicted class, one
// probability per class).
int run_predict_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace lumen::train::cli
