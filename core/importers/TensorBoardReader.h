#pragma once

// TensorBoard event files (events.out.tfevents.*), as written by TensorFlow, torch.utils.tensorboard,
// tensorboardX, the Hugging Face Trainer and PyTorch Lightning.
//
// What becomes what:
//   scalars     simple_value, and TF2 scalar tensors (plugin "scalars", or a one-element float,
//               double, half or bfloat16 tensor) -> series[tag], with the event's wall_time
//   histograms  HistogramProto (histo) -> histograms[tag] as min, max, count, sum, sum of squares;
//               TF2 histogram tensors (plugin "histograms", [k, 3] rows of left edge, right edge,
//               count) -> min = left edge of the first non-empty bucket, max = right edge of the
//               last, count = sum of counts; their sums are estimated from bucket centres (notes say so)
//   the rest    images, audio, text, hparams, graphs, run metadata, session logs, the file_version
//               record: counted in notes ("12 image summaries skipped")
// Damage (a bad CRC, a cut-off file, a record that is no Event) is in warnings, naming the file,
// the record and its byte offset; everything readable around it is kept.

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

// An Error when the file cannot be read or holds no readable record at all.
Result<ScalarLog> readTensorBoardEvents(const std::string& path);

// For format detection: the file name contains "tfevents" and the first record's length CRC checks.
bool isTensorBoardEventFile(const std::string& path);

} // namespace nanscope
