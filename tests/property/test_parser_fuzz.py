"""Every parser, and the metadata beside it, fuzzed through the real ingestor: damaged
copies of the sample documents (bytes flipped, cut, repeated, spliced), random bytes,
random front matter and sidecars, and size bombs among the seeds. Each file is either
ingested whole or refused with an ingestion error; nothing crashes, nothing runs past
the reading limit, and a refused file leaves nothing in any store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from appliance.engines import Appliance
from appliance.ingest.metadata import SIDECAR_SUFFIX
from appliance.settings import Limits
from tests.bombs import docx_bomb, html_bomb, markdown_bomb
from tests.conftest import SAMPLE_CORPUS, SLOW, make_settings

SEEDS = {
    ".md": SAMPLE_CORPUS / "insulin-infusion-protocol.md",
    ".txt": SAMPLE_CORPUS / "chemotherapy-extravasation.txt",
    ".html": SAMPLE_CORPUS / "visiting-hours.html",
    ".pdf": SAMPLE_CORPUS / "antimicrobial-formulary.pdf",
    ".docx": SAMPLE_CORPUS / "delirium-screening.docx",
}
LIMITS = Limits(max_blocks=5_000, max_seconds=20.0, max_unpacked_bytes=8 * 1024 * 1024)
EXAMPLES = 300 if SLOW else 12


@pytest.fixture(scope="module")
def appliance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Appliance]:
    root = tmp_path_factory.mktemp("parser-fuzz")
    with Appliance(make_settings(root / "data", limits=LIMITS)) as opened:
        yield opened


@st.composite
def damaged(draw: st.DrawFn, raw: bytes) -> bytes:
    """A copy of ``raw`` with a few edits of the kinds real damage makes."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "cut", "repeat", "insert", "splice"]))
        if kind == "flip":
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[at:]
        elif kind == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 4096))] * draw(st.integers(2, 50))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        else:
            other = draw(st.sampled_from(sorted(SEEDS.values()))).read_bytes()
            data[at:] = other[draw(st.integers(0, len(other) - 1)) :]
    return bytes(data)


def files() -> st.SearchStrategy[tuple[str, bytes]]:
    return st.sampled_from(sorted(SEEDS)).flatmap(
        lambda suffix: st.tuples(
            st.just(suffix),
            st.one_of(damaged(SEEDS[suffix].read_bytes()), st.binary(max_size=2048)),
        )
    )


_yaml_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200
) | st.sampled_from(
    [
        "doc_id: [unclosed",
        "!!python/object/apply:os.system ['true']",
        "doc_id: ../../etc/passwd",
        "effective_from: 99999-99-99",
        "sensitivity: top-secret",
        "departments: " + "[" * 500,
        "a: &a [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
    ]
)


def _ingest_one(
    appliance: Appliance, folder: Path, name: str, raw: bytes, sidecar: str | None
) -> None:
    for old in folder.glob("*"):
        old.unlink()
    path = folder / name
    path.write_bytes(raw)
    if sidecar is not None:
        (folder / (name + SIDECAR_SUFFIX)).write_text(sidecar, "utf-8")
    lexical_before, vectors_before = appliance.lexical.count(), appliance.vectors.count()
    started = time.monotonic()
    report = appliance.ingestor.ingest([path])  # anything but an ingestion outcome is a crash
    elapsed = time.monotonic() - started
    [outcome] = report.outcomes
    assert outcome.status in ("added", "updated", "unchanged", "failed"), outcome
    assert appliance.catalog.pending() == []
    if outcome.status == "failed":
        assert outcome.error
        assert appliance.lexical.count() == lexical_before  # nothing of it in any store
        assert appliance.vectors.count() == vectors_before
    assert elapsed < LIMITS.max_seconds + 60  # reading is bounded (embedding what was read adds)


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=not SLOW, database=None,
    suppress_health_check=list(HealthCheck),
)  # fmt: skip
@given(file=files(), sidecar=st.none() | _yaml_text)
@example(file=(".docx", docx_bomb(200_000)), sidecar=None)
@example(file=(".html", html_bomb(50_000)), sidecar=None)
@example(file=(".md", markdown_bomb(20_000)), sidecar=None)
@example(file=(".md", b"---\n" + b"a: " + b"[" * 10_000 + b"\n---\n# T\n\nText.\n"), sidecar=None)
def test_any_file_is_ingested_whole_or_refused_cleanly(
    appliance: Appliance, tmp_path_factory: pytest.TempPathFactory, file: tuple[str, bytes],
    sidecar: str | None,
) -> None:  # fmt: skip
    suffix, raw = file
    folder = tmp_path_factory.mktemp("one")
    _ingest_one(appliance, folder, f"fuzzed{suffix}", raw, sidecar)
