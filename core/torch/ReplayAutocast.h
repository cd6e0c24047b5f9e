#pragma once

// Internal to core/torch (includes LibTorch): the replay's forward under the autocast the run
// trained in (run.h5's amp_dtype: float16 or bfloat16), as torch.autocast runs it: the ops on its
// list in the lower precision, the rest in float32. A float16 run whose exp() overflowed under
// autocast overflows in its replay too; --dtype float32 is the what-if without it.

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <optional>

namespace nanscope::replaytorch {

class ReplayAutocast
{
public:
    // No autocast when `dtype` is empty.
    ReplayAutocast(c10::DeviceType device, std::optional<c10::ScalarType> dtype)
        : m_device(device), m_active(dtype.has_value())
    {
        if (!m_active)
            return;
        m_wasEnabled = at::autocast::is_autocast_enabled(device);
        m_previousDtype = at::autocast::get_autocast_dtype(device);
        at::autocast::set_autocast_enabled(device, true);
        at::autocast::set_autocast_dtype(device, *dtype);
        at::autocast::increment_nesting();
    }
    ~ReplayAutocast()
    {
        if (!m_active)
            return;
        if (at::autocast::decrement_nesting() == 0)
            at::autocast::clear_cache();
        at::autocast::set_autocast_enabled(m_device, m_wasEnabled);
        at::autocast::set_autocast_dtype(m_device, m_previousDtype);
    }
    ReplayAutocast(const ReplayAutocast&) = delete;
    ReplayAutocast& operator=(const ReplayAutocast&) = delete;

private:
    c10::DeviceType m_device;
    bool m_active = false;
    bool m_wasEnabled = false;
    c10::ScalarType m_previousDtype = c10::ScalarType::Float;
};

// The autocast dtype of a run's amp_dtype ("float16", "bfloat16"); empty for "none", "" or another.
inline std::optional<c10::ScalarType> autocastDtypeNamed(const std::string& ampDtype)
{
    if (ampDtype == "float16")
        return c10::ScalarType::Half;
    if (ampDtype == "bfloat16")
        return c10::ScalarType::BFloat16;
    return std::nullopt;
}

} // namespace nanscope::replaytorch
