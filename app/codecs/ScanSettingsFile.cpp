#include "app/codecs/ScanSettingsFile.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

namespace nanscope {

bool loadScanSettingsFile(const QString& path, ScanConfig& config, QString& error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        error = path + ": cannot open the scan settings file: " + file.errorString();
        return false;
    }
    const QByteArray text = file.readAll();
    if (text.trimmed().startsWith('{')) {
        QJsonParseError parseError;
        const QJsonDocument document = QJsonDocument::fromJson(text, &parseError);
        if (parseError.error != QJsonParseError::NoError || !document.isObject()) {
            error = path + ": not a JSON object: " + parseError.errorString();
            return false;
        }
        const QJsonObject object = document.object();
        for (auto it = object.begin(); it != object.end(); ++it) {
            const QString value = it.value().isDouble() ? QString::number(it.value().toDouble(), 'g', 17)
                                                        : it.value().toString();
            if (Status s = applyScanSetting(config, it.key().toStdString(), value.toStdString()); !s) {
                error = path + ": " + QString::fromStdString(s.error());
                return false;
            }
        }
        return true;
    }
    int lineNumber = 0;
    for (const QByteArray& rawLine : text.split('\n')) {
        ++lineNumber;
        const QString line = QString::fromUtf8(rawLine).trimmed();
        if (line.isEmpty() || line.startsWith('#') || line.startsWith(';') || line.startsWith('['))
            continue;
        const int equals = line.indexOf('=');
        if (equals < 0) {
            error = QString("%1:%2: expected key = value").arg(path).arg(lineNumber);
            return false;
        }
        const QString key = line.left(equals).trimmed();
        QString value = line.mid(equals + 1).trimmed();
        for (const QChar comment : {QChar('#'), QChar(';')})
            if (int at = value.indexOf(comment); at >= 0)
                value = value.left(at).trimmed();
        if (Status s = applyScanSetting(config, key.toStdString(), value.toStdString()); !s) {
            error = QString("%1:%2: %3").arg(path).arg(lineNumber).arg(QString::fromStdString(s.error()));
            return false;
        }
    }
    return true;
}

} // namespace nanscope
