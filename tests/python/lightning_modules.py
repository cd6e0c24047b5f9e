"""A LightningModule and its data for test_lightning_callback.py, in a module of their own: eager
replay imports this file to rebuild the module from its recorded class and hyperparameters."""
import importlib

import torch
import torch.nn as nn
import torch.nn.functional as F

FEATURES, CLASSES, BATCH = 8, 3, 16


def lightning_package(name):
    """pytorch_lightning or lightning.pytorch: the two packages Lightning ships as."""
    return importlib.import_module(name)


def classifier_class(package):
    class Classifier(package.LightningModule):
        def __init__(self, features=FEATURES, hidden=16, lr=0.05):
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential(nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                     nn.Linear(hidden, CLASSES))

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return Classifier


def named_batch_classifier_class(package):
    """A module whose batches are dicts ({"features", "label"}) and whose training_step returns a
    dict holding its loss, as Lightning allows; it logs through log_dict."""
    class NamedBatchClassifier(classifier_class(package)):
        def training_step(self, batch, batch_idx):
            logits = self(batch["features"])
            loss = F.cross_entropy(logits, batch["label"])
            self.log_dict({"train_loss": loss, "logit_max": logits.abs().max()})
            return {"loss": loss}

    return NamedBatchClassifier


def manual_classifier_class(package):
    """A module with manual optimization: its training_step steps the optimizer itself."""
    class ManualClassifier(classifier_class(package)):
        def __init__(self, **hparams):
            super().__init__(**hparams)
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            optimizer = self.optimizers()
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            return loss

    return ManualClassifier


def metric_classifier_class(package):
    """A module that updates a torchmetrics metric in training_step and logs it, as Lightning's own
    examples do (torchmetrics comes with lightning)."""
    import torchmetrics

    class MetricClassifier(classifier_class(package)):
        def __init__(self, **hparams):
            super().__init__(**hparams)
            self.accuracy = torchmetrics.classification.MulticlassAccuracy(num_classes=CLASSES)

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            self.accuracy(logits, y)
            self.log("train_accuracy", self.accuracy, on_step=True)
            return F.cross_entropy(logits, y)

    return MetricClassifier


# Importable by name, as eager replay needs: one class per Lightning package.
PlClassifier = classifier_class(lightning_package("pytorch_lightning"))
PlClassifier.__qualname__ = PlClassifier.__name__ = "PlClassifier"
LightningClassifier = classifier_class(lightning_package("lightning.pytorch"))
LightningClassifier.__qualname__ = LightningClassifier.__name__ = "LightningClassifier"


class Features(torch.utils.data.Dataset):
    """Three classes of 8 features; sample `nan_sample` has one NaN feature."""

    def __init__(self, size, nan_sample=None):
        self.size, self.nan_sample = size, nan_sample

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        y = int(torch.randint(0, CLASSES, (1,), generator=generator))
        x = torch.randn(FEATURES, generator=generator) + y
        if index == self.nan_sample:
            x[3] = float("nan")
        return x, y

NamedBatchClassifier = named_batch_classifier_class(lightning_package("lightning.pytorch"))
NamedBatchClassifier.__qualname__ = NamedBatchClassifier.__name__ = "NamedBatchClassifier"
ManualClassifier = manual_classifier_class(lightning_package("lightning.pytorch"))
ManualClassifier.__qualname__ = ManualClassifier.__name__ = "ManualClassifier"
MetricClassifier = metric_classifier_class(lightning_package("lightning.pytorch"))
MetricClassifier.__qualname__ = MetricClassifier.__name__ = "MetricClassifier"


class NamedFeatures(Features):
    """Features' samples as dicts, the batch a dict of tensors by name."""

    def __getitem__(self, index):
        x, y = super().__getitem__(index)
        return {"features": x, "label": y}
