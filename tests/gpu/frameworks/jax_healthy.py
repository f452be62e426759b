"""A healthy jitted JAX computation (matmul, softmax): its printed results must not change under culprit.

XLA resolves every driver symbol with dlsym, so this checks that culprit's interposition is transparent there.
Results are printed rounded, at the highest matmul precision, so that they compare byte for byte across runs.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def attention_weights(q, k):
    scores = jnp.matmul(q, k.T, precision=jax.lax.Precision.HIGHEST) / jnp.sqrt(q.shape[-1])
    return jax.nn.softmax(scores, axis=-1)


def main():
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        print("skipped: JAX sees no GPU", file=sys.stderr)
        return 77
    kq, kk = jax.random.split(jax.random.PRNGKey(0))
    q = jax.random.normal(kq, (64, 32), dtype=jnp.float32)
    k = jax.random.normal(kk, (48, 32), dtype=jnp.float32)
    w = attention_weights(q, k).block_until_ready()
    host = np.asarray(w)
    print("device %s" % next(iter(w.devices())).platform)
    print("shape %s" % (host.shape,))
    print("row sums %s" % sorted(set(round(float(s), 4) for s in host.sum(axis=-1))))
    print("argmax %s" % host.argmax(axis=-1)[:12].tolist())
    print("first row %s" % [round(float(x), 3) for x in host[0, :6]])
    print("total %.3f" % float((host * np.arange(48.0)).sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
