// Demo datasets that need no download, in the real formats of datasets/, so that every task can
// be tried and tested on a laptop (`lumen make-demo NAME --out DIR`). Each is made from a seed
// alone: the same seed writes the same files.
//   shapes2d       PNG images (64 x 64 RGB, textured discs, squares and triangles over
//                  smooth noise) with PNG masks (0 background, 1 disc, 2 square, 3 triangle):
//                  train/images, train/masks, test/images, test/masks (240 + 60 cases).
//   organs3d       CT-like NIfTI volumes (48 x 48 x 32, int32 Hounsfield units, spacing and
//                  orientation varying by case) with label maps (1 liver, 2 kidneys, 3 spleen)
//                  and a Medical Segmentation Decathlon dataset.json: imagesTr, labelsTr,
//                  imagesTs and labelsTs (24 + 6 cases).
//   lesions3d      CT-like NIfTI volumes (28-36 x 28-36 x 20-28, int32 Hounsfield units,
//                  spacing varying by case) with one lesion each, classified by folder as
//                  volume_folder reads them: train/<class>/ and test/<class>/ for calcified,
//                  cyst and solid (300 + 60 cases).
//   fmnist_denoise Fashion-MNIST clean/noisy pairs (Gaussian noise, sigma 0.2 on [0, 1]):
//                  train.npz and test.npz with "image" (noisy) and "target" (clean), (N, 28, 28)
//                  float32 (2000 + 500 images; needs the Fashion-MNIST files).
//   bags           feature bags, one .npy (instances x 32, float32) per slide, where a positive
//                  bag hides 2-5 instances carrying the signal; labels.csv (slide, label,
//                  split) (120 + 40 bags).
//   text           a labelled corpus of four topics (sports, science, food, travel) with
//                  quoting and punctuation: train.csv and test.csv (label, text) (800 + 200).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace lumen::datasets {

// The names above.
std::vector<std::string> demo_names();
// Writes demo `name` into `directory` (created), printing one line of what was written.
// `fashion_mnist_dir` is where fmnist_denoise reads Fashion-MNIST. Throws [make-demo] for an
// unknown name (naming the known ones) and the readers' and writers' errors.
void make_demo(const std::string& name, const std::string& directory, uint64_t seed,
               std::ostream& out, const std::string& fashion_mnist_dir = "");

}  // namespace lumen::datasets
