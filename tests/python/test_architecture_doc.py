"""docs/architecture.md stays true where a machine can tell (issue 53): every file it names exists,
every log reader registered in core/importers/LogReaderRegistry.cpp is named in it, every source
file of core/importers and core/open is named in it by its stem, each folder's includes stay within
what the doc's "may use" column says, and LibTorch's headers within core/torch; a failure names the
file and line."""
import glob
import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "docs", "architecture.md")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


class ArchitectureDoc(unittest.TestCase):
    def setUp(self):
        self.doc = read("docs/architecture.md")

    def test_every_file_the_doc_names_exists(self):
        named = set(re.findall(r"\b((?:core|app|widgets|python|tests|bench|fuzz|cmake|resources)/[A-Za-z0-9_./-]+)",
                               self.doc))
        self.assertGreater(len(named), 50)
        missing = []
        for path in sorted(named):
            path = path.rstrip(".,;:)")
            candidates = [path, path + ".h", path + ".cpp", path + ".py"]
            if not any(os.path.exists(os.path.join(ROOT, c)) for c in candidates):
                missing.append(path)
        self.assertEqual(missing, [], "docs/architecture.md names files that do not exist")

    def test_every_registered_log_reader_is_in_the_doc(self):
        registry = read("core/importers/LogReaderRegistry.cpp")
        readers = re.findall(r"^#include \"core/importers/(\w+Reader)\.h\"", registry, re.M)
        self.assertGreaterEqual(len(readers), 8)
        self.assertEqual([r for r in readers if r not in self.doc], [],
                         "log readers registered but not in docs/architecture.md")

    def test_every_importer_and_opener_is_in_the_doc(self):
        stems = set()
        for folder in ("core/importers", "core/open"):
            for name in os.listdir(os.path.join(ROOT, folder)):
                if name.endswith(".cpp"):
                    stems.add(name[:-4])
        self.assertEqual(sorted(s for s in stems if s not in self.doc), [],
                         "sources of core/importers or core/open not named in docs/architecture.md")

    def folder_rows(self):
        rows = {}
        for line in self.doc.splitlines():
            m = re.match(r"^\| `([\w/]+)` \|(.*)\|(.*)\|\s*$", line)
            if m:
                rows[m.group(1)] = m.group(3)
        return rows

    def test_each_folder_includes_only_what_the_doc_lets_it_use(self):
        rows = self.folder_rows()
        core = [f for f in rows if f.startswith("core/")]
        self.assertGreaterEqual(len(core), 9, "the doc's folder table was not found")
        # nanscope_core: the LibTorch-free engine the widgets link (core/CMakeLists.txt).
        nanscope_core = {"core/run", "core/scan", "core/tensor", "core/record", "core/checkpoint", "core/compare",
                         "core/replay"}
        offending = []
        for folder in core + ["widgets"]:
            may_use = rows[folder]
            allowed = {folder} | set(re.findall(r"core/\w+", may_use))
            if "all of core" in may_use:
                allowed |= set(core)
            if "nanscope_core" in may_use:
                allowed |= nanscope_core
            for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.*"), recursive=True)):
                if not path.endswith((".h", ".cpp")):
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = re.match(r'\s*#include "((?:core|widgets|app)/[^"]+)"', line)
                        if not m:
                            continue
                        parts = m.group(1).split("/")
                        target = "/".join(parts[:2]) if parts[0] == "core" and len(parts) > 2 else parts[0]
                        if target != "core" and target not in allowed:  # core/*.h (Result, Progress) are everyone's
                            offending.append("%s:%d includes %s" % (os.path.relpath(path, ROOT), number, m.group(1)))
        self.assertEqual(offending, [], "includes the doc's 'may use' column does not allow")

    def test_libtorch_headers_are_included_only_in_core_torch(self):
        offending = []
        for folder in ("core", "app", "widgets"):
            for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.*"), recursive=True)):
                if not path.endswith((".h", ".cpp")) or os.path.relpath(path, ROOT).startswith("core/torch/"):
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        if re.match(r"\s*#include <(torch|ATen|c10)/", line):
                            offending.append("%s:%d %s" % (os.path.relpath(path, ROOT), number, line.strip()))
        self.assertEqual(offending, [], "LibTorch headers outside core/torch (the doc: only core/torch uses LibTorch)")

    def test_the_core_torch_headers_others_include_hold_no_libtorch(self):
        """core/torch's public headers (those app/ includes) are LibTorch-free: the program that
        runs no model (`nanscope`) compiles them without LibTorch's headers."""
        public = set()
        for path in glob.glob(os.path.join(ROOT, "app", "**", "*.*"), recursive=True):
            with open(path, encoding="utf-8", errors="replace") as f:
                public |= set(re.findall(r'#include "core/torch/(\w+\.h)"', f.read()))
        self.assertTrue(public, "app/ includes no core/torch header")
        offending = []
        for name in sorted(public):
            with open(os.path.join(ROOT, "core", "torch", name), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if re.match(r"\s*#include <(torch|ATen|c10)/", line):
                        offending.append("core/torch/%s:%d %s" % (name, number, line.strip()))
        self.assertEqual(offending, [], "a public core/torch header includes LibTorch")

    def test_no_run_format_name_is_typed_outside_the_table(self):
        """The run format's dataset and event names (run_format.json) are the generated constants
        (rf::column::kGradNorm, rf::scalar::kLoss, rf::event::kSkippedStep), never typed again. The
        importers and openers read other tools' files, whose own keys may be spelt alike; the words
        listed in `spelt_alike` are other things that share a spelling."""
        import json
        with open(os.path.join(ROOT, "python", "nanscope_recorder", "run_format.json"), encoding="utf-8") as f:
            table = json.load(f)
        names = set(table["event_kinds"]) | set(table["recorder_scalars"]) | set(table["optimizer_scalars"])
        for columns in table["columns"].values():
            names |= set(columns)
        every_name = set(names)
        names = {n for n in names if "_" in n}  # "loss", "min": too common a word to tell apart
        spelt_alike = {
            "core/run/RunFormat.h": "the table's C++ face",
            "core/scan/Incident.cpp": "incident kinds (nonfinite_loss is one)",
            "core/scan/Precursor.cpp": "fragments of names that are not precursors",
        }
        offending = []
        for folder in ("core", "app", "widgets"):
            for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.*"), recursive=True)):
                rel = os.path.relpath(path, ROOT)
                if not path.endswith((".h", ".cpp")) or rel.startswith(("core/importers/", "core/open/")) or \
                        rel in spelt_alike:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        code = line.split("//")[0]
                        offending += ["%s:%d %s" % (rel, number, n) for n in names if '"%s"' % n in code]
                        # The short names ("loss", "skipped") where a /scalars series is meant.
                        offending += ["%s:%d %s" % (rel, number, m.group(0)) for m in
                                      re.finditer(r'(?:scalarSeries\(|kScalars,\s*)"(\w+)"', code)
                                      if m.group(1) in every_name]
        self.assertEqual(offending, [], "run-format names typed outside run_format.json")

    # Outside tests/ and generated code (RunFormatTable.h, protobuf): every source of the product.
    SIZED_FOLDERS = ("core", "app", "widgets", "python", "bench", "fuzz")
    MOST_FILE_LINES = 600
    MOST_FUNCTION_LINES = 120

    def sources(self, suffixes):
        for folder in self.SIZED_FOLDERS:
            for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.*"), recursive=True)):
                if path.endswith(suffixes) and "generated" not in os.path.basename(path).lower() and \
                        not os.path.basename(path).startswith("RunFormatTable"):
                    yield path

    def test_no_source_file_is_over_600_lines(self):
        offending = []
        for path in self.sources((".h", ".cpp", ".cu", ".py")):
            with open(path, encoding="utf-8", errors="replace") as f:
                count = sum(1 for _ in f)
            if count > self.MOST_FILE_LINES:
                offending.append("%s:1 has %d lines" % (os.path.relpath(path, ROOT), count))
        self.assertEqual(offending, [], "files over %d lines (docs/architecture.md)" % self.MOST_FILE_LINES)

    def test_no_function_is_over_120_lines(self):
        offending = []
        for path in self.sources((".h", ".cpp", ".cu")):
            with open(path, encoding="utf-8", errors="replace") as f:
                code = code_without_comments_and_strings(f.read())
            for line, length, signature in function_bodies(code):
                if length > self.MOST_FUNCTION_LINES:
                    offending.append("%s:%d %d lines: %s" % (os.path.relpath(path, ROOT), line, length, signature))
        import ast
        for path in self.sources((".py",)):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > self.MOST_FUNCTION_LINES:
                        offending.append("%s:%d %d lines: %s" % (os.path.relpath(path, ROOT), node.lineno, length,
                                                                 node.name))
        self.assertEqual(offending, [], "functions over %d lines (docs/architecture.md)" % self.MOST_FUNCTION_LINES)


def code_without_comments_and_strings(text):
    """C++ source with its comments, string and character literals blanked (line breaks kept), so
    that braces count only where they are code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and re.match(r'R"([^(\s]*)\(', text[i:]):
            delimiter = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            j = text.find(")" + delimiter + '"', i)
            j = n if j < 0 else j + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] in "\"'" and not (text[i] == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000'000
            quote, j = text[i], i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try|namespace|struct|class|enum|union)\b[^;{}]*$")
FUNCTION_HEAD = re.compile(r"\)\s*(const|override|noexcept|final|mutable|->\s*[\w:<>,\s*&]+|\s)*$")


def function_bodies(code):
    """(line, lines, signature) of every function body in `code`: a brace that follows a
    parameter list (a function, a method inside a class, a lambda), not a control statement."""
    stack = []
    for i, c in enumerate(code):
        if c == "{":
            head = re.split(r"[;{}]", code[max(0, i - 400):i])[-1].strip()
            is_function = bool(FUNCTION_HEAD.search(head)) and not CONTROL.search(head) and \
                not head.endswith("=")
            stack.append((i, is_function, head))
        elif c == "}" and stack:
            start, is_function, head = stack.pop()
            if is_function:
                yield (code.count("\n", 0, start) + 1, code.count("\n", start, i),
                       " ".join(head.split())[-80:])


if __name__ == "__main__":
    unittest.main()
