"""Give each schemathesis operation test its own node id.

schemathesis names each generated test `test_...[GET /api/v1/...]`, but passes the bare function
name as `originalname`, and pytest 9.2 builds a node id from `originalname` and the parametrisation:
all operations would share one id. Under `pytest -n 2 --dist loadgroup` (scripts/test.sh) they then
collapse into one reported test. This puts the operation back into each id; it does nothing where
pytest or schemathesis already get it right.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        label = getattr(item, "operation_label", None)
        node_id = getattr(item, "_id", None)
        if label and node_id is not None and getattr(node_id, "params", "") is None:
            item._id = node_id.with_params(label)
