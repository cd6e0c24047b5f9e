// The incident report in every format, made by the real binary as a user would.
#include "AppTestSupport.h"
#include "WindowTestSupport.h"
#include "app/window/MainWindow.h"
#include "../core/SyntheticRuns.h"
#include "core/run/RunWriter.h"

#include <QDir>
#include <QElapsedTimer>
#include <QProgressBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QToolButton>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace nanscope::test;

namespace {
QString readAll(const QString& path)
{
    QFile file(path);
    file.open(QIODevice::ReadOnly);
    return QString::fromUtf8(file.readAll());
}
} // namespace

TEST(IncidentReport, JsonHoldsTheCriticalIncidentWithItsReplay)
{
    QTemporaryDir dir;
    const QString path = dir.filePath("report.json");
    const auto result = runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", path});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QJsonObject root = QJsonDocument::fromJson(readAll(path).toUtf8()).object();
    EXPECT_EQ(root["run"].toObject()["name"].toString(), "batchnorm-poisoned");
    EXPECT_FALSE(root["incidents"].toArray().isEmpty());
    EXPECT_TRUE(root["environment"].toObject().contains("nanscope"));
    EXPECT_EQ(root["environment"].toObject()["attributes"].toObject()["loss_name"].toString(), "cross_entropy");
    // The critical incident carries the replay of its saved step: the first bad op and the sample.
    const QJsonArray critical = root["critical"].toArray();
    ASSERT_FALSE(critical.isEmpty());
    const QJsonObject first = critical.first().toObject();
    EXPECT_EQ(first["kind"].toString(), "bn_corruption");
    const QJsonObject replay = first["replay"].toObject();
    ASSERT_FALSE(replay.isEmpty()) << "the saved step 200 was not replayed";
    EXPECT_EQ(replay["step"].toInteger(), 200);
    EXPECT_FALSE(replay.contains("error")) << replay["error"].toString().toStdString();
    const QJsonObject culprit = replay["first_nonfinite"].toObject();
    EXPECT_EQ(culprit["module"].toString(), "fc1");
    EXPECT_TRUE(culprit["op"].toString().startsWith("aten::")) << culprit["op"].toString().toStdString();
    EXPECT_FALSE(culprit["source"].toString().isEmpty());
    EXPECT_EQ(replay["bad_samples"].toArray(), QJsonArray{2}) << "the poisoned sample of the batch";
    // The first critical incident is triaged: its NaN input blows up on the earlier checkpoint too.
    const QJsonObject triage = first["triage"].toObject();
    EXPECT_EQ(triage["step"].toInteger(), 200);
    EXPECT_EQ(triage["label"].toString(), "data") << triage["why"].toString().toStdString();
    const QJsonArray bn = root["batchnorm"].toArray();
    ASSERT_FALSE(bn.isEmpty());
    EXPECT_EQ(bn.first().toObject()["nonfinite_from"].toInteger(), 200);
}

