#include "ReplayView.h"

#include "ReplayOpModel.h"
#include "RunContext.h"

#include "core/NumberText.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace {
QString rangeText(const std::optional<TensorStats>& v)
{
    QString text = QString::fromStdString(finiteRangeText(v));
    if (hasNonfinite(v))
        text += QString("  <span style='color:#c00'>%1</span>").arg(QString::fromStdString(nonfiniteCountsText(v)));
    return text;
}
} // namespace

ReplayView::ReplayView(QWidget* parent)
    : QWidget(parent)
    , m_step(new QComboBox(this))
    , m_dtype(new QComboBox(this))
    , m_eval(new QCheckBox(tr("eval mode"), this))
    , m_bisect(new QCheckBox(tr("find bad samples"), this))
    , m_layer(new QLineEdit(this))
    , m_run(new QPushButton(tr("Replay"), this))
    , m_triageButton(new QPushButton(tr("Triage"), this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
    , m_busy(new QProgressBar(this))
    , m_warning(new QLabel(this))
    , m_summary(new QLabel(this))
    , m_triageText(new QLabel(this))
    , m_table(new QTableView(this))
    , m_model(new ReplayOpModel(this))
{
    auto* layout = new QVBoxLayout(this);
    auto* controls = new QHBoxLayout();
    controls->addWidget(new QLabel(tr("Step:"), this));
    controls->addWidget(m_step);
    controls->addWidget(new QLabel(tr("Precision:"), this));
    // First, the precision the run trained in: an exported program's own dtypes and the run's
    // autocast (amp_dtype); then the what-ifs, each without autocast.
    m_dtype->addItem(tr("as trained"), QString());
    for (const char* dtype : {"float32", "float64", "bfloat16", "float16"})
        m_dtype->addItem(dtype, QString(dtype));
    m_dtype->setToolTip(tr("as trained: the checkpoint's own dtypes (float32 for TorchScript) under the run's "
                           "autocast, if it trained under one; the others replay in that dtype, without autocast"));
    controls->addWidget(m_dtype);
    controls->addWidget(m_eval);
    controls->addWidget(m_bisect);
    controls->addWidget(new QLabel(tr("Layer:"), this));
    m_layer->setPlaceholderText(tr("all modules"));
    m_layer->setClearButtonEnabled(true);
    controls->addWidget(m_layer, 1);
    controls->addWidget(m_run);
    m_triageButton->setToolTip(tr("Replay this step twice, on an earlier checkpoint and its neighbouring batches: "
                                  "is the incident the data, the model's state, or both?"));
    controls->addWidget(m_triageButton);
    controls->addWidget(m_cancel);
    m_busy->setRange(0, 0);
    m_busy->setMaximumWidth(120);
    controls->addWidget(m_busy);
    layout->addLayout(controls);
    setEagerFactory(QString());
    m_warning->setWordWrap(true);
    m_warning->setStyleSheet("color: palette(mid);");
    layout->addWidget(m_warning);
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    m_triageText->setWordWrap(true);
    m_triageText->setTextFormat(Qt::RichText);
    m_triageText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_triageText->hide();
    layout->addWidget(m_triageText);
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setAlternatingRowColors(true);
    // One line per op; a long line of code ends in "…" and reads whole in its tooltip.
    m_table->setWordWrap(false);
    m_table->setTextElideMode(Qt::ElideRight);
    fitColumns(); // the headers, before any replay: default widths cut them ("16 headroom (bi")
    layout->addWidget(m_table, 1);
    setRunning(false);
    m_summary->setText(tr("Pick a step that has a saved checkpoint and batch, then Replay. "
                          "Double-clicking a layer in the tree replays its module."));

    connect(m_run, &QPushButton::clicked, this, &ReplayView::requestReplay);
    // A cancelled triage leaves no "Triaging step N..." above later results.
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_triageRunning)
            dropTriage();
    });
    connect(m_triageButton, &QPushButton::clicked, this, [this] {
        m_triageText->setText(tr("Triaging step %1: up to seven replays, each in its own process…").arg(request().step));
        m_triageText->show();
        m_triageRunning = true;
        emit triageRequested(request().step);
    });
    // Enter in the layer field replays, as the Replay button does.
    connect(m_layer, &QLineEdit::returnPressed, this, [this] {
        if (m_run->isEnabled())
            requestReplay();
    });
    connect(m_cancel, &QPushButton::clicked, this, &ReplayView::cancelRequested);
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        emit moduleClicked(index.data(ReplayOpModel::ModuleRole).toString());
    });
}

