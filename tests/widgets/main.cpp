#include <QApplication>
#include "../TestHome.h"

#include <gtest/gtest.h>

int main(int argc, char** argv)
{
    nanscope::test::useSuiteHome();
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
