"""Replay tests need models whose source is a real file (TorchScript keeps each op's source
line): a test case writes its MODEL_SOURCE into a temporary module and imports it once. Each test
starts from the same random state, so the models it builds have the same initial weights on every
run and machine (a failure can be replayed)."""
import importlib
import os
import sys
import tempfile
import unittest


class ModelSourceTestCase(unittest.TestCase):
    MODEL_SOURCE = ""
    MODULE_NAME = ""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        with open(os.path.join(cls.tmp.name, cls.MODULE_NAME + ".py"), "w") as f:
            f.write(cls.MODEL_SOURCE)
        sys.path.insert(0, cls.tmp.name)
        cls.models = importlib.import_module(cls.MODULE_NAME)

    def setUp(self):
        import torch
        torch.manual_seed(0)

    @classmethod
    def tearDownClass(cls):
        sys.path.remove(cls.tmp.name)
        sys.modules.pop(cls.MODULE_NAME, None)
        cls.tmp.cleanup()
