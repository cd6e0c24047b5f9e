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
        names = set(table["event_kinds"]) | set(table["recorder_scalars"])
        for columns in table["columns"].values():
            names |= set(columns)
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
        self.assertEqual(offending, [], "run-format names typed outside run_format.json")


if __name__ == "__main__":
    unittest.main()
