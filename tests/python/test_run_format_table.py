"""The two recorders write one run format: the Python recorder and the C++ Guard (the demo runs
are LibTorch loops under the Guard) name their tables' columns, event kinds and step files from
one table (nanscope_recorder/run_format.json, compiled into the C++ side). This writes a run with
the Python recorder and compares it with a demo run, file against file: before the table, each
side spelt the names out on its own, and nothing noticed when they drifted."""
import json
import re
import os
import tempfile
import unittest

import h5py

import recorder_fixtures as fx
from nanscope_recorder import Recorder
from nanscope_recorder import checkpoints
from nanscope_recorder.run_format import (CHECKPOINT_FORMS, COLUMNS, EVENT_KINDS, RECORDER_DEFAULTS, RECORDER_SCALARS,
                                          EVENT_TEXTS, STEP_FILE, checkpoint_form_text, event_text)

RUNS = os.environ.get("NANSCOPE_TEST_RUNS")
# A demo run with every table: activations, inputs, BatchNorm buffers, events, checkpoints, batches.
DEMO = "batchnorm-poisoned"
ROW_AXES = {"steps", "names", "kinds"}


def event_text_pattern(name):
    """What every message event_text(name, ...) writes matches, whatever its fields."""
    parts = re.split(r"\{(\w+)\}", EVENT_TEXTS[name])
    return re.compile("".join(re.escape(part) if i % 2 == 0 else ".*" for i, part in enumerate(parts)) + r"\Z", re.S)


def columns(run_dir):
    with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
        tables = {name: set(f[name].keys()) - ROW_AXES for name in f if name != "scalars"}
        kinds = set()
        if "events" in f:
            kinds = {k.decode() if isinstance(k, bytes) else k for k in f["events/kind"][:]}
    return tables, kinds


def step_files(run_dir):
    names = []
    for folder in ("checkpoints", "batches"):
        path = os.path.join(run_dir, folder)
        if os.path.isdir(path):
            names += os.listdir(path)
    return names


