// The datasets umbrella: the Dataset interface, the readers (IDX, images, NIfTI, NumPy, CSV and
// text), the layouts, Fashion-MNIST, the image and joint sample transforms, the cache and the
// DataLoader (random_stream.h and layouts_common.h are implementation helpers and stay out).
#pragma once

#include "datasets/cache.h"
#include "datasets/dataset.h"
#include "datasets/fashion_mnist.h"
#include "datasets/idx.h"
#include "datasets/image.h"
#include "datasets/intensity.h"
#include "datasets/layouts.h"
#include "datasets/loader.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/sample.h"
#include "datasets/spatial.h"
#include "datasets/text.h"
#include "datasets/transforms.h"
