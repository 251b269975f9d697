"""Logical-axis partitioning onto a `Mesh(('data', 'model'))` (T5X partitioner, today's API).

Networks name parameter and activation axes (see lever_jax/models/layers.py); rules here map
them to mesh axes, in priority order (flax assigns each mesh axis at most once per array, so an
activation ('batch', 'length', 'embed') under FSDP rules keeps 'data' on 'batch'):
  - 'data'  data parallel: batch over 'data', parameters replicated.
  - 'model' data + tensor parallel: batch over 'data'; vocab, mlp, heads, joined_kv over 'model'.
  - 'fsdp'  'model' + parameters' 'embed' axis over 'data' (ZeRO-3 / FSDP-style 2-D sharding).
Use `mesh_context(mesh, rules)` (jax.set_mesh + nn.logical_axis_rules) around tracing; the old
`with mesh:` silently disables the constraints, and `jax.make_mesh` defaults to Explicit axes,
so meshes are built with `jax.sharding.Mesh` directly.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import jax
import numpy as np
from flax import linen as nn
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

Rules = tuple[tuple[str, Optional[str]], ...]
log = logging.getLogger(__name__)

MESH_AXES = ("data", "model")
_TENSOR_PARALLEL: Rules = (("vocab", "model"), ("mlp", "model"), ("heads", "model"),
                           ("joined_kv", "model"))
RULES: Mapping[str, Rules] = {
    "data": (("batch", "data"),),
    "model": (("batch", "data"),) + _TENSOR_PARALLEL,
    "fsdp": (("batch", "data"), ("embed", "data")) + _TENSOR_PARALLEL,
}


def logical_axis_rules(strategy: str = "data") -> Rules:
    """The rules of a strategy: 'data', 'model' or 'fsdp' (unlisted names are replicated)."""
    if strategy not in RULES:
        raise ValueError(f"unknown partitioning strategy {strategy!r}; known: {sorted(RULES)}")
    return RULES[strategy]


def make_mesh(data: int = -1, model: int = 1,
              devices: Optional[Sequence[jax.Device]] = None) -> Mesh:
    """A ('data', 'model') mesh over `devices` (default all); data=-1 takes the rest."""
    devices = list(jax.devices() if devices is None else devices)
    if data == -1:
        if len(devices) % model:
            raise ValueError(f"{len(devices)} devices not divisible by model={model}")
        data = len(devices) // model
    if data * model > len(devices):
        raise ValueError(f"mesh data={data} x model={model} needs more than {len(devices)} devices")
    grid = np.asarray(devices[: data * model], dtype=object).reshape(data, model)
    return Mesh(grid, MESH_AXES)


@contextlib.contextmanager
def mesh_context(mesh: Mesh, rules: Rules) -> Iterator[None]:
    """Activate `mesh` and logical `rules` so nn.with_logical_constraint takes effect."""
    with jax.set_mesh(mesh), nn.logical_axis_rules(rules):
        yield


def _fit_spec(spec: P, shape: Sequence[int], mesh: Mesh, where: str) -> P:
    """Replicate any dimension that its mesh axes do not divide (e.g. 6 heads on model=4)."""
    out = []
    for dim, axes in zip(shape, tuple(spec) + (None,) * (len(shape) - len(spec))):
        names = (axes,) if isinstance(axes, str) else tuple(axes or ())
        size = int(np.prod([mesh.shape[a] for a in names])) if names else 1
        if names and dim % size:
            log.info("replicating %s: dim %d not divisible by mesh axes %s", where, dim, names)
            axes = None
        out.append(axes)
    return P(*out)


def unbox_abstract(tree: Any) -> Any:
    """Strip nn.LogicallyPartitioned boxes without applying constraints (safe inside a mesh
    context, and on ShapeDtypeStruct leaves)."""
    return jax.tree_util.tree_map(
        lambda x: x.unbox(apply_constraint=False) if isinstance(x, nn.LogicallyPartitioned) else x,
        tree, is_leaf=lambda x: isinstance(x, nn.LogicallyPartitioned))


def get_param_shardings(abstract_variables: Any, rules: Rules, mesh: Mesh) -> Any:
    """NamedSharding tree for (boxed) variables, e.g. jax.eval_shape(get_initial_variables).

    The result matches the *unboxed* tree (nn.unbox(abstract_variables)); leaves without
    logical names are replicated.
    """
    logical = nn.get_partition_spec(abstract_variables)
    mesh_specs = nn.logical_to_mesh(logical, rules)
    shapes = unbox_abstract(abstract_variables)
    paths = jax.tree_util.tree_flatten_with_path(shapes)[0]
    specs = jax.tree_util.tree_leaves(mesh_specs, is_leaf=lambda x: isinstance(x, P))
    if len(specs) != len(paths):
        raise ValueError("partition spec tree does not match the variables tree")
    shardings = [NamedSharding(mesh, _fit_spec(spec, leaf.shape, mesh,
                                                jax.tree_util.keystr(path)))
                 for (path, leaf), spec in zip(paths, specs)]
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shapes), shardings)


def get_opt_state_shardings(tx: Any, abstract_params: Any, param_shardings: Any,
                            mesh: Mesh) -> Any:
    """Shardings of an optax state: parameter-shaped leaves (mu, nu, ...) follow their
    parameter, everything else (counts) is replicated."""
    abstract_state = jax.eval_shape(tx.init, abstract_params)
    import optax  # local: partitioning does not otherwise need optax

    return optax.tree_map_params(tx, lambda _, sharding: sharding, abstract_state,
                                 param_shardings,
                                 transform_non_params=lambda _: NamedSharding(mesh, P()))


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Shard the leading (problem) axis of every batch array over 'data'."""
    return NamedSharding(mesh, P("data"))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def init_variables(init_fn: Callable[[jax.Array], Any], rng: jax.Array, mesh: Mesh,
                   rules: Rules) -> tuple[Any, Any]:
    """Run `init_fn(rng) -> boxed variables` directly into sharded memory.

    Returns (unboxed variables, their NamedSharding tree). Example:
    `init_variables(lambda r: model.get_initial_variables(r, shapes), rng, mesh, rules)`.
    """
    with mesh_context(mesh, rules):
        abstract = jax.eval_shape(init_fn, rng)
        shardings = get_param_shardings(abstract, rules, mesh)
        variables = jax.jit(lambda r: nn.unbox(init_fn(r)), out_shardings=shardings)(rng)
    return variables, shardings


