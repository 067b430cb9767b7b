from pathlib import Path

from appliance.ingest.chunker import Chunker, sentence_spans
from appliance.ingest.parsers import markdown
from appliance.records import DocumentMetadata

META = DocumentMetadata(doc_id="doc", title="Doc", sensitivity="internal")


def chunk_markdown(source: str, max_chars: int = 1000):
    parsed = markdown.parse(Path("doc.md"), source.encode())
    return parsed, Chunker(max_chars).chunk(parsed, META, "sha")


def test_every_chunk_is_an_exact_span_of_the_normalised_text() -> None:
    parsed, chunks = chunk_markdown(
        "# A\n\nOne.\n\n## B\n\n- x\n- y\n\n| h1 | h2 |\n|---|---|\n| 1 | 2 |\n"
    )
    assert chunks
    for chunk in chunks:
        assert parsed.text[chunk.start : chunk.end] == chunk.text


def test_headings_close_chunks_and_build_the_heading_path() -> None:
    _, chunks = chunk_markdown(
        "# Guide\n\nIntro.\n\n## Dosing\n\n### Adults\n\nGive 1 g.\n\n## Monitoring\n\nDaily."
    )
    paths = [c.heading_path for c in chunks]
    assert paths == [("Guide",), ("Guide", "Dosing", "Adults"), ("Guide", "Monitoring")]


def test_numbered_clauses_start_their_own_chunks() -> None:
    _, chunks = chunk_markdown("# P\n\n14.1 First clause.\n\n14.2 Second clause.\n\n(a) its item.")
    texts = [c.text for c in chunks]
    assert texts == ["14.1 First clause.", "14.2 Second clause.\n\n(a) its item."]


def test_long_paragraph_is_split_at_sentence_boundaries() -> None:
    sentence = "The patient receives a dose of 2.5 mg, e.g. orally, every day. "
    parsed, chunks = chunk_markdown("# L\n\n" + sentence * 40, max_chars=300)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert chunk.text.endswith("every day.")
        assert parsed.text[chunk.start : chunk.end] == chunk.text


def test_long_table_is_split_by_rows_and_repeats_its_header() -> None:
    rows = "\n".join(f"| drug {i} | {i} mg every 8 hours |" for i in range(60))
    _, chunks = chunk_markdown(f"# T\n\n| Drug | Dose |\n|---|---|\n{rows}\n", max_chars=400)
    assert len(chunks) > 2
    assert chunks[0].text.startswith("| Drug | Dose |") and chunks[0].context == ""
    for chunk in chunks[1:]:
        assert chunk.context == "| Drug | Dose |\n|---|---|"
        assert chunk.text.startswith("| drug ")
        assert chunk.index_text.startswith("| Drug | Dose |")
    assert sum(c.text.count("| drug ") for c in chunks) == 60


def test_chunk_ids_are_stable_and_change_with_content() -> None:
    _, first = chunk_markdown("# A\n\nOne.\n\n# B\n\nTwo.")
    _, again = chunk_markdown("# A\n\nOne.\n\n# B\n\nTwo.")
    _, edited = chunk_markdown("# A\n\nOne.\n\n# B\n\nTwo, edited.")
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    assert first[0].chunk_id == edited[0].chunk_id
    assert first[1].chunk_id != edited[1].chunk_id
    assert first[0].chunk_id.startswith("doc@1#")


def test_sentence_splitter_skips_abbreviations_and_decimals() -> None:
    text = "Give 2.5 mg, e.g. with food. Dr. Smith agrees. Stop."
    spans = [text[s:e] for s, e in sentence_spans(text, 0, len(text))]
    assert spans == ["Give 2.5 mg, e.g. with food.", "Dr. Smith agrees.", "Stop."]
