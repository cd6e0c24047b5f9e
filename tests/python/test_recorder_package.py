"""The recorder installs the way Python packages do, with a standard build backend (flit_core):
`pip install ./python` and `pip install -e ./python` into an environment with torch 2.x (the
tests' .venv), offline (--no-build-isolation: the backend is pinned in requirements.txt), and the
installed package carries its data (the capture policy and run format tables)."""
import os
import subprocess
import sys
import sysconfig
import tempfile
import unittest
import zipfile

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")


def clean_environment():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the tests' own path would hide a broken install
    env["PIP_NO_INDEX"] = "1"  # nothing may come from a package index
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class RecorderPackage(unittest.TestCase):
    def test_the_wheel_holds_every_module_and_the_capture_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                                    "-w", tmp, os.path.abspath(PYTHON_DIR)],
                                   capture_output=True, text=True, env=clean_environment(), timeout=300)
            self.assertEqual(built.returncode, 0, built.stdout[-2000:] + built.stderr[-2000:])
            name = next(n for n in os.listdir(tmp) if n.endswith(".whl"))
            with zipfile.ZipFile(os.path.join(tmp, name)) as wheel:
                names = set(wheel.namelist())
                record = wheel.read("nanscope_recorder-0.1.0.dist-info/RECORD").decode()
                metadata = wheel.read("nanscope_recorder-0.1.0.dist-info/METADATA").decode()
        self.assertIn("Requires-Dist: torch>=1.13", metadata)
        self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")], "no byte-code in the wheel")
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
            # A user's environment that trains: the packages of the environment running this test
            # (torch 2.x, h5py, numpy, and the build backend), seen from the new one, as a venv made
            # from a venv does not see them by --system-site-packages.
            purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                     capture_output=True, text=True).stdout.strip()
            with open(os.path.join(purelib, "training_environment.pth"), "w") as pth:
                pth.write(sysconfig.get_paths()["purelib"] + "\n")
            # --no-deps: the environment has the recorder's dependencies, and pip would otherwise check
            # torch's own against an index this test keeps closed (the wheel test checks they are declared).
            installed = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", *args,
                                        os.path.abspath(PYTHON_DIR)],
                                       capture_output=True, text=True, env=clean_environment(), cwd=tmp, timeout=300)
            self.assertEqual(installed.returncode, 0, installed.stdout[-2000:] + installed.stderr[-2000:])
            probe = subprocess.run(
                [python, "-c", "import torch, nanscope_recorder, nanscope_recorder.capture as c; "
                               "print(nanscope_recorder.__file__); print(c.DEFAULTS['spike_captures']); "
                               "print(torch.__version__)"],
                capture_output=True, text=True, env=clean_environment(), cwd=tmp, timeout=300)
            self.assertEqual(probe.returncode, 0, probe.stderr[-2000:])
            return probe.stdout.split("\n")

    def test_pip_install_into_a_torch2_environment_works_offline(self):
        where, captures, torch_version = self.pip_install()[:3]
        self.assertIn("site-packages", where)
        self.assertGreaterEqual(int(torch_version.split(".")[0]), 2, "installed beside torch 2.x")
        self.assertEqual(int(captures), capture_table_defaults()["spike_captures"])

    def test_pip_install_editable_works_offline(self):
        where = self.pip_install("-e")[0]
        self.assertEqual(os.path.realpath(os.path.dirname(where)),
                         os.path.realpath(os.path.join(PYTHON_DIR, "nanscope_recorder")))


def capture_table_defaults():
    import json
    with open(os.path.join(PYTHON_DIR, "nanscope_recorder", "capture_policy.json")) as f:
        return json.load(f)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
