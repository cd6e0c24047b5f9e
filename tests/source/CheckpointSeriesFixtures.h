#pragma once

// The checkpoints the series tests read, made at test time by Debian's python3-torch (never
// committed): Hugging Face checkpoint-N folders (safetensors written by hand: the format is an
// 8-byte little-endian header length, a JSON header and the raw bytes, and Debian has no python3
// safetensors), a sharded one, Lightning .ckpt files and optimizer state_dicts from real
// torch.optim steps.

namespace nanscope::test {

inline constexpr const char* kCheckpointFixtureScript = R"PY(
import json, os, shutil, struct, sys
import torch

out = sys.argv[1]
torch.manual_seed(0)

def save_safetensors(tensors, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):  # the safetensors library sorts by name too
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            data, dtype = t.view(torch.int16).numpy().tobytes(), "BF16"
        else:
            data, dtype = t.float().numpy().tobytes(), "F32"
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))

# --- Hugging Face checkpoint-N folders --------------------------------------------------------
weights = {
    "embed.weight": torch.randn(5, 4).to(torch.bfloat16),
    "layers.0.weight": torch.randn(4, 4), "layers.0.bias": torch.randn(4),
    "layers.1.weight": torch.randn(4, 4), "layers.1.bias": torch.randn(4),
    "layers.10.weight": torch.randn(4, 4),
}
def nudged(ws):
    return {k: (v.float() + 0.01 * torch.randn(v.shape)).to(v.dtype) for k, v in ws.items()}
history = {}
for step in (10, 20, 30, 40):
    if step > 10:
        weights = nudged(weights)
    if step == 20:
        weights["layers.1.weight"] = history[10]["layers.1.weight"] * 10  # ratio (10w - w) / w = 9
    current = {k: v.clone() for k, v in weights.items()}
    if step == 30:
        current["layers.0.weight"][1, 2] = float("nan")
    history[step] = current
    save_safetensors(current, f"{out}/hf/checkpoint-{step}/model.safetensors")
with open(f"{out}/hf/checkpoint-20/model.safetensors", "rb") as f:
    whole = f.read()
os.makedirs(f"{out}/hf/checkpoint-25", exist_ok=True)
with open(f"{out}/hf/checkpoint-25/model.safetensors", "wb") as f:
    f.write(whole[: len(whole) // 2])

# --- a sharded checkpoint: the same weights as hf/ in two shards with an index -------------------
for step in (10, 20):
    first = {k: v for k, v in history[step].items() if k.startswith("layers.1")}
    second = {k: v for k, v in history[step].items() if not k.startswith("layers.1")}
    folder = f"{out}/sharded/checkpoint-{step}"
    save_safetensors(first, f"{folder}/model-00001-of-00002.safetensors")
    save_safetensors(second, f"{folder}/model-00002-of-00002.safetensors")
    weight_map = {k: "model-00001-of-00002.safetensors" for k in first}
    weight_map.update({k: "model-00002-of-00002.safetensors" for k in second})
    with open(f"{folder}/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
os.makedirs(f"{out}/sharded/checkpoint-30", exist_ok=True)
shutil.copy(f"{out}/sharded/checkpoint-20/model.safetensors.index.json", f"{out}/sharded/checkpoint-30/")
shutil.copy(f"{out}/sharded/checkpoint-20/model-00001-of-00002.safetensors", f"{out}/sharded/checkpoint-30/")

# --- Lightning .ckpt files with BatchNorm, the later one's running_var collapsed ----------------
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 3, 3)
        self.bn = torch.nn.BatchNorm2d(3)
        self.fc = torch.nn.Linear(3, 2)
    def forward(self, x):
        return self.fc(self.bn(self.conv(x)).mean((2, 3)))
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
os.makedirs(f"{out}/lightning/checkpoints", exist_ok=True)
for step in (5, 10):
    net.train()
    loss = net(torch.randn(4, 1, 6, 6)).square().mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if step == 10:
        with torch.no_grad():
            net.bn.running_var.zero_()
    torch.save({"epoch": 0, "global_step": step, "pytorch-lightning_version": "2.1.0",
                "state_dict": net.state_dict(), "optimizer_states": [opt.state_dict()], "lr_schedulers": []},
               f"{out}/lightning/checkpoints/epoch=0-step={step}.ckpt")
with open(f"{out}/lightning/checkpoints/epoch=0-step=10.ckpt", "rb") as f:
    whole = f.read()
with open(f"{out}/lightning/checkpoints/epoch=0-step=7.ckpt", "wb") as f:
    f.write(whole[: len(whole) * 2 // 3])

# --- optimizer.pt from real AdamW steps ------------------------------------------------------
torch.manual_seed(1)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
x, y = torch.randn(8, 4), torch.randn(8, 2)
def train(optimizer, steps):
    for _ in range(steps):
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        model[2].bias.grad.zero_()  # a parameter whose gradient is zero: all of it below eps
        optimizer.step()
    return {n: (p.detach() - before[n]).square().mean().sqrt().item() for n, p in model.named_parameters()}
os.makedirs(f"{out}/opt", exist_ok=True)
adamw = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-6, weight_decay=0.0)
last_update = train(adamw, 3)
torch.save(adamw.state_dict(), f"{out}/opt/optimizer.pt")
with open(f"{out}/opt/last_update_rms.txt", "w") as f:
    for name, rms in last_update.items():
        f.write(f"{name} {rms!r}\n")

# The Hugging Face Trainer's two groups: weights with decay, then biases without.
decay = [p for n, p in model.named_parameters() if "bias" not in n]
no_decay = [p for n, p in model.named_parameters() if "bias" in n]
grouped = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
train(grouped, 1)
torch.save(grouped.state_dict(), f"{out}/opt/grouped_optimizer.pt")

# A Trainer folder as transformers writes it without safetensors: pytorch_model.bin keeps the
# model's order, so its optimizer.pt can be named.
for step in (1, 2):
    train(grouped, 1)
    os.makedirs(f"{out}/hfbin/checkpoint-{step}", exist_ok=True)
    torch.save(model.state_dict(), f"{out}/hfbin/checkpoint-{step}/pytorch_model.bin")
    torch.save(grouped.state_dict(), f"{out}/hfbin/checkpoint-{step}/optimizer.pt")

# A PEFT adapter: LoRA's B starts at zero, so its first update is infinitely large relative to it.
lora_a = torch.randn(2, 4)
for step, lora_b in ((1, torch.zeros(3, 2)), (2, torch.full((3, 2), 0.01))):
    save_safetensors({"base_model.model.0.lora_A.weight": lora_a, "base_model.model.0.lora_B.weight": lora_b},
                     f"{out}/peft/checkpoint-{step}/adapter_model.safetensors")

sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
train(sgd, 1)
torch.save(sgd.state_dict(), f"{out}/opt/sgd_optimizer.pt")
print("fixtures written")
)PY";

} // namespace nanscope::test
