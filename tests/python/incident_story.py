"""One story per incident (issue 50): an incident's words may not contradict its own fields. The
table shows the fields (kind, pattern, onset, first layer), the text explains them; a user who reads
"gradual" in one and "Sudden blow-up at one batch" in the other trusts neither."""
import re


def contradictions(incident):
    """What in the incident's cause and suggestion disagrees with its fields; empty when nothing."""
    found = []
    cause = incident.get("cause", "")
    words = cause + " " + incident.get("suggestion", "")
    pattern = incident.get("pattern")
    if pattern == "gradual" and re.search(r"\bSudden\b|at one batch", cause):
        found.append("pattern gradual, text says sudden: " + cause[:120])
    if pattern == "sudden" and re.search(r"\bGradual\b|\bgradual\b|\bgrew for\b", cause):
        found.append("pattern sudden, text says gradual: " + cause[:120])
    nan = incident.get("nonfinite_step")
    for said in re.findall(r"until NaN at step (\d+)", cause):
        if nan is None or int(said) != nan:
            found.append("text says NaN at step %s, nonfinite_step is %s" % (said, nan))
    onset = incident.get("onset_step")
    if incident.get("kind") == "blowup" and incident.get("severity") == "critical" and \
            onset is not None and not re.search(r"\b%d\b" % onset, words):
        found.append("onset %s named nowhere in the text" % onset)
    layers = incident.get("layers") or []
    for said in re.findall(r"(?:began in the (?:output|weights|gradient) of|, first in) ([\w.\-]+)", cause):
        said = said.rstrip(".")
        if not layers or said != layers[0]:
            found.append("text names %s first, layers start with %s" % (said, layers[:1]))
    return found