void ReplayView::requestReplay()
{
    // A triage of another step is no context for this replay: it would sit above its results.
    if (m_triage.evidence.step != request().step || m_triageRunning)
        dropTriage();
    m_requested = request();
    emit replayRequested(m_requested);
}

std::optional<ReplayReport> ReplayView::replayAsTrained() const
{
    // As the report replays: training mode, the run's own precision, every layer's ops.
    const bool asTrained = m_requested.step >= 0 && m_report.result.step == m_requested.step && !m_requested.eval &&
                           m_requested.dtype.isEmpty() && m_requested.layerPrefix.isEmpty();
    if (!asTrained || !m_report.error.isEmpty())
        return std::nullopt;
    return m_report;
}

void ReplayView::dropTriage()
{
    m_triage = TriageReport();
    m_triageRunning = false;
    m_triageText->clear();
    m_triageText->hide();
}

void ReplayView::fitColumns()
{
    m_table->resizeColumnsToContents();
    // The code column takes at most a third of the pane and the module and source columns a
    // sixth each, so the numbers (NaN, Inf) stay in view beside them at 1024 pixels.
    const auto cap = [this](int column, int width) {
        if (m_table->columnWidth(column) > width)
            m_table->setColumnWidth(column, width);
    };
    cap(ReplayOpModel::Code, std::max(160, width() / 3));
    cap(ReplayOpModel::Module, std::max(120, width() / 6));
    cap(ReplayOpModel::Source, std::max(120, width() / 6));
}

void ReplayView::setEagerFactory(const QString& factory, bool exportedPrograms)
{
    QStringList runs;
    if (exportedPrograms)
        runs << tr("Replay runs an exported program's graph of ATen ops in LibTorch: nothing of the file runs as code.");
    if (!factory.isEmpty())
        runs << tr("Replay rebuilds the model in Python with %1 and loads the checkpoint's state_dict into it: it "
                   "imports and runs the training code (eager replay).")
                    .arg(factory);
    if (runs.isEmpty())
        runs << tr("Replay loads the checkpoint as TorchScript, which runs code from the file.");
    runs << tr("It runs in a separate process: a crash there cannot take this window down.");
    m_warning->setText(runs.join(' '));
}

void ReplayView::setReplayableSteps(const std::vector<qint64>& steps, const QString& whyNone)
{
    m_step->clear();
    for (qint64 s : steps)
        m_step->addItem(QString::number(s), s);
    m_run->setEnabled(!steps.empty());
    m_triageButton->setEnabled(!steps.empty());
    if (steps.empty())
        m_summary->setText(whyNone.isEmpty()
                               ? tr("This run has no step with both a saved checkpoint and a saved batch: nothing to replay.")
                               : whyNone.toHtmlEscaped());
}

void ReplayView::chooseStepNear(qint64 step)
{
    int best = -1;
    for (int i = 0; i < m_step->count(); ++i)
        if (m_step->itemData(i).toLongLong() <= step)
            best = i;
    if (best < 0 && m_step->count() > 0)
        best = 0;
    if (best >= 0)
        m_step->setCurrentIndex(best);
}

void ReplayView::setLayerPrefix(const QString& prefix)
{
    m_layer->setText(prefix);
}

void ReplayView::replayModule(const QString& module)
{
    setLayerPrefix(module);
    requestReplay();
}

void ReplayView::setRunning(bool running)
{
    // While new work runs, the table and summary of the last replay are not current: greyed out
    // and said so, never shown as if they were the answer being computed.
    m_table->setEnabled(!running);
    if (running && m_report.result.step >= 0)
        m_summary->setText(tr("<i>Running… the ops below are of the previous replay (step %1).</i>").arg(m_report.result.step));
    else if (!running && m_report.result.step >= 0)
        m_summary->setText(summaryText());
    m_run->setEnabled(!running && m_step->count() > 0);
    m_triageButton->setEnabled(!running && m_step->count() > 0);
    m_cancel->setVisible(running);
    m_busy->setVisible(running);
}

ReplayRequest ReplayView::request() const
{
    ReplayRequest r;
    r.step = m_step->currentIndex() >= 0 ? m_step->currentData().toLongLong() : -1; // -1: nothing to replay
    r.layerPrefix = m_layer->text().trimmed();
    r.dtype = m_dtype->currentData().toString();
    r.eval = m_eval->isChecked();
    r.bisect = m_bisect->isChecked();
    return r;
}

