#include "core/importers/TrainingLoss.h"

#include "core/importers/ScalarNames.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace nanscope {

namespace {

bool startsWith(const std::string& text, const char* prefix)
{
    return text.rfind(prefix, 0) == 0;
}

bool isEvaluation(const std::string& name)
{
    for (const char* prefix : {"eval", "val", "test", "valid"})
        if (startsWith(name, prefix))
            return true;
    return name.find(".val") != std::string::npos || name.find("_val") != std::string::npos ||
           name.find("val_") != std::string::npos || name.find("validation") != std::string::npos;
}

// pix2pix and CycleGAN (junyanz's code) print G_GAN, G_L1, D_real, D_fake, cycle_A, idt_B.
bool isGanPart(const std::string& original)
{
    if (original.size() > 2 && (startsWith(original, "G_") || startsWith(original, "D_")))
        return true;
    return startsWith(original, "cycle_") || startsWith(original, "idt_") || original == "errG" ||
           original == "errD" || original == "loss_G" || original == "loss_D";
}

bool signedSeries(const LoggedSeries& s)
{
    return std::any_of(s.values->begin(), s.values->end(), [](double v) { return v < 0; });
}

} // namespace

TrainingLossChoice chooseTrainingLoss(const std::vector<LoggedSeries>& series)
{
    std::vector<const LoggedSeries*> totals, losses;
    for (const LoggedSeries& s : series) {
        const std::string name = lowered(s.name);
        // The run format's own names (loss_scale, eval_loss) mean what they say; a loss logged once
        // or twice is a summary (the Trainer's closing "train/train_loss"), not a series.
        if (name == "loss_scale" || name == "eval_loss" || name.find("scale") != std::string::npos ||
            name.find("epoch") != std::string::npos || isEvaluation(name) || s.steps->size() < 3)
            continue;
        const bool lossNamed = name.find("loss") != std::string::npos;
        if (!lossNamed && !isGanPart(s.name))
            continue;
        if (signedSeries(s))
            continue;
        if (lossNamed && (name.find("total") != std::string::npos || name.find("sum") != std::string::npos ||
                          name.find("overall") != std::string::npos))
            totals.push_back(&s);
        else
            losses.push_back(&s);
    }
    // A loss named as the loss under a group ("metrics/loss", "train/loss" is mapped already) is
    // the loss, whatever its sign (a negative log-likelihood can be below zero).
    std::vector<const LoggedSeries*> named;
    for (const LoggedSeries& s : series) {
        const std::string name = lowered(s.name);
        const size_t dot = name.rfind('.');
        if (dot != std::string::npos && name.substr(dot + 1) == "loss" && !isEvaluation(name) &&
            s.steps->size() >= 3)
            named.push_back(&s);
    }
    auto longest = [](const std::vector<const LoggedSeries*>& among) {
        return *std::max_element(among.begin(), among.end(), [](const LoggedSeries* a, const LoggedSeries* b) {
            return a->steps->size() < b->steps->size();
        });
    };
    TrainingLossChoice choice;
    if (!named.empty()) {
        const LoggedSeries* loss = longest(named);
        choice.parts = {loss->name};
        choice.why = "no series named loss: \"" + loss->name + "\" is taken as the training loss";
        return choice;
    }
    if (!totals.empty()) {
        const LoggedSeries* total = longest(totals);
        choice.parts = {total->name};
        choice.why = "no series named loss: the total \"" + total->name + "\" is taken as the training loss";
        return choice;
    }
    if (losses.size() == 1) {
        choice.parts = {losses.front()->name};
        choice.why = "no series named loss: \"" + losses.front()->name + "\" is taken as the training loss";
        return choice;
    }
    if (losses.empty())
        return choice;
    // Several losses: the ones logged on the most common steps are summed.
    const LoggedSeries* anchor = longest(losses);
    std::string names;
    for (const LoggedSeries* s : losses) {
        if (*s->steps != *anchor->steps)
            continue;
        choice.parts.push_back(s->name);
        names += (names.empty() ? "" : ", ") + s->name;
    }
    if (choice.parts.size() == 1) {
        choice.why = "no series named loss: \"" + anchor->name + "\" is taken as the training loss";
        return choice;
    }
    choice.why = "no series named loss and no total: the training loss judged is the sum of " + names +
                 " (each is also kept; a NaN or an explosion in any one shows in the sum)";
    return choice;
}

} // namespace nanscope
