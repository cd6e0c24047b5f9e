#include "app/window/GuardedApplication.h"
#include "../TestHome.h"

#include <gtest/gtest.h>

int main(int argc, char** argv)
{
    nanscope::test::useSuiteHome();
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
    // Child processes (replay, stats, report) run the real nanscope, not this test binary.
    qputenv("NANSCOPE_PROGRAM", NANSCOPE_BINARY);
    // The application object the window runs under, so that its guard is tested as it runs.
    nanscope::GuardedApplication app(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