void ReplayView::showTriagedReplay(ReplayReport report)
{
    const ReplayResult& shown = m_report.result;
    if (!report.result.bisected && shown.bisected && shown.step == report.result.step && m_report.error.isEmpty()) {
        report.result.bisected = true;
        report.result.badSamples = shown.badSamples;
        report.result.badSampleCriterion = shown.badSampleCriterion;
    }
    setReport(report);
}

void ReplayView::setReport(const ReplayReport& report)
{
    m_report = report;
    m_model->setReport(report);
    fitColumns();
    m_summary->setText(summaryText());
    m_scrollToCulprit = true;
    if (isVisible())
        scrollToCulprit();
}

void ReplayView::scrollToCulprit()
{
    // A pane replayed while another tab was shown has no geometry to scroll in yet: it scrolls
    // when it is shown, so the highlighted op is in view and not far below the table's top.
    if (!m_scrollToCulprit)
        return;
    m_scrollToCulprit = false;
    const int row = m_model->rowOfOp(m_report.firstNonfiniteIndex());
    if (row < 0)
        return;
    m_table->selectRow(row);
    m_table->scrollTo(m_model->index(row, ReplayOpModel::Index), QAbstractItemView::PositionAtCenter);
    m_table->horizontalScrollBar()->setValue(0); // the op's name and the NaN column, not the far right
}

void ReplayView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    fitColumns(); // the pane's width is known now
    scrollToCulprit();
}

QString ReplayView::summaryText() const
{
    const ReplayReport& r = m_report;
    if (!r.error.isEmpty())
        return QString("<span style='color:#b00020'><b>%1</b></span>").arg(r.error.toHtmlEscaped());
    const ReplayResult& result = r.result;
    auto text = [](const std::string& s) { return QString::fromStdString(s); };
    auto moduleName = [&](const ReplayOp& op) { return op.module.empty() ? tr("(root)") : text(op.module); };
    const QString lossValue = std::isfinite(result.loss) ? QString::fromStdString(numberText(result.loss, 5))
                                                         : QString("<span style='color:#c00'>non-finite</span>");
    QString html;
    switch (result.lossConvention) {
    case LossConvention::NamedLoss:
        html = tr("<b>Step %1</b> (%2, %3): %4 loss = %5. ").arg(result.step).arg(r.mode, r.dtype, text(result.lossName), lossValue);
        break;
    case LossConvention::InForward:
        html = tr("<b>Step %1</b> (%2, %3): loss computed by the model's forward, <tt>%4</tt> = %5. ")
                   .arg(result.step)
                   .arg(r.mode, r.dtype, text(result.lossFrom).toHtmlEscaped(), lossValue);
        break;
    case LossConvention::None:
        html = tr("<b>Step %1</b> (%2, %3): no loss. ").arg(result.step).arg(r.mode, r.dtype);
        break;
    }
    if (result.firstNonfinite) {
        const ReplayOp& c = *result.firstNonfinite;
        html += tr("<br>First non-finite value: <b>%1</b> in module <b>%2</b> at <tt>%3</tt> (op #%4).")
                    .arg(text(c.op).toHtmlEscaped(), moduleName(c).toHtmlEscaped(), text(c.source).toHtmlEscaped())
                    .arg(c.index);
        if (!c.code.empty())
            html += tr("<br>&nbsp;&nbsp;code: <tt>%1</tt>").arg(text(c.code).toHtmlEscaped());
        for (size_t i = 0; i < c.inputs.size(); ++i)
            html += tr("<br>&nbsp;&nbsp;input %1: %2").arg(i).arg(rangeText(c.inputs[i]));
        html += tr("<br>&nbsp;&nbsp;output: %1").arg(rangeText(c.output));
    } else if (forwardVerdict(result) == ForwardVerdict::NonfiniteLossUnseen) {
        html += tr(kNonfiniteLossUnseenText);
    } else {
        html += tr("The forward pass is finite.");
    }
    if (result.firstNonfiniteGrad)
        html += tr("<br>First non-finite gradient in backward order: %1 in %2 (%3).")
                    .arg(text(result.firstNonfiniteGrad->op), moduleName(*result.firstNonfiniteGrad),
                         text(result.firstNonfiniteGrad->gradFunction));
    if (result.gradCulprit) {
        const ReplayOp& c = *result.gradCulprit;
        html += tr("<br>Backward first made a non-finite gradient in <b>%1</b> in module <b>%2</b> at <tt>%3</tt> (op #%4)%5.")
                    .arg(text(c.op).toHtmlEscaped(), moduleName(c).toHtmlEscaped(), text(c.source).toHtmlEscaped())
                    .arg(c.index)
                    .arg(c.code.empty() ? QString() : QString(": <tt>%1</tt>").arg(text(c.code).toHtmlEscaped()));
    }
    if (result.bisected) {
        QStringList samples;
        for (int64_t s : result.badSamples)
            samples << QString::number(s);
        const QString criterion = result.badSampleCriterion.empty() ? tr("a non-finite value") : text(result.badSampleCriterion);
        html += tr("<br>Bad samples (%1): <b>%2</b>")
                    .arg(criterion.toHtmlEscaped(), samples.isEmpty() ? tr("none") : samples.join(", "));
    }
    if (result.logits && result.logits->logZMean)
        html += tr("<br>log Z of the logits (%1): mean %2, range [%3, %4] over %5 rows.")
                    .arg(text(result.logits->from).toHtmlEscaped())
                    .arg(QString::fromStdString(numberText(*result.logits->logZMean, 4)), QString::fromStdString(numberText(*result.logits->logZMin, 4)),
                         QString::fromStdString(numberText(*result.logits->logZMax, 4)))
                    .arg(result.logits->rows);
    for (const ReplayFinding& finding : result.findings)
        html += tr("<br><b>%1</b> %2").arg(text(finding.cause).toHtmlEscaped(), text(finding.suggestion).toHtmlEscaped());
    for (const std::string& note : result.notes)
        html += "<br><i>" + text(note).toHtmlEscaped() + "</i>";
    return html;
}

