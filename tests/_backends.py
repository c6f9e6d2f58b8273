"""The backend registry as test parameters.

Every registered backend takes part in the shared tests; one whose engine is
not installed is skipped with the install hint (not failed, and not silently
left out of the parameter list).
"""

import pytest

from rankkit._backends import BACKENDS, get_backend


def _missing_engine(name):
    """The install hint when ``name``'s engine is missing, else None."""
    try:
        get_backend(name)
    except ImportError as exc:
        return str(exc)
    return None


def installed(name):
    return _missing_engine(name) is None


def installed_backends():
    """Names of the registered backends whose engines are installed."""
    return [name for name in BACKENDS if installed(name)]


#: Every registered backend as a pytest parameter, skipped when its engine is missing.
BACKENDS_UNDER_TEST = [
    name if installed(name) else pytest.param(name, marks=pytest.mark.skip(reason=_missing_engine(name)))
    for name in BACKENDS
]