@unittest.skipUnless(RUNS, "NANSCOPE_TEST_RUNS not set")
class RunFormatTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls._tmp.name, "python-run")
        # Every table; step 9's batch holds a NaN: skipped, captured, its events written.
        fx.train(cls.run_dir, fx.bn_mlp(), 12, nan_at=9, activations_every=1, batch_ring=2)
        cls.demo_dir = os.path.join(RUNS, DEMO)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_both_recorders_write_the_same_columns_in_every_table(self):
        python_tables, _ = columns(self.run_dir)
        cpp_tables, _ = columns(self.demo_dir)
        for table in ("layers", "activations", "inputs", "buffers", "events"):
            self.assertIn(table, python_tables, "the Python recorder wrote no /%s" % table)
            self.assertIn(table, cpp_tables, "the C++ Guard wrote no /%s" % table)
            self.assertEqual(python_tables[table], cpp_tables[table], "/%s differs between the recorders" % table)
            self.assertEqual(python_tables[table], set(COLUMNS[table]), "/%s is not the table's" % table)

    def test_both_recorders_compute_the_tables_scalars(self):
        """run_format.json's recorder_scalars: every one in both recorders' /scalars."""
        for run_dir in (self.run_dir, self.demo_dir):
            with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
                names = set(f["scalars"].keys()) - {"steps"}
            self.assertTrue(set(RECORDER_SCALARS) <= names, (run_dir, names))

    def test_every_event_kind_either_recorder_writes_is_in_the_table(self):
        _, python_kinds = columns(self.run_dir)
        _, cpp_kinds = columns(self.demo_dir)
        self.assertIn("skipped_step", python_kinds)
        self.assertIn("skipped_step", cpp_kinds)
        self.assertLessEqual(python_kinds, set(EVENT_KINDS))
        self.assertLessEqual(cpp_kinds, set(EVENT_KINDS))

    def test_both_recorders_word_their_events_from_the_table(self):
        """Each event of a kind the table words (run_format.json, "event_texts") reads as its
        template, in the Python recorder's run and in the C++ Guard's."""
        for run_dir in (self.run_dir, self.demo_dir):
            with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
                rows = [(k.decode() if isinstance(k, bytes) else k, m.decode() if isinstance(m, bytes) else m)
                        for k, m in zip(f["events/kind"][:], f["events/message"][:])]
            seen = set()
            for kind, message in rows:
                if kind in ("skipped_step", "nonfinite_loss", "checkpoint", "rollback", "buffers_restored"):
                    seen.add(kind)
                    self.assertRegex(message, event_text_pattern(kind), (run_dir, kind))
                if kind == "skipped_step":
                    reasons = [event_text_pattern(name) for name in
                               ("reason_nonfinite_loss", "reason_nonfinite_gradients", "reason_norm_overflow")]
                    reason = message[:-len(": optimizer step skipped")]
                    self.assertTrue(any(p.match(reason) for p in reasons), (run_dir, message))
            self.assertGreaterEqual(seen, {"skipped_step", "checkpoint"}, run_dir)

    def test_both_recorders_name_step_files_alike(self):
        for run_dir in (self.run_dir, self.demo_dir):
            names = step_files(run_dir)
            self.assertTrue(names, run_dir)
            for name in names:
                self.assertTrue(STEP_FILE.fullmatch(name), "%s in %s" % (name, run_dir))

    def test_the_recorder_defaults_are_the_tables(self):
        import inspect
        signature = inspect.signature(Recorder.__init__)
        self.assertEqual(signature.parameters["snapshot_every"].default, RECORDER_DEFAULTS["snapshot_every"])
        self.assertEqual(signature.parameters["rollback_lr_factor"].default, RECORDER_DEFAULTS["rollback_lr_factor"])

    def test_form_files_are_written_as_the_shared_cases_say(self):
        # The C++ Guard is held to the same cases (RunFormatTable.FormFilesAreWrittenAndRead...).
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "checkpoint_form_cases.json")
        with open(path, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 5)
        for case in cases:
            self.assertEqual(checkpoint_form_text(case["kind"], case["why"]), case["text"], case["kind"])
        self.assertEqual((checkpoints.SCRIPTED, checkpoints.TRACED, checkpoints.STATE_DICT, checkpoints.EXPORTED),
                         CHECKPOINT_FORMS)
        with self.assertRaises(ValueError):
            checkpoint_form_text("pickled")

    def test_the_python_recorders_form_files_are_the_codecs(self):
        folder = os.path.join(self.run_dir, "checkpoints")
        forms = [n for n in os.listdir(folder) if n.endswith(".form")]
        self.assertTrue(forms, "the recorder wrote no form file")
        for name in forms:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            word, _, why = text.partition("\n")
            self.assertIn(word, CHECKPOINT_FORMS, name)
            self.assertEqual(text, checkpoint_form_text(word, why), name)


class EventTexts(unittest.TestCase):
    def test_events_are_worded_as_the_shared_cases_say(self):
        # The C++ Guard is held to the same cases (tests/core/EventTextTest.cpp).
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "event_text_cases.json")
        with open(path, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 9)

        def value(field):
            if isinstance(field, str) and field.lstrip("-") in ("nan", "inf"):
                return float(field)
            if isinstance(field, list):
                return [tuple(value(v) for v in item) if isinstance(item, list) else value(item) for item in field]
            return field
        for case in cases:
            fields = {name: value(field) for name, field in case["fields"].items()}
            self.assertEqual(event_text(case["text"], **fields), case["expected"], case["text"])

    def test_a_template_filled_with_the_wrong_fields_is_refused(self):
        with self.assertRaises(ValueError):
            event_text("nonfinite_loss")
        with self.assertRaises(ValueError):
            event_text("checkpoint", path="checkpoints/step_00000001.pt", form="scripted", extra=1)


if __name__ == "__main__":
    import sys
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
