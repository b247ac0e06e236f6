"""The key primitive of keyed draws: secret, stable derivations, commitment, files."""

import os

import pytest

from discoverygym.core.keys import (
    BadKey,
    Key,
    key_from_environment,
    new_key,
    parse_key,
    read_key_file,
    write_key_file,
)


def test_derive_depends_on_key_and_identity():
    a, b = Key(b"a" * 32), Key(b"b" * 32)
    assert a.derive("gravity", "A", 0) == a.derive("gravity", "A", 0)
    assert a.derive("gravity", "A", 0) != b.derive("gravity", "A", 0)
    assert a.derive("gravity", "A", 0) != a.derive("gravity", "A", 1)
    assert 0 <= a.derive("x") < 2**128


def test_repr_and_id_hide_the_secret():
    key = Key(bytes(range(32)))
    assert key.hex() not in repr(key)
    assert key.hex() not in key.id and key.hex() not in key.commitment
    assert key.id.startswith("key-") and key.commitment.startswith(key.id[4:])


def test_key_file_round_trip_is_private_and_never_overwrites(tmp_path):
    key = new_key()
    path = tmp_path / "k"
    write_key_file(path, key)
    assert os.stat(path).st_mode & 0o077 == 0
    assert read_key_file(path) == key
    with pytest.raises(FileExistsError):
        write_key_file(path, new_key())


@pytest.mark.parametrize("content", [b"not hex", b"ab", b"\xff\xfe", b"0" * 10_000])
def test_bad_key_files_are_one_line_errors(tmp_path, content):
    path = tmp_path / "k"
    path.write_bytes(content)
    with pytest.raises(BadKey) as err:
        read_key_file(path)
    assert "\n" not in str(err.value)


def test_missing_key_file_and_environment(tmp_path):
    with pytest.raises(BadKey, match="cannot read"):
        read_key_file(tmp_path / "absent")
    key = new_key()
    assert key_from_environment({}) is None
    assert key_from_environment({"DISCOVERYGYM_KEY": key.hex()}) == key
    assert parse_key(key.hex() + "\n") == key
