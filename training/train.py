"""Fine-tune all-MiniLM-L6-v2 contrastively on the mined (query, code, hard negative) triples.

    python training/train.py --base /tmp/kenning-train/base \\
        --pairs /tmp/kenning-train/pairs-train.json.xz --val /tmp/kenning-train/pairs-val.json.xz \\
        --out /tmp/kenning-train/run --max-seconds 300

Loss: InfoNCE over the batch (every other pair's code and every hard negative are negatives),
plus the code -> query direction; mean pooling over the attention mask, L2-normalised, as
kenning embeds. The learning rate warms up, then falls linearly to zero at ``--steps`` or at
``--max-seconds``, whichever comes first, so a run cut by time still ends annealed.
A checkpoint (weights, optimiser, step, data order) is written every ``--checkpoint-seconds``
to ``<out>/checkpoint.pt``; ``--resume`` continues from it. At the end the weights are written
as fp16 safetensors shards of at most 15 MiB (``model-0000N.safetensors``) with ``metrics.json``.
Runs on CUDA with bf16 autocast when present, else on the CPU.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer
from transformers import BertConfig, BertModel

QUERY_TOKENS = 64
DOCUMENT_TOKENS = 256  # what the shipped model reads, [CLS] and [SEP] included
SHARD_BYTES = 15 * 1024 * 1024


def load_pairs(path: Path) -> dict[str, Any]:
    with lzma.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def load_model(base: Path) -> BertModel:
    config = BertConfig.from_json_file(str(base / "config.json"))
    model = BertModel(config, add_pooling_layer=False)
    state: dict[str, torch.Tensor] = {}
    for shard in sorted(base.glob("*.safetensors")):
        state.update(load_file(str(shard)))
    state = {k.removeprefix("bert.").removeprefix("0.auto_model."): v.float()
             for k, v in state.items() if "pooler" not in k and "position_ids" not in k}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if "position_ids" not in m]
    if missing or unexpected:
        sys.exit(f"weights do not fit the config: missing {missing[:5]}, unexpected "
                 f"{unexpected[:5]}")
    return model


class Encoder:
    def __init__(self, tokenizer_path: Path, device: torch.device) -> None:
        self.tok = Tokenizer.from_file(str(tokenizer_path))
        self.tok.no_padding()
        self.tok.no_truncation()
        self.device = device

    def batch(self, texts: list[str], limit: int) -> dict[str, torch.Tensor]:
        rows = [[101, *e.ids[: limit - 2], 102]
                for e in self.tok.encode_batch(texts, add_special_tokens=False)]
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}


def embed(model: BertModel, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    hidden = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                   token_type_ids=torch.zeros_like(inputs["input_ids"])).last_hidden_state
    mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return F.normalize(pooled.float(), dim=-1)


def contrastive_loss(q: torch.Tensor, d: torch.Tensor, n: torch.Tensor | None,
                     scale: float) -> torch.Tensor:
    candidates = d if n is None else torch.cat([d, n])
    labels = torch.arange(len(q), device=q.device)
    forward = F.cross_entropy(scale * q @ candidates.T, labels)
    backward = F.cross_entropy(scale * d @ q.T, labels)
    return forward + 0.5 * backward


@torch.no_grad()
def validate(model: BertModel, enc: Encoder, val: dict[str, Any], limit: int,
             autocast: Any) -> dict[str, float]:
    """Recall@1 and MRR of each validation query among all validation pairs' code."""
    model.eval()
    pairs = val["pairs"][:limit]
    docs = [val["documents"][p[1]] for p in pairs]
    queries = [p[0] for p in pairs]
    q_vecs, d_vecs = [], []
    with autocast():
        for i in range(0, len(pairs), 128):
            q_vecs.append(embed(model, enc.batch(queries[i: i + 128], QUERY_TOKENS)))
            d_vecs.append(embed(model, enc.batch(docs[i: i + 128], DOCUMENT_TOKENS)))
    q, d = torch.cat(q_vecs), torch.cat(d_vecs)
    scores = q @ d.T
    target = scores.diagonal().unsqueeze(1)
    ranks = (scores > target).sum(1) + 1
    model.train()
    return {"val_pairs": len(pairs), "recall@1": (ranks == 1).float().mean().item(),
            "mrr": (1.0 / ranks.float()).mean().item()}


