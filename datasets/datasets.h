// The datasets umbrella: the Dataset interface, the IDX reader, Fashion-MNIST, transforms and
// the DataLoader (random_stream.h is an implementation helper and stays out).
#pragma once

#include "datasets/dataset.h"
#include "datasets/fashion_mnist.h"
#include "datasets/idx.h"
#include "datasets/loader.h"
#include "datasets/transforms.h"
