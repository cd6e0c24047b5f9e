#pragma once

// The largest finite float16 and bfloat16 numbers: a value whose max |x| passes one of them
// overflows to Inf in that precision. One definition for the replay's headroom and the scan's.

#include "core/NumberText.h"

#include <string>

namespace nanscope {

inline constexpr double kFloat16Max = 65504.0;
// "65504", as every message that quotes the float16 limit writes it.
inline std::string float16MaxText()
{
    return numberText(kFloat16Max, 5);
}
inline constexpr double kBFloat16Max = 3.3895313892515355e38;
// exp(x) overflows to Inf above ln(largest): 11.09 in float16, 88.72 in float32 (and 88.7 in
// bfloat16, whose range is float32's). A softmax or an InfoNCE loss written as exp / sum meets
// these long before its input itself overflows.
inline constexpr double kFloat16ExpLimit = 11.089866488461016; // ln(65504)
inline constexpr double kFloat32ExpLimit = 88.72283905206835;  // ln(3.4028235e38)

// "Near the float16 limit", one judgement for the scan (the activation-growth rule, a blow-up's
// float16 cause) and the replay (an op's headroom, the pane's red mark): a largest |x| within a
// factor of 16 of kFloat16Max (under 4 bits, 1.2 decades, of headroom), or past it. Within that
// factor a square, a sum over a few thousand values or an exp of the value overflows float16.
// (With two thresholds, one decade for the scan and 4 bits for the replay, a value between 4,094
// and 6,550 would be near the limit in a replay and not in the scan.)
inline constexpr double kNearFloat16Bits = 4.0;
inline constexpr double kNearFloat16Decades = kNearFloat16Bits * 0.30102999566398120; // log10(2)
// `headroomBits`: log2(kFloat16Max / max|x|), negative once past it.
inline bool nearFloat16LimitBits(double headroomBits)
{
    return headroomBits < kNearFloat16Bits;
}
// `headroomDecades`: log10(kFloat16Max / max|x|).
inline bool nearFloat16LimitDecades(double headroomDecades)
{
    return headroomDecades < kNearFloat16Decades;
}

} // namespace nanscope
