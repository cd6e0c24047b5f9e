#pragma once

// The text logs DeepSpeed and Megatron-LM training scripts print (stdout captured to a file).
//
// DeepSpeed ("DeepSpeed log"):
//   "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768"
//   "[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 128.0, reducing to 64.0"
//       -> event skipped_step; event loss_scale_decrease when the scale fell ("but hysteresis is 2"
//          keeps it); series "loss_scale": the scale after the step, and the attempted scale at the
//          step before where no other point says so. Which step: see LossScaleSteps.h.
//   "Increasing dynamic loss scale from 64.0 to 128.0" (fused fp16 optimizer, every rank: read once)
//       -> series "loss_scale"
//   "step=10, skipped=10, lr=[5e-05, 5e-05], mom=[...]" -> series "lr" (first parameter group;
//       "lr[1]", ... only for groups whose rate differs) and "skipped_total" (the running count the
//       line logs as skipped=K; the run format's `skipped` is a per-step flag, which the
//       skipped_step events give)
//   DeepSpeed-Chat: "Epoch: 0, Step: 3, Rank: 0, loss = 2.31" -> series "loss"; "ppl: 2.01",
//       "chosen_last_scores (higher is better) : 2.8, acc (higher is better) : 0.49" after an
//       "Evaluating ..., Epoch E/T" header -> series "ppl", "chosen_last_scores", "acc" at the
//       step that ends epoch E; "Epoch 1/1 with loss 0.575" -> series "epoch_loss"
// Megatron-LM ("Megatron-LM log"):
//   " iteration 100/ 500000 | ... | lm loss: 7.1E+00 | loss scale: 65536.0 | grad norm: 1.2 |
//     number of skipped iterations: 0 | number of nan iterations: 0 |"
//       -> every numeric field as a series by its name ("lm loss", "loss scale", "grad norm", ...);
//          skipped iterations -> skipped_step events, a lower loss scale -> loss_scale_decrease,
//          nan iterations -> nonfinite_loss
//   " validation loss at iteration 1000 | lm loss value: 2.2E+00 | ..." -> "validation lm loss value", ...
// Overflows during the start-up search for a loss scale are normal; they are events like any other,
// and a note says when the run began with such a search. Text time stamps carry no time zone, so
// points have no wallTime.

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

// An Error naming the file when it cannot be read or holds no DeepSpeed or Megatron training line.
Result<ScalarLog> readTrainingTextLog(const std::string& path);

// For format detection: whether the first 64 KiB hold a DeepSpeed or Megatron training line (or
// DeepSpeed's own log prefix) and no NUL byte.
bool looksLikeTrainingTextLog(const std::string& path);

} // namespace nanscope
