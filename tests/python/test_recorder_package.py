"""The recorder installs the way Python packages do: `pip install ./python` (offline: its build
backend needs nothing from a package index) and `pip install -e ./python`, and the installed
package carries its data (the capture policy table)."""
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
sys.path.insert(0, os.path.abspath(PYTHON_DIR))
import nanscope_build  # noqa: E402


def clean_environment():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the tests' own path would hide a broken install
    env["PIP_NO_INDEX"] = "1"  # nothing may come from a package index
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class RecorderPackage(unittest.TestCase):
    def test_the_wheel_holds_every_module_and_the_capture_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            name = nanscope_build.build_wheel(tmp)
            with zipfile.ZipFile(os.path.join(tmp, name)) as wheel:
                names = set(wheel.namelist())
                record = wheel.read("nanscope_recorder-0.1.0.dist-info/RECORD").decode()
        package = os.path.join(PYTHON_DIR, "nanscope_recorder")
        for module in os.listdir(package):
            if module.endswith((".py", ".json")):
                self.assertIn("nanscope_recorder/" + module, names)
                self.assertIn("nanscope_recorder/" + module + ",sha256=", record)
        self.assertIn("nanscope_recorder/capture_policy.json", names)

    def pip_install(self, *args):
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "venv")
            made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                                  capture_output=True, text=True)
            if made.returncode != 0:
                self.skipTest("no venv with pip here (python3-venv): %s" % made.stderr.strip()[-200:])
            python = os.path.join(venv, "bin", "python")
            installed = subprocess.run([python, "-m", "pip", "install", *args, os.path.abspath(PYTHON_DIR)],
                                       capture_output=True, text=True, env=clean_environment(), cwd=tmp, timeout=300)
            self.assertEqual(installed.returncode, 0, installed.stdout[-2000:] + installed.stderr[-2000:])
            probe = subprocess.run(
                [python, "-c", "import nanscope_recorder, nanscope_recorder.capture as c; "
                               "print(nanscope_recorder.__file__); print(c.DEFAULTS['spike_captures'])"],
                capture_output=True, text=True, env=clean_environment(), cwd=tmp, timeout=300)
            self.assertEqual(probe.returncode, 0, probe.stderr[-2000:])
            return probe.stdout.split("\n")

    def test_pip_install_works_offline(self):
        where, captures = self.pip_install()[:2]
        self.assertIn("site-packages", where)
        self.assertEqual(int(captures), nanscope_build_defaults()["spike_captures"])

    def test_pip_install_editable_works_offline(self):
        where = self.pip_install("-e")[0]
        self.assertEqual(os.path.realpath(os.path.dirname(where)),
                         os.path.realpath(os.path.join(PYTHON_DIR, "nanscope_recorder")))


def nanscope_build_defaults():
    import json
    with open(os.path.join(PYTHON_DIR, "nanscope_recorder", "capture_policy.json")) as f:
        return json.load(f)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
