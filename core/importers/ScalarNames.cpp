#include "core/importers/ScalarNames.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace nanscope {

namespace {

// Logged name (lower case) -> run-format name. Epoch-level averages (`train_loss_epoch`) are not
// listed: they are one value per epoch, not the per-step loss, and keep their own name.
const std::map<std::string, std::string>& knownNames()
{
    static const std::map<std::string, std::string> names = {
        {"loss", "loss"},
        {"train_loss", "loss"},
        {"train/loss", "loss"},
        {"training_loss", "loss"},
        {"train_loss_step", "loss"},
        {"loss_step", "loss"},
        {"lm loss", "loss"},
        {"train loss", "loss"},
        {"norm", "grad_norm"},
        {"gnorm", "grad_norm"},
        {"val loss", "eval_loss"},
        {"lm_loss", "loss"},
        {"grad_norm", "grad_norm"},
        {"train/grad_norm", "grad_norm"},
        {"gradient_norm", "grad_norm"},
        {"grad norm", "grad_norm"},
        {"total_norm", "grad_norm"},
        {"grad_norm_step", "grad_norm"},
        {"learning_rate", "lr"},
        {"lr", "lr"},
        {"train/learning_rate", "lr"},
        {"learning rate", "lr"},
        {"lr-adam", "lr"},
        {"lr-adamw", "lr"},
        {"lr-sgd", "lr"},
        {"eval_loss", "eval_loss"},
        {"eval/loss", "eval_loss"},
        {"val_loss", "eval_loss"},
        {"val/loss", "eval_loss"},
        {"valid_loss", "eval_loss"},
        {"validation_loss", "eval_loss"},
        {"loss_scale", "loss_scale"},
        {"loss scale", "loss_scale"},
        {"scaler/scale", "loss_scale"},
        {"epoch", "epoch"},
        {"train/epoch", "epoch"},
        {"skipped", "skipped"},
    };
    return names;
}

} // namespace

std::string lowered(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

std::string canonicalScalarName(const std::string& logged)
{
    const std::string name = lowered(logged);
    auto it = knownNames().find(name);
    if (it != knownNames().end())
        return it->second;
    // A gradient norm or learning rate under a group ("actor/grad_norm", "optim/lr"): the group's
    // name does not change what it is, unless it is an evaluation's.
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos && name.rfind("eval", 0) != 0 && name.rfind("val", 0) != 0 &&
        name.rfind("test", 0) != 0) {
        const std::string last = name.substr(slash + 1);
        if (last == "grad_norm" || last == "gnorm" || last == "gradient_norm")
            return "grad_norm";
        if (last == "lr" || last == "learning_rate")
            return "lr";
    }
    std::string safe = logged;
    for (char& c : safe) {
        if (c == '/')
            c = '.';
        else if (c == ' ')
            c = '_';
    }
    return safe.empty() ? "unnamed" : safe;
}

bool isKnownScalarName(const std::string& canonical)
{
    for (const auto& [logged, name] : knownNames())
        if (name == canonical)
            return true;
    return false;
}

} // namespace nanscope
