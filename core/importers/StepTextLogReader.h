#pragma once

// The training logs people print: one line per step with `name value` pairs, as nanoGPT-style
// scripts write them to stdout, whatever their order and separators. Shapes seen in real logs
// (tests/source/StepTextLogReaderTest.cpp cites each):
//
//   step     0 | loss: 10.955598 | lr 1.3986e-07 | norm: 59.6796 | dt: 27239.95ms | tok/sec: 19247.02
//   step   61/74 | loss 3.208939 (+nanz)| norm 1.4800 (+nanz)| lr 3.00e-04 | 44.57 ms | 91886 tok/s
//   step:1/5100 train_loss:16.0026 train_time:42703ms step_avg:nanms
//   iter 100: loss 2.4049, time 929.71ms, mfu 16.59%
//   2023-03-22 09:30:39 iter 2920: loss 3.9883, time 1099.34ms, mfu 15.34%
//   step 2000: train loss 1.2340, val loss 1.4560
//
// A line is a step line when, after an optional prefix (a quote mark, a time stamp, bracketed
// tags such as "[rank0]:"), it starts with `step`, `iter` or `iteration` and a number (`N` or
// `N/M`), and holds at least one `name value` pair. A name is one to three words; its value is a
// number, `nan` or `inf` (any sign), with an optional unit (ms, s, %). Not values: a number with
// no name before it ("44.57 ms"), anything in parentheses ("(+nanz)"), a NaN or Inf glued to a
// unit ("nanms": a placeholder, not a measured NaN). `|` and `,` end a name. Everything else
// (the training script's own source printed at the top, banners, config dumps, tracebacks) is
// not a step line and is skipped. The line's names are kept as logged and mapped to the run
// format by canonicalScalarName (loss, grad_norm, lr, ...). On an evaluation line (one with a
// `val...` name), "train loss" is the evaluation's estimate and is kept apart as
// `train_loss_eval`, so that it does not join the per-step loss.
//
// A gradient norm that is Inf or NaN on a step whose loss is finite is what an fp16 loss scaler
// skips: a skipped_step event. The read streams the file line by line with bounded memory per
// line; a binary file is refused.

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

// An Error naming the file when it cannot be read or holds no step line.
Result<ScalarLog> readStepTextLog(const std::string& path);

// For format detection: whether the first 1 MiB holds at least three step lines and no NUL byte.
bool looksLikeStepTextLog(const std::string& path);

} // namespace nanscope