# XLA:CPU options for the model steps (measured in docs/bench/train.md). jaxlib 0.10's XLA:CPU
# hands dots *and* reductions to YNNPACK fusions by default; its reductions were slow for a T5
# training step (e.g. 0.7 s to sum the relative-position-bias gradient over 8 layers), so only
# dots go to YNNPACK and reductions stay with XLA's own emitters (~25% faster training steps).
CPU_COMPILER_OPTIONS: Mapping[str, str] = {
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_DOT"}


@functools.lru_cache(maxsize=None)
def _cpu_options_supported(items: tuple[tuple[str, str], ...]) -> bool:
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(items)).lower(np.float32(0)).compile()
        return True
    except Exception as err:  # another jaxlib without these options: keep its defaults
        log.info("XLA:CPU compiler options %s not supported (%s); using defaults", items, err)
        return False


def compiler_options(mesh: Mesh) -> Optional[dict[str, str]]:
    """`CPU_COMPILER_OPTIONS` on a CPU mesh, unless XLA_FLAGS or LEVER_JAX_XLA_CPU_DEFAULTS=1
    say otherwise or this jaxlib does not know them; None elsewhere."""
    if any(d.platform != "cpu" for d in mesh.devices.flat):
        return None
    if os.environ.get("LEVER_JAX_XLA_CPU_DEFAULTS") == "1":
        return None
    flags = os.environ.get("XLA_FLAGS", "")
    options = {k: v for k, v in CPU_COMPILER_OPTIONS.items() if k not in flags}
    if not options or not _cpu_options_supported(tuple(sorted(options.items()))):
        return None
    return options


def sharded_jit(fn: Callable, mesh: Mesh, rules: Rules, in_shardings: Any, out_shardings: Any,
                static_argnums: Sequence[int] = (), donate_argnums: Sequence[int] = ()) -> Callable:
    """jax.jit with NamedSharding in/out shardings (pjit) that traces and runs under
    `mesh_context(mesh, rules)`, so logical activation constraints apply (and with
    `compiler_options(mesh)`)."""
    jitted = jax.jit(fn, in_shardings=in_shardings, out_shardings=out_shardings,
                     static_argnums=tuple(static_argnums), donate_argnums=tuple(donate_argnums),
                     compiler_options=compiler_options(mesh))

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with mesh_context(mesh, rules):
            return jitted(*args, **kwargs)

    def lower(*args: Any, **kwargs: Any) -> Any:
        with mesh_context(mesh, rules):
            return jitted.lower(*args, **kwargs)

    call.lower = lower  # type: ignore[attr-defined]
    return call


def maybe_initialize_distributed(enabled: bool, **kwargs: Any) -> bool:
    """Call jax.distributed.initialize(**kwargs) (multi-host TPU/GPU) when `enabled`.

    On Cloud TPU VMs no arguments are needed. Must run before any other JAX call.
    Returns whether the distributed runtime was initialised here.
    """
    if not enabled:
        return False
    # Cross-process collectives on CPU devices (tests, CPU clusters); TPU/GPU ignore this.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    address = kwargs.get("coordinator_address")
    if address and address.rsplit(":", 1)[0] in ("127.0.0.1", "localhost") and "coordinator_bind_address" not in kwargs:
        kwargs["coordinator_bind_address"] = address  # a local run: listen on loopback only
    jax.distributed.initialize(**{k: v for k, v in kwargs.items() if v is not None})
    log.info("jax.distributed: process %d of %d, %d local / %d global devices",
             jax.process_index(), jax.process_count(), jax.local_device_count(),
             jax.device_count())
    return True


def host_local_batch_to_global(batch: Mapping[str, Any], mesh: Mesh,
                               sharding: Optional[NamedSharding] = None) -> dict[str, jax.Array]:
    """Assemble each host's slice of the batch (leading axis = this host's problems) into
    global arrays sharded by `sharding` (default `batch_sharding(mesh)`).

    Each host passes its own rows; the global leading size is process_count x local size.
    Single-process, this is a sharded device_put.
    """
    sharding = sharding or batch_sharding(mesh)
    return {k: jax.make_array_from_process_local_data(sharding, np.asarray(v))
            for k, v in batch.items()}


def host_batch_slice(global_size: int) -> slice:
    """Rows of a global batch of `global_size` problems that this host should load."""
    n = jax.process_count()
    if global_size % n:
        raise ValueError(f"global batch {global_size} not divisible by {n} processes")
    per = global_size // n
    return slice(jax.process_index() * per, (jax.process_index() + 1) * per)
