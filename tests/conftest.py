"""Shared pytest settings: deterministic hypothesis profile without per-example deadlines
(JIT compilation makes first examples slow on a 2-core CPU)."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "lever", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("lever")
except ImportError:  # hypothesis is a dev extra
    pass
