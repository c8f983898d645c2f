"""A metadata filter key holding a lone surrogate (invalid Unicode, never a stored key) is a ValidationError in
list, count, find and delete_all, not a UnicodeEncodeError from the SQLite driver."""

from __future__ import annotations

import pytest

from agentbase.errors import ValidationError

from .conftest import make_db


@pytest.mark.parametrize("call", ["list", "count", "find", "delete_all"])
def test_surrogate_metadata_filter_key_is_a_validation_error(tmp_path, call):
    db = make_db(tmp_path / "k.db")
    try:
        db.sync.add_memory("hello there", metadata={"a": "b"}, user_id="u")
        flt = {"metadata": {"k\ud800": "x"}, "user_id": "u"}
        with pytest.raises(ValidationError, match="metadata filter key"):
            if call == "find":
                db.sync.find("hello", **flt)
            else:
                getattr(db.sync, call)(**flt)
        assert db.sync.count(user_id="u") == 1  # nothing deleted
    finally:
        db.sync.close()