TEST(IncidentReport, MarkdownNamesPatternLayerReplayCauseAndFix)
{
    QTemporaryDir dir;
    const QString path = dir.filePath("report.md");
    ASSERT_EQ(runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", path}).exitCode, 0);
    const QString md = readAll(path);
    EXPECT_TRUE(md.startsWith("# Incident report: batchnorm-poisoned"));
    EXPECT_TRUE(md.contains("bn_corruption")) << md.toStdString();
    EXPECT_TRUE(md.contains("running statistics non-finite from step 200"));
    EXPECT_TRUE(md.contains("Replay of step 200")) << "the saved step was replayed";
    EXPECT_TRUE(md.contains("Bad samples (a non-finite value, a loss over 10x the run's typical")) << md.toStdString();
    EXPECT_TRUE(md.contains("): 2.")) << "sample 2 holds the NaN";
    EXPECT_TRUE(md.contains("**Suggested fix:**"));
    EXPECT_TRUE(md.contains("## Environment"));
}

// Issue 51, item 10: the BatchNorm list was repeated in every incident, the kind column wrapped
// mid-word in the PDF, and the BatchNorm section plotted the gradient norm, which looks healthy.
// A run whose one finding is a warning (its loss climbed x5 from its best and stayed there, no
// NaN): the report lists it with its cause and fix, not a table row alone.
TEST(IncidentReport, AWarningIsListedWithItsCauseAndFix)
{
    QTemporaryDir dir;
    const std::string run = dir.filePath("diverged").toStdString();
    {
        nanscope::RunSchema schema;
        schema.scalars = {"loss", "grad_norm"};
        auto writer = nanscope::RunWriter::create(run, schema);
        ASSERT_TRUE(writer) << writer.error();
        std::mt19937 rng(3);
        std::normal_distribution<double> noise(0.0, 1.0);
        for (int64_t step = 0; step < 500; ++step) {
            const double climbed = step < 250 ? 0.0 : 0.7 * std::min(1.0, double(step - 250) / 150.0);
            const double loss = (2.0 * std::exp(-double(step) / 60.0) + 0.1) * std::pow(10.0, climbed + 0.05 * noise(rng));
            ASSERT_TRUE((*writer)->appendScalars(step, {{"loss", loss}, {"grad_norm", std::pow(10.0, 0.1 * noise(rng))}}));
        }
    }
    for (const char* format : {"report.md", "report.html"}) {
        const QString path = dir.filePath(format);
        const auto made = runNanscope({"report", QString::fromStdString(run), "-o", path, "--no-replay"});
        ASSERT_EQ(made.exitCode, 0) << made.err.toStdString();
        const QString text = readAll(path);
        EXPECT_TRUE(text.contains("0 critical")) << text.toStdString();
        EXPECT_TRUE(text.contains("Warnings")) << text.toStdString();
        EXPECT_TRUE(text.contains("diverged without NaN")) << text.toStdString();
        EXPECT_TRUE(text.contains("Resume from a checkpoint before step")) << text.toStdString();
    }
}

TEST(IncidentReport, TheBatchNormStateIsSaidOnceAndItsIncidentPlotsTheBuffers)
{
    QTemporaryDir dir;
    const QString md = dir.filePath("report.md"), html = dir.filePath("report.html");
    ASSERT_EQ(runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", md, "--no-replay"}).exitCode, 0);
    ASSERT_EQ(runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", html, "--no-replay"}).exitCode, 0);
    const QString markdown = readAll(md);
    EXPECT_EQ(markdown.count("## BatchNorm state"), 1) << markdown.toStdString();
    EXPECT_EQ(markdown.count("bn1: running statistics non-finite from step 200"), 1) << markdown.toStdString();
    EXPECT_FALSE(markdown.contains("**BatchNorm:**")) << "not in every incident's section";
    const QString page = readAll(html);
    EXPECT_TRUE(page.contains("<td nowrap style='white-space:nowrap'>bn_corruption</td>")) << "a kind never wraps";
    EXPECT_TRUE(page.contains("bn_corruption at step 200: bn1 nonfinite")) << "its plot is bn1's buffers";
}

// Issue 51, item 10: exporting replayed again the step the user had just replayed. The window hands
// its replay over (--replayed); the report uses it for that step.
TEST(IncidentReport, AStepAlreadyReplayedIsNotReplayedAgain)
{
    QTemporaryDir dir;
    const auto replay = runNanscope({"replay", demoRun("batchnorm-poisoned"), "--step", "200", "--json"});
    ASSERT_EQ(replay.exitCode, 0) << replay.err.toStdString();
    QJsonObject root = QJsonDocument::fromJson(replay.out.toUtf8()).object();
    ASSERT_FALSE(root.isEmpty());
    // Marked, so that the report shows which replay it used: its precision reads "pane-float32".
    ASSERT_EQ(root["dtype"].toString(), "float32");
    root["dtype"] = "pane-float32";
    const QString known = dir.filePath("known.json");
    QFile file(known);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(root).toJson());
    file.close();
    const QString path = dir.filePath("report.md");
    const auto written = runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", path, "--replayed", known});
    ASSERT_EQ(written.exitCode, 0) << written.err.toStdString();
    EXPECT_TRUE(readAll(path).contains("Replay of step 200 (train, pane-float32)")) << readAll(path).toStdString();

    const auto bad = runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", path, "--replayed", dir.filePath("none.json")});
    EXPECT_NE(bad.exitCode, 0);
    EXPECT_TRUE(bad.err.contains("none.json")) << bad.err.toStdString();
}

TEST(IncidentReport, HtmlIsSelfContainedWithEmbeddedPlots)
{
    QTemporaryDir dir;
    const QString path = dir.filePath("report.html");
    ASSERT_EQ(runNanscope({"report", demoRun("gradual-blowup"), "-o", path}).exitCode, 0);
    const QString html = readAll(path);
    EXPECT_TRUE(html.contains("<img src='data:image/png;base64,")) << "plots are embedded";
    EXPECT_FALSE(html.contains("src='http")) << "nothing is fetched";
    EXPECT_TRUE(html.contains("gradual"));
    EXPECT_GE(html.count("data:image/png"), 2) << "a timeline and a plot per critical incident";
}

TEST(IncidentReport, PdfPagesRenderWithContent)
{
    const QString pdftoppm = QStandardPaths::findExecutable("pdftoppm");
    if (pdftoppm.isEmpty())
        GTEST_SKIP() << "pdftoppm (poppler-utils) is not installed";
    QTemporaryDir dir;
    const QString path = dir.filePath("report.pdf");
    ASSERT_EQ(runNanscope({"report", demoRun("sudden-blowup"), "-o", path}).exitCode, 0);
    QFile pdf(path);
    ASSERT_TRUE(pdf.open(QIODevice::ReadOnly));
    EXPECT_TRUE(pdf.read(5).startsWith("%PDF-"));
    QProcess render;
    render.start(pdftoppm, {"-r", "40", "-png", path, dir.filePath("page")});
    ASSERT_TRUE(render.waitForFinished(60000));
    const QStringList pages = QDir(dir.path()).entryList({"page*.png"});
    ASSERT_GE(pages.size(), 1);
    QImage first(dir.filePath(pages.first()));
    ASSERT_FALSE(first.isNull());
    int dark = 0;
    for (int y = 0; y < first.height(); y += 2)
        for (int x = 0; x < first.width(); x += 2)
            dark += qGray(first.pixel(x, y)) < 128;
    EXPECT_GT(dark, 200) << "text and plots on the first page, not a blank page";
}

TEST(IncidentReport, UnknownExtensionAndBrokenRunAreClearErrors)
{
    QTemporaryDir dir;
    const auto badExtension = runNanscope({"report", demoRun("healthy"), "-o", dir.filePath("report.docx")});
    EXPECT_EQ(badExtension.exitCode, 2);
    EXPECT_TRUE(badExtension.err.contains(".html, .pdf, .md or .json"));
    const auto brokenRun = runNanscope({"report", dir.path(), "-o", dir.filePath("report.md")});
    EXPECT_EQ(brokenRun.exitCode, 2);
    EXPECT_TRUE(brokenRun.err.contains("run.h5"));
    EXPECT_FALSE(QFile::exists(dir.filePath("report.md"))) << "no half-written report is left behind";
}

// Issue 27: the window lists three layers and "+N"; the report's timeline named the first four
// and dropped the rest without a word.
TEST(IncidentReport, TheTimelineCountsTheLayersItDoesNotName)
{
    QTemporaryDir dir;
    const QString run = dir.filePath("run");
    nanscope::test::SyntheticRun shape;
    shape.layers = {"l0.weight", "l1.weight", "l2.weight", "l3.weight", "l4.weight", "l5.weight", "l6.weight"};
    shape.shape = [](nanscope::test::SyntheticRow& row) {
        if (row.step >= 200) // every layer blows up, each to its own height, and training never recovers
            for (size_t k = 0; k < row.grads.size(); ++k)
                row.grads[k] *= float(std::pow(10.0, 3.0 + 0.5 * double(k)));
        if (row.step >= 200)
            row.scalars["loss"] = 50.0;
    };
    nanscope::test::writeSyntheticRun(run.toStdString(), shape);
    const QString path = dir.filePath("report.md");
    const auto result = runNanscope({"report", run, "-o", path});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QString md = readAll(path);
    const QString timeline = md.mid(md.indexOf("## Timeline"));
    EXPECT_TRUE(timeline.contains(QRegularExpression("\\+\\d+ more"))) << timeline.left(1500).toStdString();
    EXPECT_TRUE(timeline.contains(QRegularExpression("`l\\d\\.weight`"))) << "the first layers are still named";
}

// Issue 27: exporting a report (seconds: every critical incident is replayed and triaged) showed
// only a busy bar, with no progress and no way to stop it.
TEST(IncidentReport, ExportFromTheWindowShowsProgressAndCanBeCancelled)
{
    nanscope::MainWindow window;
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(openAndWait(window, demoRun("sudden-blowup")));
    QTemporaryDir dir;
    const QString path = dir.filePath("report.html");
    auto* bar = window.statusBar()->findChild<QProgressBar*>();
    ASSERT_NE(bar, nullptr);
    QToolButton* cancel = nullptr;
    for (auto* button : window.statusBar()->findChildren<QToolButton*>())
        if (button->text() == "Cancel")
            cancel = button;
    ASSERT_NE(cancel, nullptr);

    QSignalSpy exported(&window, &nanscope::MainWindow::reportExported);
    window.exportReportTo(path);
    EXPECT_TRUE(cancel->isVisible()) << "a Cancel beside the progress";
    QElapsedTimer clock;
    clock.start();
    while (bar->value() <= 0 && exported.isEmpty() && clock.elapsed() < 60000)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    ASSERT_TRUE(exported.isEmpty()) << "the report finished before any progress was shown";
    EXPECT_GT(bar->maximum(), 0) << "a measured bar, not a busy one";
    EXPECT_GT(bar->value(), 0);
    EXPECT_TRUE(bar->isVisible());
    cancel->click();
    ASSERT_EQ(exported.count(), 1);
    EXPECT_FALSE(exported.first().first().toBool());
    EXPECT_FALSE(bar->isVisible());
    EXPECT_FALSE(cancel->isVisible());
    EXPECT_TRUE(window.statusBar()->currentMessage().contains("cancelled")) << window.statusBar()->currentMessage().toStdString();
    EXPECT_FALSE(QFile::exists(path)) << "a cancelled report leaves no file";

    // Exported again to the end, it is written.
    window.exportReportTo(path);
    ASSERT_TRUE(exported.wait(120000));
    EXPECT_TRUE(exported.last().first().toBool()) << window.statusBar()->currentMessage().toStdString();
    EXPECT_TRUE(QFile::exists(path));
}

// Issue 28, judgement 1: the report judged BatchNorm buffers with the compiled-in floor whatever the
// scan's settings said. `report --config FILE` now reaches the scan and that judgement alike.
TEST(IncidentReport, TheBatchNormJudgementTakesTheFloorOfTheScanSettings)
{
    QTemporaryDir dir;
    auto batchNormOf = [&](const QStringList& extra) {
        const QString path = dir.filePath("report.json");
        const auto result = runNanscope(QStringList{"report", demoRun("batchnorm-poisoned"), "-o", path, "--no-replay"} + extra);
        EXPECT_EQ(result.exitCode, 0) << result.err.toStdString();
        const QJsonArray layers = QJsonDocument::fromJson(readAll(path).toUtf8()).object()["batchnorm"].toArray();
        return layers.isEmpty() ? QJsonObject() : layers.first().toObject();
    };
    const QJsonObject byDefault = batchNormOf({});
    ASSERT_FALSE(byDefault.isEmpty());
    EXPECT_TRUE(byDefault["collapsed_at"].isNull()) << "a healthy running variance read as collapsed";

    // No running variance of the demo reaches 1e6: with that floor every one has collapsed.
    const QString settings = dir.filePath("scan.ini");
    QFile file(settings);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("[scan]\nrunning_var_floor = 1e6\n");
    file.close();
    const QJsonObject withFloor = batchNormOf({"--config", settings});
    ASSERT_TRUE(withFloor["collapsed_at"].isDouble()) << "the report ignored the configured running_var_floor";
    EXPECT_LT(withFloor["collapsed_at"].toInteger(), 200);

    const auto missing = runNanscope({"report", demoRun("batchnorm-poisoned"), "-o", dir.filePath("r.json"), "--config",
                                      dir.filePath("absent.ini")});
    EXPECT_NE(missing.exitCode, 0);
    EXPECT_TRUE(missing.err.contains("absent.ini")) << "the error does not name the settings file: "
                                                    << missing.err.toStdString();
}

// Issue 50: the report plotted a precursor incident on the gradient norm, under a band labelled
// with the precursor's name. A learned temperature's logits climb from 1 to 10.8 from step 300
// until exp() overflows float16 at 1400, the gradient norm flat: the incident's plot is the logits'
// output range, where the climb is.
TEST(IncidentReport, APrecursorIncidentPlotsTheQuantityThatClimbed)
{
    QTemporaryDir dir;
    const std::string run = dir.filePath("temperature").toStdString();
    {
        nanscope::RunSchema schema;
        schema.scalars = {"loss", "grad_norm"};
        schema.activations = {"encoder", "logits"};
        schema.activationKinds = {"Linear", "Linear"};
        auto writer = nanscope::RunWriter::create(run, schema);
        ASSERT_TRUE(writer) << writer.error();
        std::mt19937 rng(3);
        std::normal_distribution<double> noise(0.0, 1.0);
        for (int64_t step = 0; step < 1450; ++step) {
            const bool nan = step >= 1400;
            const double wobble = std::pow(10.0, 0.004 * noise(rng));
            const double logits = step < 300 ? 1.0 : 1.0 + 9.8 * double(step - 300) / 1099.0;
            ASSERT_TRUE((*writer)->appendScalars(
                step, {{"loss", nan ? NAN : 0.3 * std::pow(10.0, 0.03 * noise(rng))},
                       {"grad_norm", nan ? NAN : std::pow(10.0, 0.08 * noise(rng))}}));
            const float high = nan ? NAN : float(logits * wobble);
            ASSERT_TRUE((*writer)->appendRow("activations", step,
                                             {{"min", {-2.f, nan ? NAN : -high}},
                                              {"max", {2.f, high}},
                                              {"mean", {0.f, nan ? NAN : 0.f}},
                                              {"std", {1.f, nan ? NAN : 1.f}},
                                              {"nan", {0.f, nan ? 64.f : 0.f}},
                                              {"inf", {0.f, 0.f}}}));
        }
    }
    const QString html = dir.filePath("report.html");
    const auto made = runNanscope({"report", QString::fromStdString(run), "-o", html, "--no-replay"});
    ASSERT_EQ(made.exitCode, 0) << made.err.toStdString();
    const QString page = readAll(html);
    EXPECT_TRUE(page.contains("blowup at step")) << page.toStdString();
    EXPECT_TRUE(page.contains(QRegularExpression("blowup at step \\d+: logits output, largest \\|x\\|")))
        << "the incident's plot is the logits' range";
    EXPECT_FALSE(page.contains(QRegularExpression("blowup at step \\d+: gradient norm")));
}
