#pragma once

// The one judgement of which logged series is a run's training loss when none is named `loss`
// (ScalarNames.h maps the names that are): the scan judges blow-ups on it, and the window and the
// report say which series it is. In order:
// 1. a loss named as the loss under a group ("metrics/loss"), whatever its sign;
// 2. a total: a loss named as one ("total_loss", "loss_total", "Train loss/train/total");
// 3. the one loss there is (a name holding "loss" that is no evaluation's);
// 4. several losses and no total (a GAN's generator and discriminator, a detector's parts): their
//    sum on the steps where all are logged, so that a NaN or an explosion in any one shows;
//    pix2pix and CycleGAN print their losses without the word (G_GAN, D_real, cycle_A, idt_A);
// A loss that goes negative is a signed objective (a policy-gradient loss, an ELBO), not a size:
// it is never summed or taken, and RL runs are judged on their gradient norm instead.

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope {

struct LoggedSeries
{
    std::string name; // the run format's name (canonicalScalarName)
    const std::vector<int64_t>* steps = nullptr;
    const std::vector<double>* values = nullptr;
};

struct TrainingLossChoice
{
    std::vector<std::string> parts; // empty: no training loss; one: that series; several: their sum
    std::string why;                // for the notes: what was chosen and why
};

TrainingLossChoice chooseTrainingLoss(const std::vector<LoggedSeries>& series);

} // namespace nanscope
