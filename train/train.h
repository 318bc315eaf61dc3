// The training API in one header: optimizers and their parameter groups, learning-rate
// schedules (stateless, and the stateful LRScheduler), losses, metrics, checkpoints, the
// trainer with its tasks, sliding-window inference and pretrained-weight loading.
#pragma once

#include "train/checkpoint.h"
#include "train/grad_utils.h"
#include "train/inference.h"
#include "train/loss.h"
#include "train/loss_enhance.h"
#include "train/loss_seg.h"
#include "train/metrics.h"
#include "train/metrics_class.h"
#include "train/metrics_image.h"
#include "train/metrics_seg.h"
#include "train/optim.h"
#include "train/param_groups.h"
#include "train/pretrained.h"
#include "train/schedule.h"
#include "train/schedule_basic.h"
#include "train/scheduler.h"
#include "train/task.h"
#include "train/trainer.h"