def save_shards(model: BertModel, out: Path) -> list[str]:
    """fp16 safetensors shards under SHARD_BYTES each, small files to copy off a training host."""
    state = {k: v.detach().to(torch.float16).contiguous().cpu()
             for k, v in model.state_dict().items() if "position_ids" not in k}
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in state.items():
        nbytes = tensor.numel() * tensor.element_size()
        if nbytes > SHARD_BYTES:  # the word embeddings: split by rows, joined again on load
            rows = max(1, SHARD_BYTES // (tensor.shape[1] * tensor.element_size()))
            for part, start in enumerate(range(0, tensor.shape[0], rows)):
                shards.append({f"{name}::part{part:02d}": tensor[start: start + rows].clone()})
            shards.append({})
            size = 0
            continue
        if size + nbytes > SHARD_BYTES:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += nbytes
    names = []
    for i, shard in enumerate(s for s in shards if s):
        name = f"model-{i:05d}.safetensors"
        save_file(shard, str(out / name))
        names.append(name)
    return names


def join_parts(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Undo ``save_shards``' row split of large tensors."""
    joined: dict[str, list[tuple[str, torch.Tensor]]] = {}
    out = {}
    for key, value in state.items():
        if "::part" in key:
            base, part = key.split("::part")
            joined.setdefault(base, []).append((part, value))
        else:
            out[key] = value
    for base, parts in joined.items():
        out[base] = torch.cat([v for _, v in sorted(parts)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="config.json, tokenizer.json, weights")
    ap.add_argument("--pairs", type=Path, required=True)
    ap.add_argument("--val", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--warmup", type=float, default=0.05, help="fraction of the run")
    ap.add_argument("--scale", type=float, default=20.0, help="inverse temperature")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=0, help="stop (annealed) after this")
    ap.add_argument("--checkpoint-seconds", type=float, default=600)
    ap.add_argument("--val-limit", type=int, default=2000)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True

    def autocast() -> Any:
        return torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda)

    data = load_pairs(args.pairs)
    val = load_pairs(args.val) if args.val else None
    pairs, documents = data["pairs"], data["documents"]
    steps_per_epoch = len(pairs) // args.batch
    total = max(1, math.ceil(steps_per_epoch * args.epochs))
    if args.max_steps:
        total = min(total, args.max_steps)
    model = load_model(args.base).to(device)
    model.train()
    enc = Encoder(args.base / "tokenizer.json", device)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    order = list(range(len(pairs)))
    random.Random(args.seed).shuffle(order)
    step, elapsed_before = 0, 0.0
    ckpt = args.out / "checkpoint.pt"
    if args.resume and ckpt.exists():
        saved = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(saved["model"])
        optimiser.load_state_dict(saved["optimiser"])
        step, elapsed_before, order = saved["step"], saved["elapsed"], saved["order"]
        print(f"[train] resumed at step {step}", flush=True)
    metrics: dict[str, Any] = {"pairs": len(pairs), "documents": len(documents),
                               "batch": args.batch, "lr": args.lr, "scale": args.scale,
                               "device": torch.cuda.get_device_name() if cuda else "cpu",
                               "planned_steps": total, "log": []}
    if val and step == 0:
        metrics["val_before"] = validate(model, enc, val, args.val_limit, autocast)
        print(f"[train] validation before: {metrics['val_before']}", flush=True)
    started = time.perf_counter()
    last_ckpt = started
    seen = 0

    def progress() -> float:
        by_steps = step / total
        by_time = ((elapsed_before + time.perf_counter() - started) / args.max_seconds
                   if args.max_seconds else 0.0)
        return max(by_steps, by_time)

    while step < total and progress() < 1.0:
        at = (step * args.batch) % max(1, len(order) - args.batch + 1)
        batch = [pairs[i] for i in order[at: at + args.batch]]
        frac = progress()
        lr = args.lr * min(1.0, frac / args.warmup) * (1 - frac) if args.warmup else \
            args.lr * (1 - frac)
        for group in optimiser.param_groups:
            group["lr"] = lr
        with autocast():
            q = embed(model, enc.batch([p[0] for p in batch], QUERY_TOKENS))
            d = embed(model, enc.batch([documents[p[1]] for p in batch], DOCUMENT_TOKENS))
            negatives = [documents[p[2]] for p in batch if p[2] >= 0]
            n = embed(model, enc.batch(negatives, DOCUMENT_TOKENS)) if negatives else None
        loss = contrastive_loss(q, d, n, args.scale)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        step += 1
        seen += len(batch)
        now = time.perf_counter()
        if step % 20 == 0 or step == 1:
            entry = {"step": step, "loss": round(loss.item(), 4), "lr": lr,
                     "pairs_per_s": round(seen / (now - started), 1),
                     "seconds": round(elapsed_before + now - started, 1)}
            metrics["log"].append(entry)
            print(f"[train] {entry}", flush=True)
        if now - last_ckpt > args.checkpoint_seconds:
            torch.save({"model": model.state_dict(), "optimiser": optimiser.state_dict(),
                        "step": step, "elapsed": elapsed_before + now - started,
                        "order": order}, ckpt)
            last_ckpt = now
    metrics["steps"] = step
    metrics["train_seconds"] = round(elapsed_before + time.perf_counter() - started, 1)
    metrics["shards"] = save_shards(model, args.out)
    if val:
        metrics["val_after"] = validate(model, enc, val, args.val_limit, autocast)
        print(f"[train] validation after: {metrics['val_after']}", flush=True)
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(f"[train] done: {step} steps in {metrics['train_seconds']} s", flush=True)


if __name__ == "__main__":
    main()
