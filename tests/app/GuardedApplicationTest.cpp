#include "app/window/GuardedApplication.h"

#include <QCoreApplication>
#include <QEvent>

#include <gtest/gtest.h>

#include <stdexcept>

using namespace nanscope;

namespace {
// A view whose event handler throws, as one did on a run with absurd declared sizes.
class ThrowingObject : public QObject
{
public:
    bool event(QEvent* e) override
    {
        if (e->type() == QEvent::User)
            throw std::length_error("vector::_M_default_append");
        return QObject::event(e);
    }
};
} // namespace

TEST(GuardedApplication, AnExceptionFromAnEventHandlerIsReportedNotFatal)
{
    auto* app = dynamic_cast<GuardedApplication*>(QCoreApplication::instance());
    ASSERT_NE(app, nullptr) << "the tests run under the window's application object";
    QString reported;
    app->setErrorHandler([&](const QString& what) { reported = what; });
    ThrowingObject object;
    QEvent event(QEvent::User);
    EXPECT_FALSE(QCoreApplication::sendEvent(&object, &event));
    EXPECT_TRUE(reported.contains("vector::_M_default_append")) << reported.toStdString();
    app->setErrorHandler({});
}
