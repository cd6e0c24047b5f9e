#include "app/report/IncidentReport.h"
#include "app/report/IncidentReportContent.h"

#include <QFileInfo>
#include <QPdfWriter>
#include <QSaveFile>
#include <QStringList>
#include <QTextDocument>
#include <QUrl>

#include <filesystem>
#include <system_error>

namespace nanscope {

namespace {

Status saveAtomically(const QString& path, const QByteArray& bytes)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return Error{path.toStdString() + ": cannot write (" + file.errorString().toStdString() + ")"};
    file.write(bytes);
    if (!file.commit())
        return Error{path.toStdString() + ": cannot write (" + file.errorString().toStdString() + ")"};
    return Status::success();
}

} // namespace

using namespace report;

Status writeIncidentReport(const QString& runDirectory, const QString& outputPath, const IncidentReportOptions& options,
                           const ProgressCallback& progress)
{
    const QString suffix = QFileInfo(outputPath).suffix().toLower();
    if (!QStringList{"html", "htm", "pdf", "md", "json"}.contains(suffix))
        return Error{outputPath.toStdString() + ": the report format follows the extension: .html, .pdf, .md or .json"};
    auto content = gather(runDirectory, options, progress);
    if (!content)
        return Error{content.error()};
    const ReportContent& c = *content;
    Status status;
    if (suffix == "json")
        status = saveAtomically(outputPath, toJsonReport(c));
    else if (suffix == "md")
        status = saveAtomically(outputPath, toMarkdown(c).toUtf8());
    else if (suffix == "html" || suffix == "htm")
        status = saveAtomically(outputPath, toHtml(c, [](const Plot& p) { return pngDataUrl(p.image); }, 960).toUtf8());
    else {
        // PDF: rendered to a temporary file beside the target, then renamed over it in one step.
        QTextDocument document;
        for (const auto& plot : c.plots)
            document.addResource(QTextDocument::ImageResource, QUrl(plot.name), plot.image);
        document.setHtml(toHtml(c, [](const Plot& p) { return p.name; }, 620));
        const QString temporary = outputPath + ".part";
        {
            QPdfWriter writer(temporary);
            writer.setResolution(96); // lay the page out in screen pixels, as the HTML is
            writer.setPageSize(QPageSize(QPageSize::A4));
            writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
            writer.setTitle("nanscope incident report: " + c.runName);
            writer.setCreator("nanscope " + c.nanscopeVersion);
            document.setPageSize(QSizeF(writer.width(), writer.height()));
            document.print(&writer);
        }
        std::error_code ec;
        std::filesystem::rename(temporary.toStdString(), outputPath.toStdString(), ec);
        if (ec) {
            std::filesystem::remove(temporary.toStdString(), ec);
            return Error{outputPath.toStdString() + ": cannot write the PDF"};
        }
    }
    reportProgress(progress, 1.0, "done");
    return status;
}

} // namespace nanscope
