"""Ratings files are untrusted (issue #28): read through core/untrusted (never blocking, size bounded), every value
type-checked by a strict schema, every refusal a classified RatingsError (a ClonebenchError) naming the file and
the JSON location, never a traceback and never a long value echoed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clonebench.core.errors import ClonebenchError
from clonebench.listening.build import KEY, KEY_SCHEMA
from clonebench.listening.design import SCREENING
from clonebench.listening.integrity import sealed
from clonebench.listening.ratings import RATINGS_SCHEMA, RatingsError, check_sheet, load_key, load_sheets

REPO = Path(__file__).resolve().parents[2]
SALT = "00" * 16
TEST_ID = "lt-0123456789ab"
TRIALS = [{"trial_id": f"t{k}", "phase": "test", "type": "rating", "item": f"p{k}", "clips": [f"c{k}"],
           "reference": None, "repeat_of": None, "systems": []} for k in range(3)]


def make_key(folder: Path) -> dict:
    key = {"schema": KEY_SCHEMA, "test_id": TEST_ID, "kind": "mos", "title": "t", "salt": SALT,
           "systems": [{"code": "S1", "label": "one", "role": "run"}],
           "sampling": {"items": [{"pair_id": f"p{k}"} for k in range(3)]}, "screening": dict(SCREENING),
           "clips": {f"c{k}": {"role": "test", "system": "S1"} for k in range(3)}, "trials": TRIALS}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / KEY).write_text(json.dumps(key))
    (folder / "ratings").mkdir(exist_ok=True)
    return key


def payload(**change) -> dict:
    records = [{"trial": t["trial_id"], "position": k, "reference": None, "clips": list(t["clips"]),
                "plays": {}, "ends": {}, "shown_ms": 1000 * k, "answered_ms": 1000 * k + 900, "rating": 4}
               for k, t in enumerate(TRIALS)]
    data = {"schema": RATINGS_SCHEMA, "test_id": TEST_ID, "kind": "mos", "rater_id": "r1", "user_agent": "ua",
            "started_at": "x", "finished_at": "y", "training": [], "trials": records}
    data.update(change)
    return data


@pytest.fixture
def test_dir(tmp_path) -> Path:
    make_key(tmp_path / "test")
    return tmp_path / "test"


def refused(test_dir: Path, path: Path) -> str:
    with pytest.raises(RatingsError) as caught:
        load_sheets(load_key(test_dir), [path])
    message = str(caught.value)
    assert "Traceback" not in message and len(message) < 4000
    assert str(path) in message
    return message


def write_raw(test_dir: Path, text: str | bytes, name: str = "bad.json") -> Path:
    path = test_dir / "ratings" / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def write_sealed(test_dir: Path, data: dict, name: str = "bad.json") -> Path:
    return write_raw(test_dir, json.dumps(sealed(SALT, data)), name)


def test_a_good_file_is_accepted(test_dir):
    sheets = load_sheets(load_key(test_dir), [write_sealed(test_dir, payload(), "good.json")])
    assert sheets[0].rater == "r1" and set(sheets[0].records) == {"t0", "t1", "t2"}


def test_an_answer_that_is_a_float_with_400_digits(test_dir):
    text = json.dumps(sealed(SALT, payload())).replace('"rating": 4', '"rating": 4.' + "1" * 400, 1)
    message = refused(test_dir, write_raw(test_dir, text))
    assert "1" * 100 not in message


def test_a_resealed_float_answer_names_its_location(test_dir):
    data = payload()
    data["trials"][1]["rating"] = 4.5
    message = refused(test_dir, write_sealed(test_dir, data))
    assert "ratings.trials[1].rating: Input should be a valid integer" in message


def test_a_bool_where_a_number_is_expected(test_dir):
    data = payload()
    data["trials"][0]["shown_ms"] = True
    message = refused(test_dir, write_sealed(test_dir, data))
    assert "ratings.trials[0].shown_ms: Input should be a valid integer" in message


def test_a_dict_as_rater_id(test_dir):
    message = refused(test_dir, write_sealed(test_dir, payload(rater_id={"x" * 5000: 1})))
    assert "ratings.rater_id: Input should be a valid string" in message and "x" * 100 not in message


def test_a_list_as_trial_id_and_a_huge_integer(test_dir):
    data = payload()
    data["trials"][0]["trial"] = ["t0"]
    message = refused(test_dir, write_sealed(test_dir, data))
    assert "ratings.trials[0].trial: Input should be a valid string" in message
    text = json.dumps(sealed(SALT, payload())).replace('"rating": 4', '"rating": 4' + "0" * 5000, 1)
    message = refused(test_dir, write_raw(test_dir, text))
    assert "digits" in message and "0" * 100 not in message


def test_wrongly_typed_and_off_scale_answers_are_all_listed_in_one_pass(test_dir):
    data = payload(rater_id="bad id!")
    data["trials"][0]["rating"] = 4.5                            # wrongly typed
    data["trials"][1].update(rating=9, shown_ms="soon")          # off the scale, and a wrongly typed time
    data["trials"][2].update(clips=["c0"], position=7)           # another trial's clip, listed elsewhere
    _, found = check_sheet(write_sealed(test_dir, data), load_key(test_dir))
    assert found == ["ratings.trials[0].rating: Input should be a valid integer",
                     "ratings.trials[1].shown_ms: Input should be a valid integer",
                     "rater id 'bad id!' is not 1-64 letters, digits, '.', '_', '-'",
                     "trial t1: rating 9 is not one of [1, 2, 3, 4, 5]",
                     "trial t2: clips ['c0'] are not the trial's clips",
                     "trial 't2': position 7, listed at 2"], found


def test_a_nested_list_of_depth_100(test_dir):
    data = payload(user_agent=json.loads("[" * 100 + "]" * 100))
    message = refused(test_dir, write_raw(test_dir, json.dumps(sealed(SALT, data))))
    assert "nested too deeply" in message


def test_many_problems_are_listed_but_bounded(test_dir):
    data = payload()
    data["trials"] = [{"trial": k} for k in range(500)]
    message = refused(test_dir, write_sealed(test_dir, data))
    assert "ratings.trials[0].trial" in message and "more" in message


def _load_in_thread(test_dir: Path, path: Path, timeout: float = 10.0):
    outcome: list = []

    def target():
        try:
            outcome.append(load_sheets(load_key(test_dir), [path]))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcome.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the reader blocked"
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_returns_promptly(test_dir):
    fifo = test_dir / "ratings" / "pipe.json"
    os.mkfifo(fifo)
    error = _load_in_thread(test_dir, fifo)
    assert isinstance(error, RatingsError) and "not a regular file" in str(error) and "FIFO" in str(error)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_dev_zero_symlink(test_dir):
    link = test_dir / "ratings" / "zero.json"
    link.symlink_to("/dev/zero")
    error = _load_in_thread(test_dir, link)
    assert isinstance(error, RatingsError) and "not a regular file" in str(error)


def test_a_50_mb_file_is_refused_unread(test_dir, monkeypatch):
    import clonebench.listening.ratings as ratings

    monkeypatch.setattr(ratings, "MAX_BYTES", 40 * 1024 * 1024)
    path = test_dir / "ratings" / "big.json"
    with path.open("wb") as out:
        out.truncate(50 * 1024 * 1024)  # sparse: 50 MB of NULs
    assert "too large" in refused(test_dir, path)


def test_non_utf8_bytes(test_dir):
    message = refused(test_dir, write_raw(test_dir, b'{"ratings": "\xff\xfe\x80"}'))
    assert "not UTF-8" in message


def test_a_key_with_a_wrong_type_is_refused(test_dir):
    key = json.loads((test_dir / KEY).read_text())
    key["trials"][0]["clips"] = "c0"
    (test_dir / KEY).write_text(json.dumps(key))
    with pytest.raises(RatingsError, match=r"trials\[0\]\.clips: Input should be a valid list"):
        load_key(test_dir)


# -- properties --------------------------------------------------------------------------------------------------

def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_are_ratings_or_a_classified_error(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("bytes")
    test_dir = root / "test"
    key = make_key(test_dir)
    path = write_raw(test_dir, data)
    before = _files(root)
    try:
        sheet, found = check_sheet(path, key)
        assert (sheet is None) == bool(found)
        load_sheets(key, [path])
    except ClonebenchError:
        pass
    assert _files(root) == before


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=20),
                    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                                       max_size=4),
                    max_leaves=20)
PAYLOAD_FIELDS = ["schema", "test_id", "kind", "rater_id", "user_agent", "trials"]
RECORD_FIELDS = ["trial", "position", "reference", "clips", "shown_ms", "answered_ms", "rating"]


@given(where=st.sampled_from(["envelope", "integrity"] + PAYLOAD_FIELDS + RECORD_FIELDS), value=JSON,
       trial=st.integers(0, 2), reseal=st.booleans())
def test_wrong_types_in_the_right_shape_are_ratings_or_a_classified_error(tmp_path_factory, where, value, trial,
                                                                            reseal):
    root = tmp_path_factory.mktemp("shape")
    test_dir = root / "test"
    key = make_key(test_dir)
    data = payload()
    if where in RECORD_FIELDS:
        data["trials"][trial][where] = value
    elif where in PAYLOAD_FIELDS:
        data[where] = value
    document = sealed(SALT, data) if reseal else {"ratings": data, "integrity": {"algorithm": "sha256",
                                                                                  "digest": "0" * 64}}
    if where == "envelope":
        document = {"ratings": value, "integrity": document["integrity"]}
    elif where == "integrity":
        document["integrity"] = value
    try:
        text = json.dumps(document)
    except (ValueError, OverflowError):
        return
    path = write_raw(test_dir, text)
    before = _files(root)
    try:
        sheets = load_sheets(key, [path])
        assert sheets[0].rater
    except ClonebenchError as exc:
        assert "Traceback" not in str(exc) and len(str(exc)) < 4000
    assert _files(root) == before


# -- the command line -----------------------------------------------------------------------------------------------

def test_the_command_line_refuses_a_bad_file_with_status_2_and_no_traceback(test_dir):
    bad = write_sealed(test_dir, payload(rater_id=[1, 2, 3]))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())",
                           "listening-results", str(test_dir), str(bad)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "ratings.rater_id: Input should be a valid string" in done.stderr
    assert not (test_dir / "results.json").exists()
