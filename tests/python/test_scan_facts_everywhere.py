"""The facts read beside a run (an optimizer state: Adam epsilon domination) reach the scan the
same way in `nanscope scan` and in the report (core/open/RunScan.h, which the window uses too):
before, only the scan command read them, so the report of the same run lacked the incident. Each
rank of a multi-rank run and each compared run is scanned the same way: before, both took a scan
entry point without the facts, and Adam epsilon was never judged there."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import torch
import torch.nn.functional as F

import recorder_fixtures as fx
from nanscope_recorder import Recorder
from nanscope_recorder import distributed

BINARY = os.environ.get("NANSCOPE_BINARY")


@unittest.skipUnless(BINARY, "NANSCOPE_BINARY not set")
class ScanFactsEverywhere(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls._tmp.name, "run")
        model = fx.bn_mlp()
        # eps far above every sqrt(v_hat) here: Adam's update is eps-dominated everywhere.
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1.0)
        with Recorder(cls.run_dir, model, loss_name="cross_entropy", checkpoint_every=0, activations_every=0,
                      batch_ring=0) as rec:
            for step in range(30):
                x, y = fx.batch(step)
                rec.begin_step(step, inputs=x, targets=y)
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                rec.end_step(loss, lr=1e-3)
                opt.step()
        torch.save(opt.state_dict(), os.path.join(cls.run_dir, "optimizer.pt"))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def kinds(self, incidents):
        return [i["kind"] for i in incidents]

    def test_scan_and_report_both_report_the_epsilon_domination(self):
        scanned = subprocess.run([BINARY, "scan", self.run_dir, "--json"], capture_output=True, text=True,
                                 timeout=120)
        self.assertIn(scanned.returncode, (0, 1), scanned.stderr)
        self.assertIn("adam_epsilon", self.kinds(json.loads(scanned.stdout)["incidents"]))
        out = os.path.join(self._tmp.name, "report.json")
        reported = subprocess.run([BINARY, "report", self.run_dir, "-o", out, "--no-replay"], capture_output=True,
                                  text=True, timeout=300, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
        self.assertEqual(reported.returncode, 0, reported.stderr)
        with open(out) as f:
            report = json.load(f)
        incidents = report.get("incidents") or report.get("scan", {}).get("incidents", [])
        self.assertIn("adam_epsilon", self.kinds(incidents), "the report scans with the same facts")

    def test_every_rank_of_a_multi_rank_run_is_judged_with_its_own_optimizer_state(self):
        job = os.path.join(self._tmp.name, "job")
        ranks = []
        for rank in range(2):
            shutil.copytree(self.run_dir, os.path.join(job, distributed.rank_dir_name(rank)))
            ranks.append({"rank": rank, "host": "localhost", "pid": 1, "directory": distributed.rank_dir_name(rank)})
        with open(os.path.join(job, distributed.MANIFEST_NAME), "w") as f:
            json.dump({"format": distributed.MANIFEST_FORMAT, "format_version": distributed.MANIFEST_VERSION,
                       "world_size": 2, "backend": "gloo", "ranks": ranks}, f)
        scanned = subprocess.run([BINARY, "scan", job, "--json"], capture_output=True, text=True, timeout=120)
        self.assertIn(scanned.returncode, (0, 1), scanned.stderr)
        result = json.loads(scanned.stdout)
        self.assertEqual(len(result.get("ranks", [])), 2, "scanned as a multi-rank run")
        epsilon = [i for i in result["incidents"] if i["kind"] == "adam_epsilon"]
        self.assertTrue(epsilon, [i["kind"] for i in result["incidents"]])

    def test_a_compared_run_is_judged_with_its_optimizer_state(self):
        healthy = os.path.join(os.environ["NANSCOPE_TEST_RUNS"], "healthy")
        compared = subprocess.run([BINARY, "compare", healthy, self.run_dir, "--json"], capture_output=True,
                                  text=True, timeout=120)
        self.assertEqual(compared.returncode, 0, compared.stderr)
        runs = json.loads(compared.stdout)["runs"]
        self.assertEqual(len(runs), 2)
        self.assertIn("adam_epsilon", self.kinds(runs[1]["incidents"]), "the compared run, scanned as `scan` does")


if __name__ == "__main__":
    unittest.main(verbosity=2)