void ReplayView::setTriage(const TriageReport& triage)
{
    m_triageRunning = false;
    m_triage = triage;
    m_triageText->setText(triageText());
    m_triageText->setVisible(!m_triageText->text().isEmpty());
}

QString ReplayView::triageText() const
{
    const TriageReport& t = m_triage;
    if (!t.error.isEmpty())
        return QString("<span style='color:#b00020'><b>%1</b></span>").arg(t.error.toHtmlEscaped());
    if (t.evidence.replays.empty())
        return QString();
    auto text = [](const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); };
    auto stepText = [](int64_t step) { return step >= 0 ? QString::number(step) : QString("-"); };
    QString html = tr("<b>Triage of step %1: %2</b><br>%3")
                       .arg(t.evidence.step)
                       .arg(text(triageLabelName(t.verdict.label)), text(t.verdict.why));
    html += tr("<table cellspacing='0' cellpadding='2'><tr><th align='left'>replay</th><th>checkpoint</th>"
               "<th>batch</th><th align='left'>result</th><th align='right'>loss</th></tr>");
    for (const TriageReplay& r : t.evidence.replays) {
        const bool bad = triageReplayBlewUp(r, t.evidence.typicalLoss);
        const QString result = text(triageResultText(r, t.evidence.typicalLoss));
        html += QString("<tr><td>%1</td><td align='right'>%2</td><td align='right'>%3</td><td>%4</td><td align='right'>%5</td></tr>")
                    .arg(text(triageRoleName(r.role)), stepText(r.checkpointStep), stepText(r.batchStep),
                         bad ? QString("<span style='color:#c00'>%1</span>").arg(result) : result,
                         r.ran ? QString::fromStdString(numberText(r.loss, 5)) : QString("-"));
    }
    html += "</table>";
    for (const std::string& detail : t.verdict.details)
        html += "<i>" + text(detail) + "</i><br>";
    return html;
}

void ReplayView::clear()
{
    dropTriage();
    m_requested = ReplayRequest();
    m_report = ReplayReport();
    m_model->setReport(m_report);
    fitColumns();
    m_step->clear();
    m_layer->clear();
    m_summary->clear();
    setRunning(false);
}

void ReplayView::follow(const RunContext* context)
{
    auto show = [this, context](const RunSnapshot& snapshot) {
        const qint64 shownStep = request().step;
        const std::vector<int64_t> replayable = snapshot.info.replayableSteps();
        setReplayableSteps(std::vector<qint64>(replayable.begin(), replayable.end()),
                           QString::fromStdString(snapshot.info.whyNothingReplays()));
        setEagerFactory(QString::fromStdString(snapshot.info.eagerReplayFactory()), snapshot.info.hasExportedPrograms());
        const qint64 near = context->selectedStep() >= 0 ? context->selectedStep() : context->startStep();
        chooseStepNear(shownStep >= 0 ? shownStep : near);
    };
    connect(context, &RunContext::runClosed, this, &ReplayView::clear);
    connect(context, &RunContext::runLoaded, this, show);
    connect(context, &RunContext::runGrew, this, show);
    connect(context, &RunContext::stepSelected, this, &ReplayView::chooseStepNear);
}

} // namespace nanscope
