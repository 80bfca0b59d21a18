"""``fingerprint`` hashes a tree of per-node SHA-256 digests (a dict's items as a sorted set, which
the reading leaves open); ``make_run`` seeds the global state inside ``torch.random.fork_rng`` (so
the caller's stream is left alone), draws every epoch's permutation up front, uses ``F.mse_loss``
and fingerprints the stacked (epochs, n) order tensor. Same seeds, same batches, same guarantees.
"""

import hashlib
from collections.abc import Mapping

import torch
import torch.nn.functional as F


def _node_digest(obj) -> bytes:
    """A 32-byte digest of ``obj``, built from the digests of its parts."""
    h = hashlib.sha256()
    if isinstance(obj, torch.Tensor):
        dense = obj.detach().cpu().resolve_conj().resolve_neg()
        dense = dense.clone(memory_format=torch.contiguous_format).reshape(-1)
        h.update(b"tensor\0" + str(dense.dtype).encode() + b"\0")
        h.update(",".join(str(int(s)) for s in obj.shape).encode() + b"\0")
        h.update(dense.view(torch.uint8).numpy())
    elif isinstance(obj, Mapping):
        items = sorted(_node_digest(k) + _node_digest(v) for k, v in obj.items())
        h.update(b"mapping\0" + str(len(items)).encode() + b"\0" + b"".join(items))
    elif isinstance(obj, (list, tuple)):
        h.update(b"sequence\0" + str(len(obj)).encode() + b"\0")
        for part in obj:
            h.update(_node_digest(part))
    elif isinstance(obj, str):
        h.update(b"text\0" + obj.encode("utf-8"))
    elif obj is None or isinstance(obj, (bool, int, float)):
        h.update(b"scalar\0" + type(obj).__name__.encode() + b"\0" + repr(obj).encode())
    else:
        raise TypeError(f"fingerprint does not know how to hash a {type(obj).__name__}")
    return h.digest()


def fingerprint(obj) -> str:
    """A stable hex digest of a tensor, a state dict, or a list/tuple/dict of them.

    Equal values, dtypes, shapes (and keys) give equal digests, whatever the objects'
    identity or memory layout; any change of a value, dtype, shape or key changes it.
    """
    return hashlib.sha256(b"fingerprint\0" + _node_digest(obj)).hexdigest()


def make_run(config, seed):
    """Train ``build_model(config)`` on ``make_data(config)`` with minibatch SGD and MSE.

    Seeds torch's global state with ``seed`` *before* the model is built, and shuffles each
    epoch with a generator seeded from ``seed``: two calls with equal arguments give
    bitwise-identical results, whatever random numbers were drawn before the call.
    """
    X, y = make_data(config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(config)
    start_fp = fingerprint(model.state_dict())
    shuffler = torch.Generator().manual_seed(seed)
    epoch_orders = [torch.randperm(config.n, generator=shuffler) for _ in range(config.epochs)]
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    step_losses = []
    for order in epoch_orders:
        for batch in torch.split(order, config.batch_size):
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(X[batch]), y[batch])
            loss.backward()
            optimizer.step()
            step_losses.append(loss.detach().item())
    order_fp = fingerprint(torch.stack(epoch_orders)) if epoch_orders else fingerprint([])
    return RunResult(step_losses, start_fp, order_fp)
